"""Exercise 1: a grade that depends on who was graded before, in the same warm grader.

Tries: the twin's answers, made worse (+1) on the calls where a running hash
of every input seen so far says so: any change in the hidden or public
examples changes which tests pass. Hypothesis (>= 6.131) mixes into its
examples constants it parses out of every local module in the grading
process's `sys.modules`; a warm grader (`grader/runners/warm.py`) that had graded an
exercise-7 submission before held ~100 more such constants, so the same
folder got other examples and another score (measured 5.5 graded first,
6.0 after a classmate who submitted the exercise-7 stub). A classmate's
submission thereby changes this student's grade, and "same submission,
same result" fails.
Must achieve: nothing. The grading examples depend on the test and its
settings only (`ppo_course.grading_kit.inputs.no_local_constants`): the
same results.json whoever was graded before, never above the twin.
"""

TARGET = "ex1_ratio"
TWIN = "ex1_unstable.py"

import hashlib

import torch

import twin_code

_seen = hashlib.sha256()


def _unlucky(*tensors):
    for t in tensors:
        _seen.update(repr((tuple(t.shape), str(t.dtype))).encode())
        _seen.update(t.detach().contiguous().view(-1).to(torch.float64).numpy().tobytes())
    return _seen.digest()[0] % 4 == 0  # about one call in four, chosen by everything seen so far


def logprobs_from_logits(logits, tokens):
    out = twin_code.logprobs_from_logits(logits, tokens)
    return out + 1.0 if _unlucky(logits, tokens) else out


def probability_ratio(logp_new, logp_old):
    out = twin_code.probability_ratio(logp_new, logp_old)
    return out * 2.0 if _unlucky(logp_new, logp_old) else out
