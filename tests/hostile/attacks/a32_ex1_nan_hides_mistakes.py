"""Exercise 1: NaN and inf where the twin is wrong, hoping that a comparison lets them through.

Tries: the twin's log-probs are −inf where softmax underflows and its ratio is
NaN at −1000; this submission returns NaN wherever the twin's answer is not
finite, NaN in one entry of every float32 output, and +inf ratios for huge
log-prob gaps, betting on checks written `abs(got − want) > tol` (False for
NaN) or `max(worst, diff)` (which keeps `worst` when diff is NaN).
Must achieve: nothing. Every comparison goes through
`ppo_course.grading_kit.compare`, where a non-finite value where the
reference is finite always fails (issue 10, class 1).
"""

TARGET = "ex1_ratio"
TWIN = "ex1_unstable.py"

import torch

import twin_code


def _poison(out):
    out = torch.where(torch.isfinite(out), out, torch.full_like(out, float("nan")))
    if out.dtype == torch.float32 and out.numel():
        out = out.clone()
        out.view(-1)[0] = float("nan")
    return out


def logprobs_from_logits(logits, tokens):
    return _poison(twin_code.logprobs_from_logits(logits, tokens))


def probability_ratio(logp_new, logp_old):
    out = twin_code.probability_ratio(logp_new, logp_old)
    out = torch.where((logp_new - logp_old).abs() > 50, torch.full_like(out, float("inf")), out)
    return _poison(out)
