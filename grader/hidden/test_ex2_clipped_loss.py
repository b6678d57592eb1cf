"""Hidden graders, exercise 2 (stop 2): the clipped surrogate loss (Book eqs. 5.1, 5.9)."""

from __future__ import annotations

import torch
from hypothesis import given
from hypothesis import strategies as st

from grader.hidden.draws import draw_generator, draw_int, draw_seed
from grader.hidden.support import hidden_batches, away_from_kinks, compare, compare_grads, expect_inputs_untouched, tol
from ppo_course.grading_kit.inputs import grading_settings, randn, with_junk

EXERCISE = "ex2_clipped_loss"
KIND = "hidden"
NAME = "clipped_surrogate_loss"


def _case(batch, clip_eps: float, spread: float = 0.3):
    """(logp_new, logp_old, advantages, mask): log-ratios ~ N(0, spread²), Â ~ N(0, 1), junk at padding."""
    mask = batch.mask()
    g = batch.gen(21)
    logp_old = -randn((batch.B, batch.T), g, torch.float64).abs() - 0.1
    logp_new = logp_old + randn((batch.B, batch.T), g, torch.float64, spread)
    advantages = randn((batch.B, batch.T), g, torch.float64)
    logp_new, advantages = away_from_kinks(logp_new, logp_old, advantages, clip_eps)
    cast = [with_junk(x.to(batch.dtype), mask, g) for x in (logp_new, logp_old, advantages)]
    return (*cast, mask)


@grading_settings(max_examples=30, shrink=False)
@given(batch=hidden_batches(), clip_eps=st.sampled_from([0.1, 0.2, 0.35]), spread=st.sampled_from([0.1, 0.5]))
def test_surrogate_matches_reference(student, reference, batch, clip_eps, spread):
    """−masked_mean(min(r·Â, clip(r)·Â)) with a keyword clip_eps, many shapes, masks and both dtypes; beside
    float32 data a float mask is also given as float64, which changes nothing (the output's dtype is the data's)."""
    args = _case(batch, clip_eps, spread)
    # A mean of ≤ 28 terms of size ≤ ~5 (ratios ≤ e^1.5 times |Â| ≤ 3): scale 5.
    t = tol(batch.dtype, 5.0)
    compare(student, reference, NAME, args, {"clip_eps": clip_eps}, rtol=t, atol=t)
    if batch.dtype_name == "float32" and batch.mask_kind == "float":
        compare(student, reference, NAME, (*args[:3], args[3].double()), {"clip_eps": clip_eps}, rtol=t, atol=t,
                what="clipped_surrogate_loss(float32 data, float64 mask)")


@grading_settings(max_examples=10, shrink=False)
@given(batch=hidden_batches())
def test_surrogate_positional_and_default_eps(student, reference, batch):
    """clip_eps passed positionally (0.3), and left to its default (0.2)."""
    args = _case(batch, 0.3)
    t = tol(batch.dtype, 5.0)
    compare(student, reference, NAME, (*args, 0.3), rtol=t, atol=t, what="clipped_surrogate_loss(..., 0.3)")
    args = _case(batch, 0.2)
    compare(student, reference, NAME, args, rtol=t, atol=t, what="clipped_surrogate_loss(...) with the default clip_eps")


@grading_settings(max_examples=15, shrink=False)
@given(batch=hidden_batches(dtypes=("float64",)), clip_eps=st.sampled_from([0.2, 0.3]))
def test_surrogate_gradient_cases(student, reference, batch, clip_eps):
    """d loss / d logp_new obeys the four cases of Book eq. 5.9 (flows inside the clip, exactly 0 beyond)."""
    args = _case(batch, clip_eps, spread=0.4)  # wide enough that all four cases occur
    # float64: gradients are −Â·r/N, exact to ~1e-16 relative.
    compare_grads(student, reference, NAME, args, {"clip_eps": clip_eps}, ("logp_new",), rtol=1e-9, atol=1e-9,
                  detached_diagnosis="ratio_detached")


def test_surrogate_no_gradient_into_constants(student, reference):
    """No gradient flows into the advantages or logp_old (they are constants of the loss): with logp_new,
    logp_old and the advantages all derived from one leaf θ (`grader.hidden.tied`), d loss / d θ is the
    reference's, where only logp_new's path carries gradient."""
    from grader.hidden.tied import expect_tied_grad, tie_plan
    from ppo_course.grading_kit.inputs import Batch

    batch = Batch(3, 5, (5, 2, 3), "float", "float64", draw_seed("ex2.no_gradient_into_constants"))
    args = _case(batch, 0.2)
    tie = tie_plan("ex2.no_gradient_into_constants.tie",
                   {"logp_new": args[0], "logp_old": args[1], "advantages": args[2]}, [(None, (1,), False)])
    # The loss's value first, as test_surrogate_matches_reference compares it: a value mistake is named as
    # such here too, not through the tied gradient it also changes.
    compare(student, reference, NAME, args, rtol=tol(batch.dtype, 5.0), atol=tol(batch.dtype, 5.0))
    # float64 sums of 15 terms −Â·r/N mapped through M (entries ~0.3): exact to ~1e-15.
    expect_tied_grad(student, reference, NAME, args, {}, tie, constants=("advantages", "logp_old"),
                     diagnosis="gradient_into_constants", what="clipped_surrogate_loss(...)")


def test_surrogate_finite_at_minus_1000(student, reference):
    """Log-probs around −1000 give a finite loss (the ratio is taken in log space); log-ratios of ±k (k drawn
    in 21..29, beyond a ±20 clamp) where the unclipped term is the smaller one (r = e^k with Â < 0, r = e^−k
    with Â > 0) give r·Â exactly: eq. 5.1 bounds the gain, never the penalty, so nothing clamps r."""
    g = draw_generator("ex2.finite_at_minus_1000")
    logp_old = torch.full((2, 3), -float(draw_int("ex2.finite_at_minus_1000.base", 990, 1010)), dtype=torch.float32)
    # Log-ratios within ±0.4 (both sides of the clip), advantages of both signs: the hand case's structure.
    logp_new = logp_old + (torch.rand(2, 3, generator=g) * 0.8 - 0.4)
    advantages = torch.randn(2, 3, generator=g) * 1.5
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    # float32: log-ratios are exact to 6e-5 (one ulp at 1000), so ratios to ~1e-4 relative.
    compare(student, reference, NAME, (logp_new, logp_old, advantages, mask), rtol=3e-4, atol=3e-4,
            what="clipped_surrogate_loss at log-probs −1000")
    k = float(draw_int("ex2.far_log_ratio", 21, 29))
    for dtype in (torch.float32, torch.float64):
        logp_old = torch.tensor([[-40.0, -3.0, -2.0]], dtype=dtype)
        logp_new = logp_old + torch.tensor([[k, -k, 0.1]], dtype=dtype)  # r = e^k, e^−k, e^0.1 (inside the clip)
        advantages = torch.tensor([[-1.0, 2.0, 0.5]], dtype=dtype)
        # Integer log-ratios are exact in both dtypes: one exp each, relative 1e-5 (float32) is ample.
        compare(student, reference, NAME, (logp_new, logp_old, advantages, torch.ones(1, 3)), rtol=1e-5,
                atol=1e-12, what=f"clipped_surrogate_loss at |log r| = {k:g} ({dtype})")


def test_surrogate_inputs_untouched(student, error_name):
    """The loss modifies none of its inputs in place."""
    from ppo_course.grading_kit.inputs import Batch

    args = _case(Batch(2, 4, (4, 2), "float", "float64", draw_seed("ex2.inputs_untouched")), 0.2)
    expect_inputs_untouched(student, NAME, args, {}, ("logp_new", "logp_old", "advantages"), error_name)


def test_surrogate_rejects_mismatched_shapes(student, error_name):
    """(0.25 points, once the values are computed) The docstring's ValueError: the four tensors do not share one shape."""
    from grader.hidden.documented_errors import expect_value_errors

    x = torch.randn(2, 3, dtype=torch.float64)
    mask = torch.ones(2, 3, dtype=torch.bool)
    expect_value_errors({"advantages of another shape": lambda: student.clipped_surrogate_loss(x, x, x[:, :2], mask),
                         "mask of another shape": lambda: student.clipped_surrogate_loss(x, x, x, mask[:1])},
                        error_name, "clipped_surrogate_loss")
