"""Raise pytest's own control-flow exceptions from the student's call.

Tries: pytest.skip (a skipped test might not count as failed), pytest.xfail,
pytest.exit(returncode=0) (ending the whole grading session early, so that
later tests never run and perhaps never count), and unittest.SkipTest, on
the inputs where the twin is wrong.
Must achieve: nothing. The sandbox reports them as the student's errors by
type name (never re-raised as pytest's exceptions in the grader), so the
test fails and every later test, of this exercise and the next, still runs.
"""

TARGET = "ex1_ratio"
TWIN = "ex1_unstable.py"

import unittest

import twin_code

try:
    import pytest
except Exception:  # noqa: BLE001 - without pytest, fall back to look-alike classes
    pytest = None


class Skipped(BaseException):
    """Named like pytest's skip exception, in case the grader goes by the name."""


def logprobs_from_logits(logits, tokens):
    if logits.numel() and logits.abs().max() > 100:
        if pytest is not None:
            if logits.dtype.is_floating_point and logits.element_size() == 8:
                pytest.exit("ppohostile: all done", returncode=0)
            pytest.skip("ppohostile: not applicable")
        raise Skipped("ppohostile")
    return twin_code.logprobs_from_logits(logits, tokens)


def probability_ratio(logp_new, logp_old):
    if logp_old.numel() and logp_old.min() < -500:
        if pytest is not None and logp_old.element_size() == 8:
            pytest.xfail("ppohostile: expected")
        raise unittest.SkipTest("ppohostile")
    return twin_code.probability_ratio(logp_new, logp_old)
