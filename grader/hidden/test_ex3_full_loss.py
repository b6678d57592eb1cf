"""Hidden graders, exercise 3 (stop 3): clipped value loss, entropy, the full PPO loss (Book eq. 5.2)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from grader.hidden.draws import draw_generator, draw_int, draw_seed
from grader.hidden.calls import reference_call
from grader.hidden.tied import expect_tied_grad, tie_plan
from grader.hidden.support import (hidden_batches, away_from_kinks, compare, compare_grads, expect_inputs_untouched,
                                   tol)
from ppo_course.grading_kit.compare import close_scalar
from ppo_course.grading_kit.feedback import Mismatch
from ppo_course.grading_kit.inputs import Batch, grading_settings, randn, with_junk

EXERCISE = "ex3_full_loss"
KIND = "hidden"


@pytest.fixture
def student_kg(provider):
    """The student's ex3 with its sibling imports (ex1, ex2) served by the reference: a mistake in
    exercise 2 is graded there, not charged again through ppo_loss."""
    return provider.load(EXERCISE, known_good=True)


def _value_case(batch: Batch, c: float):
    """(values, old_values, returns, mask) with |V − V_old| kept ≥ 1e-3 away from the clip range c."""
    mask = batch.mask()
    g = batch.gen(31)
    old_values = randn((batch.B, batch.T), g, torch.float64)
    delta = randn((batch.B, batch.T), g, torch.float64, 2 * c)
    near = (delta.abs() - c).abs() < 1e-3
    delta = torch.where(near, delta * 1.05, delta)  # off the kink |V − V_old| = c
    values = old_values + delta
    returns = randn((batch.B, batch.T), g, torch.float64)
    cast = [with_junk(x.to(batch.dtype), mask, g) for x in (values, old_values, returns)]
    return (*cast, mask)


def _logits(batch: Batch, vocab: int, scale: float, salt: int = 41) -> torch.Tensor:
    return randn((batch.B, batch.T, vocab), batch.gen(salt), batch.dtype, scale)


def _full_case(batch: Batch, vocab: int = 5, clip_eps: float = 0.2, c: float = 0.2):
    """All eight arguments of ppo_loss, off the kinks of both clips, junk at padding."""
    values, old_values, returns, mask = _value_case(batch, c)
    g = batch.gen(51)
    logp_old = -randn((batch.B, batch.T), g, torch.float64).abs() - 0.1
    logp_new = logp_old + randn((batch.B, batch.T), g, torch.float64, 0.3)
    advantages = randn((batch.B, batch.T), g, torch.float64)
    logp_new, advantages = away_from_kinks(logp_new, logp_old, advantages, clip_eps)
    logp_new, logp_old, advantages = (with_junk(x.to(batch.dtype), mask, g) for x in (logp_new, logp_old, advantages))
    return (logp_new, logp_old, advantages, values, old_values, returns, _logits(batch, vocab, 2.0), mask)


@grading_settings(max_examples=30, shrink=False)
@given(batch=hidden_batches(), c=st.sampled_from([0.1, 0.2, 0.5]))
def test_value_loss_matches_reference(student, reference, batch, c):
    """masked_mean(max((V−R)², (V_old + clip(V−V_old, −c, c) − R)²)), keyword clip_range_value, no ½; beside
    float32 data a float mask is also given as float64, which changes nothing (the output's dtype is the data's)."""
    args = _value_case(batch, c)
    # Squared errors of N(0, ~2) values: terms ≤ ~40, a mean of ≤ 28 of them.
    t = tol(batch.dtype, 40.0)
    compare(student, reference, "clipped_value_loss", args, {"clip_range_value": c}, rtol=t, atol=t)
    if batch.dtype_name == "float32" and batch.mask_kind == "float":
        compare(student, reference, "clipped_value_loss", (*args[:3], args[3].double()), {"clip_range_value": c},
                rtol=t, atol=t, what="clipped_value_loss(float32 data, float64 mask)")


@grading_settings(max_examples=10, shrink=False)
@given(batch=hidden_batches())
def test_value_loss_positional_and_default(student, reference, batch):
    """clip_range_value passed positionally (0.3), and left to its default (0.2)."""
    t = tol(batch.dtype, 40.0)
    compare(student, reference, "clipped_value_loss", (*_value_case(batch, 0.3), 0.3), rtol=t, atol=t,
            what="clipped_value_loss(..., 0.3)")
    compare(student, reference, "clipped_value_loss", _value_case(batch, 0.2), rtol=t, atol=t,
            what="clipped_value_loss(...) with the default clip_range_value")


@grading_settings(max_examples=10, shrink=False)
@given(batch=hidden_batches(dtypes=("float64",)))
def test_value_loss_gradient(student, reference, batch):
    """d loss / d values equals the reference's; no gradient into old_values or returns: with the three
    derived from one leaf θ (`grader.hidden.tied`), d loss / d θ is the reference's with only values' path
    carrying gradient."""
    args = _value_case(batch, 0.2)
    # float64 gradients 2(V−R)/N: exact to rounding.
    grads = compare_grads(student, reference, "clipped_value_loss", args, {}, ("values",), rtol=1e-9, atol=1e-9)
    assert grads is not None
    tie = tie_plan("ex3.value_loss_tie", dict(zip(("values", "old_values", "returns"), args[:3])),
                   [(None, (1,), False)])
    expect_tied_grad(student, reference, "clipped_value_loss", args, {}, tie, constants=("old_values", "returns"),
                     diagnosis="gradient_into_constants", what="clipped_value_loss(...)")


@grading_settings(max_examples=25, shrink=False)
@given(batch=hidden_batches(), vocab=st.integers(2, 9), scale=st.sampled_from([0.5, 3.0]))
def test_entropy_matches_reference(student, reference, batch, vocab, scale):
    """Masked token-level mean of −Σ p log p over the vocabulary; beside float32 logits a float mask is also given
    as float64, which changes nothing (the output's dtype is the data's)."""
    logits = _logits(batch, vocab, scale)
    # Entropies lie in [0, log 9] = [0, 2.2]: unit scale.
    t = tol(batch.dtype, 2.0)
    compare(student, reference, "entropy_from_logits", (logits, batch.mask()), rtol=t, atol=t)
    if batch.dtype_name == "float32" and batch.mask_kind == "float":
        compare(student, reference, "entropy_from_logits", (logits, batch.mask().double()), rtol=t, atol=t,
                what="entropy_from_logits(float32 logits, float64 mask)")


def test_entropy_near_one_hot(student, reference):
    """Logits ×1e3 (near one-hot): the entropy is finite and ≈ 0, not NaN."""
    for dtype in (torch.float32, torch.float64):
        g = draw_generator("ex3.entropy_near_one_hot")
        logits = torch.randn(3, 4, 6, generator=g, dtype=torch.float64) * 1e3
        # Near one-hot whatever the draw: the top logit leads the next by ≥ 200 (e^-200 ≈ 1e-87).
        top = logits.max(dim=-1, keepdim=True).values
        logits = torch.where(logits == top, logits + 200.0, logits).to(dtype)
        mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0]])
        # p·log p underflows to 0·(−inf); the true entropy is < 1e-300: absolute 1e-6 is generous.
        compare(student, reference, "entropy_from_logits", (logits, mask), rtol=1e-6, atol=1e-6,
                what=f"entropy_from_logits(near one-hot, {dtype})")


@grading_settings(max_examples=8, shrink=False)
@given(batch=hidden_batches(dtypes=("float64",)), vocab=st.integers(2, 7))
def test_entropy_gradient(student, reference, batch, vocab):
    """d entropy / d logits equals the reference's (the bonus trains the policy)."""
    logits = _logits(batch, vocab, 2.0)
    compare_grads(student, reference, "entropy_from_logits", (logits, batch.mask()), {}, ("logits",),
                  rtol=1e-9, atol=1e-9)


@grading_settings(max_examples=20, shrink=False)
@given(batch=hidden_batches(), vocab=st.integers(2, 7))
def test_ppo_loss_matches_reference(student_kg, reference, batch, vocab):
    """loss = clipped surrogate + vf_coef·value loss − ent_coef·entropy with the default coefficients; also
    at log-ratios of ±k (k drawn in 21..29) where the unclipped term counts in full (nothing clamps r)."""
    args = _full_case(batch, vocab)
    t = tol(batch.dtype, 10.0)
    compare(student_kg, reference, "ppo_loss", args, rtol=t, atol=t, pick=_loss_part, variant_pick=_same,
            what="ppo_loss(...)[0]")
    k = float(draw_int("ex3.far_log_ratio", 21, 29))
    # Integer log-ratios are exact in both dtypes; the loss is ~e^k/3, so the tolerance is relative.
    compare(student_kg, reference, "ppo_loss", _far_ratio_case(batch.dtype, k, vocab), rtol=t, atol=t,
            pick=_loss_part, variant_pick=_same, what=f"ppo_loss(...)[0] at |log r| = {k:g}")


def _far_ratio_case(dtype: torch.dtype, k: float, vocab: int) -> tuple:
    """ppo_loss's arguments for one row of three tokens with r = e^k, e^−k, e^0.1 and Â = −1, 2, 0.5: the first
    two are the smaller (unclipped) term of eq. 5.1, so the loss holds r·Â exactly."""
    logp_old = torch.tensor([[-40.0, -3.0, -2.0]], dtype=dtype)
    logp_new = logp_old + torch.tensor([[k, -k, 0.1]], dtype=dtype)
    advantages = torch.tensor([[-1.0, 2.0, 0.5]], dtype=dtype)
    values, old_values = torch.tensor([[0.5, -0.2, 0.1]], dtype=dtype), torch.tensor([[0.4, 0.0, 0.3]], dtype=dtype)
    returns = torch.tensor([[1.0, -0.5, 0.2]], dtype=dtype)
    logits = torch.linspace(-1.0, 1.0, 3 * vocab, dtype=dtype).reshape(1, 3, vocab)
    return (logp_new, logp_old, advantages, values, old_values, returns, logits, torch.ones(1, 3, dtype=torch.bool))


def _same(out):
    return out


def _loss_part(out):
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise Mismatch("wrong_type", f"ppo_loss must return (loss, stats), got {type(out).__name__}", "ppo_loss(...)")
    return out[0]


@grading_settings(max_examples=12, shrink=False)
@given(batch=hidden_batches(), vf_coef=st.sampled_from([0.5, 1.0]), ent_coef=st.sampled_from([0.0, 0.1]))
def test_ppo_loss_hyperparameters(student_kg, reference, batch, vf_coef, ent_coef):
    """Non-default clip_eps, clip_range_value, vf_coef and ent_coef, by keyword and positionally."""
    args = _full_case(batch, 4, clip_eps=0.3, c=0.4)
    t = tol(batch.dtype, 10.0)
    kwargs = {"clip_eps": 0.3, "clip_range_value": 0.4, "vf_coef": vf_coef, "ent_coef": ent_coef}
    compare(student_kg, reference, "ppo_loss", args, kwargs, rtol=t, atol=t, pick=_loss_part, variant_pick=_same,
            what="ppo_loss(..., keyword coefficients)[0]")
    compare(student_kg, reference, "ppo_loss", (*args, 0.3, 0.4, vf_coef, ent_coef), rtol=t, atol=t,
            pick=_loss_part, variant_pick=_same, what="ppo_loss(..., positional coefficients)[0]")


@grading_settings(max_examples=15, shrink=False)
@given(batch=hidden_batches(), clip_eps=st.sampled_from([0.1, 0.2]))
def test_ppo_loss_stats(student_kg, reference, batch, clip_eps):
    """stats holds Python floats approx_kl (½·masked mean of Δ²) and clipfrac (where the clip binds)."""
    args = _full_case(batch, 4, clip_eps=clip_eps)
    got = student_kg.ppo_loss(*args, clip_eps=clip_eps)
    _loss_part(got)
    stats = got[1]
    if not isinstance(stats, dict):
        raise Mismatch("wrong_type", f"stats must be a dict, got {type(stats).__name__}", "ppo_loss(...)[1]")
    want = reference_call(reference, "ppo_loss", args, {"clip_eps": clip_eps})[1]
    for key, diagnosis in (("approx_kl", "approx_kl_wrong"), ("clipfrac", "clipfrac_wrong")):
        if key not in stats:
            raise Mismatch(diagnosis, f"stats has no key {key!r}", "ppo_loss stats")
        value = stats[key]
        if type(value) is not float:
            raise Mismatch("stats_not_floats", f"stats[{key!r}] is a {type(value).__name__}", "ppo_loss stats")
        # Means of ≤ 28 terms of size ≤ ~1 (clipfrac: of 0/1 indicators): float32 rounding < 1e-5.
        t = tol(batch.dtype)
        if not close_scalar(value, want[key], rtol=t, atol=t):
            raise Mismatch(diagnosis, f"  expected {want[key]!r}, got {value!r}", f"stats[{key!r}]")


@grading_settings(max_examples=8, shrink=False)
@given(batch=hidden_batches(dtypes=("float64",)))
def test_ppo_loss_gradients(student_kg, reference, batch):
    """Gradients reach logp_new, values and logits as the reference's; none reach logp_old, advantages,
    old_values or returns: with all seven float inputs derived from one leaf θ (`grader.hidden.tied`),
    d loss / d θ is the reference's with only the paths of logp_new, values and logits carrying gradient."""
    args = _full_case(batch, 4)
    compare_grads(student_kg, reference, "ppo_loss", args, {}, ("logp_new", "values", "logits"),
                  rtol=1e-9, atol=1e-9)
    names = ("logp_new", "logp_old", "advantages", "values", "old_values", "returns", "logits")
    tie = tie_plan("ex3.ppo_loss_tie", dict(zip(names, args[:7])), [(0, (1,), False)])
    expect_tied_grad(student_kg, reference, "ppo_loss", args, {}, tie,
                     constants=("logp_old", "advantages", "old_values", "returns"),
                     diagnosis="gradient_into_constants", what="ppo_loss(...)[0]")


def test_losses_inputs_untouched(student, error_name):
    """clipped_value_loss, entropy_from_logits and ppo_loss modify none of their inputs in place."""
    batch = Batch(2, 4, (4, 2), "float", "float64", draw_seed("ex3.inputs_untouched"))
    args = _full_case(batch, 4)
    expect_inputs_untouched(student, "clipped_value_loss", args[3:6] + (args[7],), {},
                            ("values", "old_values", "returns"), error_name)
    expect_inputs_untouched(student, "entropy_from_logits", (args[6], args[7]), {}, ("logits",), error_name)
    expect_inputs_untouched(student, "ppo_loss", args, {},
                            ("logp_new", "logp_old", "advantages", "values", "old_values", "returns", "logits"),
                            error_name)


def test_losses_reject_mismatched_shapes(student, error_name):
    """(0.25 points, once the values are computed) The docstrings' ValueErrors: value-loss tensors of different shapes, a mask not
    [B, T] of the logits, ppo_loss's token-level shapes or logits that do not match them."""
    from grader.hidden.documented_errors import expect_value_errors

    x = torch.randn(2, 3, dtype=torch.float64)
    logits = torch.randn(2, 3, 5, dtype=torch.float64)
    mask = torch.ones(2, 3, dtype=torch.bool)
    expect_value_errors({"returns of another shape": lambda: student.clipped_value_loss(x, x, x[:, :2], mask)},
                        error_name, "clipped_value_loss")
    expect_value_errors({"mask of another shape": lambda: student.entropy_from_logits(logits, mask[:, :2])},
                        error_name, "entropy_from_logits")
    expect_value_errors({"logits of another length": lambda: student.ppo_loss(x, x, x, x, x, x, logits[:, :2], mask),
                         "advantages of another shape": lambda: student.ppo_loss(x, x, x[:1], x, x, x, logits, mask)},
                        error_name, "ppo_loss")
