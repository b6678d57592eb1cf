"""Public tests, exercise 1 (stop 6): log-probs from logits and the ratio (Book eqs. 5.18-5.20)."""

from __future__ import annotations

import math

import torch
from hypothesis import given
from hypothesis import strategies as st

from ppo_course.grading_kit.feedback import Mismatch, expect_close
from ppo_course.grading_kit.inputs import batches, grading_settings, show
from ppo_course.grading_kit.known_mistakes import known_mistakes
from ppo_course.grading_kit.public_probe import Probe

EXERCISE = "ex1_ratio"
KIND = "public"

LN = math.log


def _hand_logprobs():
    return (torch.tensor([[[0.0, LN(3.0)], [5.0, 5.0]]], dtype=torch.float64), torch.tensor([[1, 0]])), {}


def _huge_logprobs():
    return (torch.tensor([[[0.0, 1000.0], [0.0, 1000.0]]], dtype=torch.float32), torch.tensor([[0, 1]])), {}


def _zeros_logprobs(dtype):
    return (torch.zeros(2, 3, 4, dtype=dtype), torch.zeros(2, 3, dtype=torch.long)), {}


def _hand_ratio():
    return (torch.tensor([[LN(0.5), -1000.0, 0.0]], dtype=torch.float64),
            torch.tensor([[LN(0.25), -1000.0, LN(2.0)]], dtype=torch.float64)), {}


def _grad_ratio():
    return (torch.tensor([[LN(0.5), LN(0.3)]], dtype=torch.float64),
            torch.tensor([[LN(0.25), LN(0.6)]], dtype=torch.float64)), {}


# The catalogued mistakes on these fixed inputs (ppo_course/grading_kit/known_mistakes.py): the same
# variants the hidden tests try, so that a mistake gets one name everywhere.
MISTAKE_CASES = {
    "ex1.logprobs.hand": ("logprobs_from_logits", _hand_logprobs, "output"),
    "ex1.logprobs.huge": ("logprobs_from_logits", _huge_logprobs, "output"),
    **{f"ex1.logprobs.zeros.{d}": ("logprobs_from_logits", lambda d=d: _zeros_logprobs(getattr(torch, d)), "output")
       for d in ("float32", "float64")},
    "ex1.ratio.hand": ("probability_ratio", _hand_ratio, "output"),
    "ex1.ratio.grad": ("probability_ratio", _grad_ratio, "grad:logp_new"),
}


def test_logprobs_hand_case(student):
    """log-softmax gathered at the tokens, on a vocabulary of 2 worked by hand."""
    # Row 0: logits (0, ln 3) -> p = (1/4, 3/4); token 1 -> ln(3/4).
    #        logits (5, 5)    -> p = (1/2, 1/2); token 0 -> ln(1/2).
    (logits, tokens), _ = _hand_logprobs()
    want = torch.tensor([[LN(0.75), LN(0.5)]], dtype=torch.float64)
    # A shifted gather (logits of step t-1 for token t, first step repeated) gives
    # (ln 3/4, ln 1/4): token 0 read from the logits (0, ln 3).
    shifted = torch.tensor([[LN(0.75), LN(0.25)]], dtype=torch.float64)
    got = student.logprobs_from_logits(logits, tokens)
    # float64 arithmetic on 2 numbers: 1e-12 is far above rounding, far below any mistake.
    expect_close(got, want, rtol=1e-12, atol=1e-12, what="logprobs_from_logits(logits, tokens)",
                 probe=Probe(student, "ex1.logprobs.hand", MISTAKE_CASES),
                 candidates=[("logprobs_misaligned", shifted), *known_mistakes("ex1.logprobs.hand")],
                 inputs="logits=[[[0, ln 3], [5, 5]]], tokens=[[1, 0]]")


def test_logprobs_stable_for_huge_logits(student):
    """Logits of size 1e3 give finite log-probs (no log of an underflowed softmax)."""
    # logits (0, 1000): log p(0) = -1000 - log(1 + e^-1000) = -1000 (to double precision),
    # log p(1) = -log(1 + e^-1000) = 0. log(softmax) would give log(0) = -inf for token 0.
    (logits, tokens), _ = _huge_logprobs()
    want = torch.tensor([[-1000.0, 0.0]], dtype=torch.float32)
    got = student.logprobs_from_logits(logits, tokens)
    # float32 at magnitude 1000 has a spacing of 6e-5; 1e-3 absolute leaves room for the
    # log-sum-exp's rounding.
    expect_close(got, want, rtol=0, atol=1e-3, what="logprobs_from_logits(1e3-sized logits)",
                 probe=Probe(student, "ex1.logprobs.huge", MISTAKE_CASES),
                 candidates=[("log_of_softmax", torch.tensor([[-math.inf, 0.0]])),
                             *known_mistakes("ex1.logprobs.huge")],
                 inputs="logits=[[[0, 1000], [0, 1000]]] float32, tokens=[[0, 1]]")


def test_logprobs_keeps_dtype(student):
    """float32 logits give float32 log-probs, float64 give float64."""
    for dtype in (torch.float32, torch.float64):
        (logits, tokens), _ = _zeros_logprobs(dtype)
        got = student.logprobs_from_logits(logits, tokens)
        # uniform over 4 tokens: log(1/4) everywhere (normalised over the 3 steps instead: log(1/3)).
        want = torch.full((2, 3), LN(0.25), dtype=dtype)
        expect_close(got, want, rtol=1e-6, atol=1e-6, what=f"logprobs_from_logits({dtype} zeros)",
                     probe=Probe(student, f"ex1.logprobs.zeros.{str(dtype).removeprefix('torch.')}", MISTAKE_CASES),
                     candidates=known_mistakes(f"ex1.logprobs.zeros.{str(dtype).removeprefix('torch.')}"))


def test_ratio_hand_cases(student):
    """r = exp(logp_new - logp_old), finite when both log-probs are -1000 (Book eq. 5.20)."""
    # (ln 1/2, ln 1/4) -> r = 0.5/0.25 = 2;  (-1000, -1000) -> r = exp(0) = 1;
    # (0, ln 2) -> r = 1/2.
    (logp_new, logp_old), _ = _hand_ratio()
    want = torch.tensor([[2.0, 1.0, 0.5]], dtype=torch.float64)
    got = student.probability_ratio(logp_new, logp_old)
    expect_close(got, want, rtol=1e-12, atol=1e-12, what="probability_ratio(logp_new, logp_old)",
                 probe=Probe(student, "ex1.ratio.hand", MISTAKE_CASES),
                 candidates=[("ratio_in_probability_space", torch.tensor([[2.0, math.nan, 0.5]], dtype=torch.float64)),
                             ("ratio_inverted", torch.tensor([[0.5, 1.0, 2.0]], dtype=torch.float64)),
                             *known_mistakes("ex1.ratio.hand")],
                 inputs="logp_new=[[ln 1/2, -1000, 0]], logp_old=[[ln 1/4, -1000, ln 2]]")


def test_ratio_gradient_flows(student):
    """d r / d logp_new = r: the ratio must not be detached (Book eq. 5.9 needs it)."""
    (logp_new, logp_old), _ = _grad_ratio()
    # Backpropagate sum(r): d exp(x - c)/dx = exp(x - c) = r = (2, 0.5). The inverted ratio exp(c - x) = (0.5, 2)
    # has the derivative −exp(c − x) = (−0.5, −2).
    out, grads = student.call_with_grad("probability_ratio", (logp_new, logp_old), {}, wrt=("logp_new",),
                                        grad_output=torch.ones(1, 2, dtype=torch.float64))
    if grads["logp_new"] is None:
        raise Mismatch("ratio_detached", "no gradient reached logp_new", "grad of probability_ratio")
    expect_close(grads["logp_new"], torch.tensor([[2.0, 0.5]], dtype=torch.float64), rtol=1e-12, atol=1e-12,
                 what="d probability_ratio / d logp_new",
                 candidates=[("ratio_detached", torch.zeros(1, 2, dtype=torch.float64)),
                             ("ratio_inverted", torch.tensor([[-0.5, -2.0]], dtype=torch.float64)),
                             *known_mistakes("ex1.ratio.grad")])


@grading_settings(max_examples=20, shrink=True)
@given(batch=batches(), scale=st.sampled_from([1.0, 10.0]))
def test_ratio_properties(student, batch, scale):
    """r(a, a) = 1 and r(a, b) * r(b, a) = 1 on generated inputs (float32 and float64)."""
    a = batch.data(1, scale)
    b = batch.data(2, scale)
    ones = torch.ones_like(a)
    # exp(0) is exactly 1 in any dtype.
    expect_close(student.probability_ratio(a, a), ones, rtol=0, atol=1e-6, what="probability_ratio(a, a)",
                 inputs=show(a=a))
    prod = student.probability_ratio(a, b) * student.probability_ratio(b, a)
    # exp(d) * exp(-d) = 1 up to a few roundings: ~1e-7 relative in float32 for |d| < 88
    # (scale 10 keeps |d| far from float32's exp overflow at 88).
    expect_close(prod, ones, rtol=0, atol=1e-5,
                 what="probability_ratio(a, b) * probability_ratio(b, a)", inputs=show(a=a, b=b))
