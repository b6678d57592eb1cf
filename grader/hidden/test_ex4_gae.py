"""Hidden graders, exercise 4 (stop 5): GAE and whitening (Book §5.5; GAE, Schulman et al. 2016)."""

from __future__ import annotations

import torch
from hypothesis import given
from hypothesis import strategies as st

from grader.hidden.draws import draw_float, draw_generator, draw_int, draw_seed
from grader.hidden.support import (compare, expect_inputs_untouched, hidden_batches, part,
                                   tol)
from ppo_course.grading_kit.feedback import Mismatch, expect_raises
from ppo_course.grading_kit.inputs import Batch, grading_settings, prefix_mask

EXERCISE = "ex4_gae"
KIND = "hidden"


def _gae_case(batch: Batch):
    """(rewards, values, mask): N(0,1) rewards and values with junk (|x| ≤ 20) at padding."""
    return batch.data(1), batch.data(2), batch.mask()


def _compare_gae(student, reference, args, kwargs, dtype, what):
    """Compare advantages, then returns (each named separately in the feedback)."""
    mask = args[2]
    # Advantages are sums of ≤ 7 TD errors of size ≤ ~4: scale 20.
    t = tol(dtype, 20.0)
    got = compare(student, reference, "compute_gae", args, kwargs, rtol=t, atol=t, mask=mask,
                  pick=part(0, what), what=f"{what}: advantages")
    compare(student, reference, "compute_gae", args, kwargs, rtol=t, atol=t, mask=mask, got=got,
            pick=part(1, what), what=f"{what}: returns")


@grading_settings(max_examples=30, shrink=False)
@given(batch=hidden_batches(), gamma=st.sampled_from([1.0, 0.9]), lam=st.sampled_from([0.95, 0.5]))
def test_gae_matches_reference(student, reference, batch, gamma, lam):
    """Advantages and returns (= A + V) on real tokens, keyword gamma and lam, junk in padding."""
    _compare_gae(student, reference, _gae_case(batch), {"gamma": gamma, "lam": lam}, batch.dtype,
                 f"compute_gae(gamma={gamma}, lam={lam})")


@grading_settings(max_examples=10, shrink=False)
@given(batch=hidden_batches())
def test_gae_defaults_and_positional(student, reference, batch):
    """Defaults (γ = 1, λ = 0.95) and positional (γ = 0.8, λ = 0.7)."""
    args = _gae_case(batch)
    _compare_gae(student, reference, args, {}, batch.dtype, "compute_gae(defaults)")
    _compare_gae(student, reference, (*args, 0.8, 0.7), {}, batch.dtype, "compute_gae(..., 0.8, 0.7)")


def test_gae_no_bootstrap_past_last_token(student, reference):
    """A full (truncated) row, one-token rows and large junk: V and A past the end are 0."""
    for dtype in (torch.float32, torch.float64):
        mask = prefix_mask([5, 1, 3, 1], 5, "int")
        g = draw_generator("ex4.no_bootstrap")
        rewards = torch.randn(4, 5, generator=g, dtype=torch.float64).to(dtype)
        values = torch.randn(4, 5, generator=g, dtype=torch.float64).to(dtype)
        junk = torch.tensor(draw_float("ex4.no_bootstrap.junk", 15.0, 20.0, 40), dtype=dtype)
        rewards = torch.where(mask.bool(), rewards, junk)
        values = torch.where(mask.bool(), values, -junk)
        _compare_gae(student, reference, (rewards, values, mask), {"gamma": 0.95, "lam": 0.9}, dtype,
                     f"compute_gae(truncated and one-token rows, {dtype})")


def test_gae_carries_no_gradient(student, reference):
    """No gradient flows into advantages or returns (they are constants for the losses): with rewards and
    values derived from one leaf θ and each output multiplied by a path of θ (`grader.hidden.tied`),
    d/dθ Σ out·(Pθ + w) is Σ Pᵀ·out, the reference's values; an output that carries the inputs' graph adds
    a term."""
    from grader.hidden.tied import expect_tied_grad, tie_plan

    g = draw_generator("ex4.gae_no_gradient")
    rewards = torch.randn(2, 4, generator=g, dtype=torch.float64)
    values = torch.randn(2, 4, generator=g, dtype=torch.float64)
    mask = prefix_mask([4, 2], 4)
    tie = tie_plan("ex4.gae_no_gradient.tie", {"rewards": rewards, "values": values},
                   [(0, (2, 4), True), (1, (2, 4), True)], head_mask=mask)
    # The values first, as test_gae_matches_reference compares them: a value mistake is named as such here
    # too, not through the tied gradient (here Σ Pᵀ·out: the values) it also changes.
    _compare_gae(student, reference, (rewards, values, mask), {}, torch.float64, "compute_gae(...)")
    # float64 recursions of 4 steps, sums of 8 terms: exact to ~1e-15.
    expect_tied_grad(student, reference, "compute_gae", (rewards, values, mask), {}, tie,
                     constants=("rewards", "values"), diagnosis="gae_not_detached", what="compute_gae(...)")


def test_gae_whiten_return_types(student, reference):
    """The Returns clauses: compute_gae gives a tuple (advantages, returns) of two [B, T] tensors in the dtype
    of ``rewards`` (a float64 mask beside float32 data changes nothing), with returns = advantages + values
    on real tokens; whiten gives a tensor of x's shape and dtype (never the mask's)."""
    g = draw_generator("ex4.return_types")
    rewards = torch.randn(3, 5, generator=g, dtype=torch.float64).to(torch.float32)
    values = torch.randn(3, 5, generator=g, dtype=torch.float64).to(torch.float32)
    mask = prefix_mask([5, 2, 4], 5, "float").double()  # float64: the data's dtype must win
    what = "compute_gae(float32 rewards and values, float64 mask)"
    got = student.compute_gae(rewards, values, mask)
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise Mismatch("wrong_type", f"expected a tuple (advantages, returns), got {type(got).__name__}", what)
    for index, name in ((0, "advantages"), (1, "returns")):
        compare(student, reference, "compute_gae", (rewards, values, mask), {}, rtol=tol(torch.float32, 20.0),
                atol=tol(torch.float32, 20.0), mask=mask, pick=part(index, what), got=got, what=f"{what}: {name}")
    advantages, returns = got
    real = mask.bool()
    if not torch.allclose((returns - advantages)[real].double(), values[real].double(), rtol=1e-5, atol=1e-5):
        raise Mismatch("returns_not_a_plus_v", "returns - advantages differs from values on real tokens", what)
    compare(student, reference, "whiten", (rewards, mask), rtol=tol(torch.float32, 10.0),
            atol=tol(torch.float32, 10.0), mask=mask, what="whiten(float32 x, float64 mask)")


@grading_settings(max_examples=30, shrink=False)
@given(batch=hidden_batches(), shift_mean=st.booleans(), scale=st.sampled_from([1.0, 5.0]))
def test_whiten_matches_reference(student, reference, batch, shift_mean, scale):
    """(x − masked mean)/sqrt(unbiased masked var + 1e-8), keyword shift_mean; junk in padding."""
    if sum(batch.lengths) < 2:
        return  # whiten needs 2 real tokens (hidden_batches always has ≥ 2 rows)
    x = batch.data(3, scale) + 2.0
    mask = batch.mask()
    # Whitened values are ≤ ~3 (+ mean ≤ ~7 when kept); statistics in float32 add ~1e-6 relative.
    t = tol(batch.dtype, 10.0)
    compare(student, reference, "whiten", (x, mask), {"shift_mean": shift_mean}, rtol=t, atol=t, mask=mask)


def test_whiten_default_and_positional(student, reference):
    """shift_mean defaults to True; shift_mean=False positionally keeps the mean."""
    g = draw_generator("ex4.whiten_default")
    x = torch.randn(3, 4, generator=g, dtype=torch.float64) * 2 + 1
    mask = prefix_mask([4, 3, 1], 4, "float")
    compare(student, reference, "whiten", (x, mask), rtol=1e-9, atol=1e-9, mask=mask, what="whiten(x, mask)")
    compare(student, reference, "whiten", (x, mask, False), rtol=1e-9, atol=1e-9, mask=mask,
            what="whiten(x, mask, False)")


def test_whiten_raises_for_one_element(student, error_name):
    """A mask selecting fewer than 2 elements raises ValueError (the unbiased variance is undefined)."""
    x = torch.randn(1, 3, generator=draw_generator("ex4.whiten_one_element")) * 5
    mask = torch.arange(3)[None, :] == draw_int("ex4.whiten_one_element.at", 0, 2)
    expect_raises(lambda: student.whiten(x, mask), ("ValueError",), "whiten_no_error_for_one_element",
                  what="whiten(x, mask selecting 1 element)", is_error=error_name)


def test_whiten_constant_input(student, reference):
    """Equal (and nearly equal) real values: the 1e-8 inside the square root keeps the output finite and small."""
    c = draw_float("ex4.whiten_constant.c", -5.0, 5.0, 40)  # exact in binary (a multiple of 1/4)
    junk = torch.randn(2, 4, generator=draw_generator("ex4.whiten_constant.junk"), dtype=torch.float64) * 10
    mask = prefix_mask([3, 2], 4)
    x = torch.where(mask, torch.tensor(c, dtype=torch.float64), junk)
    # (x − μ) = 0 exactly on real tokens, so any finite stabilised result is exactly 0.
    compare(student, reference, "whiten", (x, mask), rtol=0, atol=1e-9, mask=mask,
            what="whiten(constant real values)")
    # Nearly constant (variance 1e-10, far below the 1e-8 inside the root): (x − μ)/sqrt(σ² + 1e-8)
    # ≈ (x − μ)·1e4, not (x − μ)/(σ + 1e-8) ≈ ±1. float64 keeps 1e-9 relative here.
    d = draw_float("ex4.whiten_constant.d", 1e-5, 3e-5, 20)
    near = x + torch.tensor([[d, -d, 0.0, 3.0], [2 * d, -2 * d, 1.0, 0.0]], dtype=torch.float64)
    compare(student, reference, "whiten", (near, mask), rtol=1e-6, atol=1e-9, mask=mask,
            what="whiten(nearly constant real values)")


def test_gae_whiten_inputs_untouched(student, error_name):
    """compute_gae and whiten modify none of their inputs in place."""
    batch = Batch(2, 5, (5, 3), "float", "float64", draw_seed("ex4.inputs_untouched"))
    rewards, values, mask = _gae_case(batch)
    expect_inputs_untouched(student, "compute_gae", (rewards, values, mask), {}, ("rewards", "values"), error_name)
    expect_inputs_untouched(student, "whiten", (rewards, mask), {}, ("x",), error_name)


def test_gae_whiten_reject_malformed_input(student, error_name):
    """(0.25 points, once the values are computed) The docstrings' ValueErrors: compute_gae's three shapes differ or are not 2-D;
    whiten's shapes differ."""
    from grader.hidden.documented_errors import expect_value_errors

    x = torch.randn(2, 3, dtype=torch.float64)
    mask = torch.ones(2, 3, dtype=torch.bool)
    expect_value_errors({"values of another shape": lambda: student.compute_gae(x, x[:, :2], mask),
                         "1-D tensors": lambda: student.compute_gae(x[0], x[0], mask[0])}, error_name, "compute_gae")
    expect_value_errors({"mask of another shape": lambda: student.whiten(x, mask[:, :2])}, error_name, "whiten")
