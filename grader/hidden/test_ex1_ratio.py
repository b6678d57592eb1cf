"""Hidden graders, exercise 1 (stop 6): log-probs from logits and the ratio (Book eqs. 5.18-5.20)."""

from __future__ import annotations

import torch
from hypothesis import given
from hypothesis import strategies as st

from grader.hidden.draws import draw_generator, draw_int
from grader.hidden.support import hidden_batches, compare, compare_grads, expect_inputs_untouched, tol
from ppo_course.grading_kit.inputs import grading_settings, randn

EXERCISE = "ex1_ratio"
KIND = "hidden"


def _logits_case(batch, vocab: int, scale: float):
    """(logits [B, T, V], tokens [B, T]) with valid token ids everywhere (also at padding)."""
    g = batch.gen(11)
    logits = randn((batch.B, batch.T, vocab), g, batch.dtype, scale)
    tokens = torch.randint(0, vocab, (batch.B, batch.T), generator=g)
    return logits, tokens


@grading_settings(max_examples=30, shrink=False)
@given(batch=hidden_batches(), vocab=st.integers(2, 11), scale=st.sampled_from([0.5, 3.0, 10.0]))
def test_logprobs_match_reference(student, reference, batch, vocab, scale):
    """logprobs_from_logits equals log_softmax gathered at the tokens (float32/float64, many shapes)."""
    logits, tokens = _logits_case(batch, vocab, scale)
    # log-probs have magnitude ≤ ~2·scale·sqrt(2 log V); the tolerance scales with it.
    t = tol(batch.dtype, scale)
    compare(student, reference, "logprobs_from_logits", (logits, tokens), rtol=t, atol=t)


@grading_settings(max_examples=10, shrink=False)
@given(batch=hidden_batches(), vocab=st.integers(2, 9))
def test_logprobs_stable_for_huge_logits(student, reference, batch, vocab):
    """Logits ×1e3 still give finite, exact log-probs (no log of an underflowed softmax)."""
    logits, tokens = _logits_case(batch, vocab, 1.0)
    logits = logits * 1e3
    # Values reach ~3e3; float32 spacing there is 2.4e-4, so 1e-3 absolute (float32) and
    # 1e-9 relative (float64) leave room for the log-sum-exp's rounding only.
    t = 1e-3 if batch.dtype == torch.float32 else 1e-9
    compare(student, reference, "logprobs_from_logits", (logits, tokens), rtol=t, atol=t)


@grading_settings(max_examples=8, shrink=False)
@given(batch=hidden_batches(max_B=3, max_T=5), vocab=st.integers(2, 7))
def test_logprobs_gradient(student, reference, batch, vocab):
    """d logprobs / d logits equals the reference's (one-hot minus softmax), for a random upstream gradient."""
    logits, tokens = _logits_case(batch, vocab, 2.0)
    upstream = randn((batch.B, batch.T), batch.gen(12), batch.dtype)
    # Entries are differences of probabilities times N(0,1) upstream values: magnitude ≤ ~3.
    t = tol(batch.dtype, 3.0)
    compare_grads(student, reference, "logprobs_from_logits", (logits, tokens), {}, ("logits",), rtol=t, atol=t,
                  grad_output=upstream, detached_diagnosis="ratio_detached")


def test_logprobs_inputs_untouched(student, error_name):
    """logprobs_from_logits does not modify the logits in place (e.g. logits -= max)."""
    g = draw_generator("ex1.logprobs_inputs_untouched")
    logits = torch.randn(2, 4, 5, generator=g, dtype=torch.float64)
    tokens = torch.randint(0, 5, (2, 4), generator=g)
    expect_inputs_untouched(student, "logprobs_from_logits", (logits, tokens), {}, ("logits",), error_name)


def test_logprobs_keep_dtype(student, reference):
    """float32 in, float32 out; float64 in, float64 out."""
    for dtype in (torch.float32, torch.float64):
        g = draw_generator("ex1.logprobs_keep_dtype")
        logits = torch.randn(3, 4, 6, generator=g, dtype=torch.float64).to(dtype)
        tokens = torch.randint(0, 6, (3, 4), generator=g)
        t = tol(dtype, 3.0)
        compare(student, reference, "logprobs_from_logits", (logits, tokens), rtol=t, atol=t,
                what=f"logprobs_from_logits({dtype})")


@grading_settings(max_examples=30, shrink=False)
@given(batch=hidden_batches(), scale=st.sampled_from([0.3, 2.0]), offset=st.sampled_from([0.0, -50.0, -1000.0]))
def test_ratio_matches_reference(student, reference, batch, scale, offset, error_name):
    """probability_ratio = exp(logp_new − logp_old), also for log-probs around −1000; it leaves logp_new and
    logp_old as they were (the module's conventions: inputs are never modified in place, so no
    logp_new.sub_(logp_old).exp_())."""
    logp_old = batch.data(1, scale) - abs(offset) - 0.5
    logp_new = batch.data(2, scale) - abs(offset) - 0.5
    mask = batch.mask()
    # Ratios are exp(N(0, 2·scale²)) ≤ ~e^10; the tolerance is relative (float32: 2e-5 of a
    # value ≤ e^10 after one exp of a difference that is exact to 1 ulp of |offset|).
    t = tol(batch.dtype) * (1.0 + abs(offset) * (batch.dtype == torch.float32))
    compare(student, reference, "probability_ratio", (logp_new, logp_old), rtol=t, atol=tol(batch.dtype), mask=mask)
    expect_inputs_untouched(student, "probability_ratio", (logp_new, logp_old), {}, ("logp_new", "logp_old"),
                            error_name)


def test_ratio_finite_at_minus_1000(student, reference):
    """Both log-probs about −1000 (equal, and one apart): the ratio is 1 (and e^±1), never NaN (Book eq. 5.20);
    log-ratios of ±k (k drawn in 21..29, beyond a ±20 clamp) give e^±k exactly (nothing clamped).
    The integers are drawn from the grader's secret (`grader.hidden.draws`); the structure is the hand case's."""
    base = -float(draw_int("ex1.ratio_minus_1000.base", 990, 1010))
    near = -float(draw_int("ex1.ratio_minus_1000.near", 1, 3))
    far = near - float(draw_int("ex1.ratio_minus_1000.far", 21, 29))
    for dtype in (torch.float32, torch.float64):
        logp_new = torch.tensor([[base, base + 1.0, base, near, far]], dtype=dtype)
        logp_old = torch.tensor([[base, base, base + 1.0, far, near]], dtype=dtype)
        # Relative 1e-5: float32's exp of an exactly representable argument is within 1 ulp.
        compare(student, reference, "probability_ratio", (logp_new, logp_old), rtol=1e-5, atol=1e-12,
                what=f"probability_ratio at about −1000 and at |log r| > 20 ({dtype})")


def test_ratio_gradient_flows(student, reference):
    """d r/d logp_new = r and d r/d logp_old = −r: the ratio is not detached."""
    g = draw_generator("ex1.ratio_gradient_flows")
    logp_new = -torch.rand(3, 5, generator=g, dtype=torch.float64) * 3
    logp_old = -torch.rand(3, 5, generator=g, dtype=torch.float64) * 3
    upstream = torch.randn(3, 5, generator=g, dtype=torch.float64)
    # float64 products of ≤ e^3-sized ratios with N(0,1): 1e-9 is far above rounding.
    # Both inputs: the docstring promises gradients w.r.t. logp_new AND logp_old (the losses decide what to
    # detach), so a ratio that detaches logp_old inside loses here too.
    compare_grads(student, reference, "probability_ratio", (logp_new, logp_old), {}, ("logp_new", "logp_old"),
                  rtol=1e-9, atol=1e-9, grad_output=upstream, detached_diagnosis="ratio_detached")


def test_ratio_rejects_malformed_input(student, error_name):
    """(0.25 points, once the values are computed) The docstrings' ValueErrors: logits not 3-D, float tokens, tokens not [B, T] of
    the logits, logp_new and logp_old of different shapes."""
    from grader.hidden.documented_errors import expect_value_errors

    logits = torch.randn(2, 3, 5, dtype=torch.float64)
    tokens = torch.randint(0, 5, (2, 3))
    expect_value_errors({"2-D logits": lambda: student.logprobs_from_logits(logits[0], tokens[0]),
                         "float tokens": lambda: student.logprobs_from_logits(logits, tokens.double()),
                         "tokens of another shape": lambda: student.logprobs_from_logits(logits, tokens[:, :2])},
                        error_name, "logprobs_from_logits")
    a, b = torch.randn(2, 3, dtype=torch.float64), torch.randn(2, 4, dtype=torch.float64)
    one_row, one_col = torch.randn(1, 3, dtype=torch.float64), torch.randn(2, 1, dtype=torch.float64)
    # Shapes that broadcast are still two shapes: in the batch dimension and in the time dimension.
    expect_value_errors({"two shapes": lambda: student.probability_ratio(a, b),
                         "[2, 3] and [1, 3] (they broadcast)": lambda: student.probability_ratio(a, one_row),
                         "[2, 3] and [2, 1] (they broadcast)": lambda: student.probability_ratio(a, one_col)},
                        error_name, "probability_ratio")
