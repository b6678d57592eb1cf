"""Property tests of `ppo_course.grading_kit.compare` (issue 10, class 1): no NaN or inf passes.

Every comparison function of the helper is fed NaN/±inf at a random real position of
a random finite reference; the expectation is written independently of the code under
test (a non-finite value where the reference is finite can never be "close").
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from ppo_course.grading_kit import compare
from ppo_course.grading_kit.feedback import Mismatch, expect_close

BAD = (math.nan, math.inf, -math.inf)
SETTINGS = settings(max_examples=60, derandomize=True, database=None, deadline=None)


@st.composite
def case(draw):
    """(want, got with one non-finite real entry, mask, index of that entry in the flat tensor)."""
    B = draw(st.integers(1, 4))
    T = draw(st.integers(1, 5))
    values = draw(st.lists(st.floats(-1e6, 1e6), min_size=B * T, max_size=B * T))
    want = torch.tensor(values, dtype=torch.float64).reshape(B, T)
    lengths = draw(st.lists(st.integers(1, T), min_size=B, max_size=B))
    mask = torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]
    real = mask.reshape(-1).nonzero().reshape(-1).tolist()
    k = draw(st.sampled_from(real))
    bad = draw(st.sampled_from(BAD))
    got = want.clone().reshape(-1)
    got[k] = bad
    dtype = draw(st.sampled_from([torch.float32, torch.float64]))
    return want, got.reshape(B, T).to(dtype), mask, k


@SETTINGS
@given(case(), st.floats(0, 1e3), st.floats(0, 1e3))
def test_close_rejects_non_finite_whatever_the_tolerance(c, rtol, atol):
    want, got, mask, _ = c
    assert compare.close(got, want, rtol=rtol, atol=atol, mask=mask) is False
    assert compare.close(got, want, rtol=rtol, atol=atol) is False
    assert compare.all_finite(got) is False


@SETTINGS
@given(case())
def test_max_abs_diff_never_hides_nan(c):
    want, got, mask, k = c
    d = compare.max_abs_diff(got, want, mask)
    assert math.isnan(d) or d == math.inf
    assert compare.any_nonzero(got - want.to(got.dtype))


@SETTINGS
@given(case(), st.floats(0, 1e3))
def test_params_close_and_max_param_diff_reject_non_finite(c, atol):
    want, got, _, _ = c
    good = {"w": want, "b": torch.zeros(3, dtype=torch.float64)}
    bad = {"w": got.double(), "b": torch.zeros(3, dtype=torch.float64)}
    assert compare.params_close(bad, good, atol=atol) is False
    d = compare.max_param_diff(bad, good)
    assert not d <= atol  # NaN or inf: never small
    assert compare.params_close(good, good, atol=0.0) is True


@SETTINGS
@given(st.sampled_from(BAD), st.floats(-1e6, 1e6), st.floats(0, 1e3), st.floats(0, 1e3))
def test_close_scalar_rejects_non_finite(bad, want, rtol, atol):
    assert compare.close_scalar(bad, want, rtol=rtol, atol=atol) is False
    assert compare.close_scalar(want, want, rtol=0.0, atol=0.0) is True


@SETTINGS
@given(case())
def test_expect_close_fails_and_names_nan(c):
    want, got, mask, _ = c
    with pytest.raises(Mismatch) as info:
        expect_close(got.to(want.dtype), want, rtol=1.0, atol=1e3, mask=mask, what="x")
    assert info.value.diagnosis == "not_finite"
    assert "largest difference inf" not in info.value.detail
    assert "where a finite value was expected" in info.value.detail


def test_reference_nan_is_a_grader_bug():
    want = torch.tensor([1.0, math.nan])
    with pytest.raises(compare.GraderBug):
        compare.close(torch.tensor([1.0, math.nan]), want, rtol=0.1, atol=0.1)
    with pytest.raises(compare.GraderBug):
        compare.close_scalar(1.0, math.nan, rtol=0.1, atol=0.1)


def test_reference_inf_matches_only_the_same_inf():
    want = torch.tensor([1.0, math.inf])
    assert compare.close(torch.tensor([1.0, math.inf]), want, rtol=0, atol=0)
    assert not compare.close(torch.tensor([1.0, -math.inf]), want, rtol=0, atol=0)
    assert not compare.close(torch.tensor([1.0, 1e300], dtype=torch.float64), want, rtol=1, atol=1)


def test_honest_values_pass_and_masked_padding_is_ignored():
    # Hand case: |1.00001 - 1| = 1e-5 <= atol 1e-5 + rtol 0 -> close; 2e-5 is not.
    want = torch.tensor([[1.0, 5.0]], dtype=torch.float64)
    mask = torch.tensor([[True, False]])
    assert compare.close(torch.tensor([[1.00001, math.nan]], dtype=torch.float64), want, rtol=0, atol=1.1e-5,
                         mask=mask)
    assert not compare.close(torch.tensor([[1.00002, 5.0]], dtype=torch.float64), want, rtol=0, atol=1.1e-5)


def test_non_tensors_and_bools_are_never_close():
    want = torch.tensor(1.0)
    assert not compare.close("1.0", want, rtol=1, atol=1)
    assert not compare.close_scalar(True, 1.0, rtol=1, atol=1)
    assert not compare.close(torch.ones(2), want, rtol=1, atol=1)  # another shape


def test_same_values_only_names_mistakes():
    # A buggy variant that yields NaN is recognised, but that is a diagnosis, not a pass (close says no).
    nan = torch.tensor([math.nan, 1.0])
    assert compare.same_values(nan, nan.clone(), rtol=0, atol=0)
    assert not compare.close(nan, torch.tensor([0.0, 1.0]), rtol=0, atol=0)


ENTRY = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64),
                  st.sampled_from([0.0, -0.0, 1.0, 1.0 + 1e-9, 5e-324, 1e308, -1e308]))


@SETTINGS
@given(pairs=st.lists(st.tuples(ENTRY, ENTRY), min_size=0, max_size=6),
       tol=st.sampled_from([(0.0, 0.0), (1e-5, 1e-8), (1e-2, 0.0), (0.0, 1e-3)]))
def test_close_is_the_entrywise_rule(pairs, tol):
    """`close` on float64 vectors equals the rule written entry by entry in plain Python: a NaN reference is a
    grader bug; an infinite reference matches only the same infinity; a finite one matches a finite value within
    atol + rtol·|want| (the tensor code takes a one-pass path when every reference entry is finite)."""
    rtol, atol = tol
    got = torch.tensor([g for g, _ in pairs], dtype=torch.float64)
    want = torch.tensor([w for _, w in pairs], dtype=torch.float64)
    if any(math.isnan(w) for _, w in pairs):
        with pytest.raises(compare.GraderBug):
            compare.close(got, want, rtol=rtol, atol=atol)
        return

    def entry_ok(g: float, w: float) -> bool:
        if math.isinf(w):
            return g == w
        return math.isfinite(g) and abs(g - w) <= atol + rtol * abs(w)

    assert compare.close(got, want, rtol=rtol, atol=atol) == all(entry_ok(g, w) for g, w in pairs)
