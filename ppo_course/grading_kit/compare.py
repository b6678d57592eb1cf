"""Numeric comparisons that no NaN or inf passes: the one place every grader compares numbers.

Shared by the hidden graders (`grader/hidden/`) and the public tests
(`ppo_course/public_tests/`, `ppo_course/grading_kit/`); it holds no secret.

Why a module of its own: IEEE comparisons with NaN are all False, so a check
written `abs(got - want) > tol` or `max(worst, diff)` lets NaN through (a step
that wrote NaN into the policy would get full marks on exercise 7). Every test
here is written the safe way round, `diff <= tol` must be
True to pass, and non-finite values are checked explicitly:

* a NaN or ±inf in `got` where the reference is finite always fails;
* a NaN in the reference is a bug of the grader (`GraderBug`), never a pass;
* a ±inf in the reference (no current test has one) matches only the same inf.

Tolerances follow `torch.isclose`: |got − want| ≤ atol + rtol·|want|.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch

__all__ = ["GraderBug", "all_finite", "any_nonzero", "close", "close_scalar", "describe_difference",
           "max_abs_diff", "max_param_diff", "params_close", "same_values"]


class GraderBug(RuntimeError):
    """The reference (expected) value holds a NaN: the grader's input or reference is wrong, not the student."""


def _tensor(x: Any) -> torch.Tensor | None:
    """`x` as a detached float64 CPU tensor (tensors, Python numbers), or None for anything else."""
    if isinstance(x, torch.Tensor):
        if x.is_complex():
            return None
        return x.detach().to(device="cpu", dtype=torch.float64)
    value = number_of(x)
    return None if value is None else torch.tensor(value, dtype=torch.float64)


def number_of(x: Any) -> float | None:
    """`x` as a Python float when it is one real number, else None (never raises).

    Args:
        x: anything a student's code returned: an int or float (not a bool), or a one-element real
            (integer or floating) tensor is a number; an int beyond the float range, None, a str, a
            list, a bool, an empty, complex or many-element tensor is not.

    Returns:
        The float (NaN and ±inf included), or None when `x` is not one real number: the caller names a
        wrong type instead of calling ``float()`` on a student's value (which raised TypeError,
        OverflowError or RuntimeError inside the grader: a grader fault instead of the student's 0).
    """
    if isinstance(x, torch.Tensor):
        if x.numel() != 1 or x.is_complex() or x.dtype == torch.bool:
            return None
        return float(x.detach().to(device="cpu", dtype=torch.float64).reshape(()))
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    try:
        return float(x)
    except OverflowError:  # an int beyond ~1.8e308
        return None


def precision_of(x: Any) -> float | None:
    """The machine epsilon of `x`'s dtype when `x` is a floating tensor (float16: 9.8e-4, bfloat16: 7.8e-3,
    float32: 1.2e-7, float64: 2.2e-16), else None (a Python float, an integer tensor, anything else)."""
    if isinstance(x, torch.Tensor) and x.is_floating_point():
        return float(torch.finfo(x.dtype).eps)
    return None


def _same_shape(got: Any, other: Any) -> bool:
    """True when `got` is a tensor or Python number of `other`'s shape, read without converting `got`.

    A child's reply may be a tensor of 512 MiB of uint8: its float64 copy (8x) was made in the grader's own
    process before the shapes were compared, once per candidate mistake tried.
    """
    def shape(x: Any) -> tuple | None:
        if isinstance(x, torch.Tensor):
            return tuple(x.shape)
        return () if isinstance(x, (int, float)) and not isinstance(x, bool) else None

    got_shape = shape(got)
    return got_shape is not None and got_shape == shape(other)


def _real(x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """x at real positions (flattened) when `mask` is given and has x's shape, else all of x flattened."""
    if mask is None or tuple(x.shape) != tuple(mask.shape):
        return x.reshape(-1)
    return x[mask.detach().to(device=x.device, dtype=torch.bool)]


def all_finite(x: Any) -> bool:
    """True when every number in `x` is finite.

    Args:
        x: a tensor, a Python number, or a dict/list/tuple of them (nested); anything else
            (strings, None) is ignored. Integer and bool tensors are always finite.

    Returns:
        False as soon as one float entry is NaN or ±inf.
    """
    if isinstance(x, torch.Tensor):
        if not (x.is_floating_point() or x.is_complex()):
            return True
        return bool(torch.isfinite(x.detach()).all())
    if isinstance(x, float):
        return math.isfinite(x)
    if isinstance(x, Mapping):
        return all(all_finite(v) for v in x.values())
    if isinstance(x, (list, tuple)):
        return all(all_finite(v) for v in x)
    return True


def _pair(got: Any, want: Any, mask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(got, want) as float64 real entries, or None when got is not a number/tensor of want's shape."""
    w = _tensor(want)
    if w is None:
        raise TypeError(f"the expected value must be a tensor or a number, got {type(want).__name__}")
    if not _same_shape(got, w):  # before any float64 copy of the student's value (see `_same_shape`)
        return None
    g = _tensor(got)
    if g is None:
        return None
    return _real(g, mask), _real(w, mask)


def close(got: Any, want: Any, rtol: float, atol: float, mask: torch.Tensor | None = None) -> bool:
    """True when `got` has `want`'s shape and every real entry is within atol + rtol·|want|.

    Args:
        got: the student's value (anything: a non-tensor, non-number is simply not close).
        want: the reference value, a tensor or a Python number.
        rtol, atol: tolerances (≥ 0).
        mask: [B, T] prefix mask; when it has want's shape only real positions are compared.

    Returns:
        False when got is NaN/±inf where want is finite, when shapes differ, or when any
        difference exceeds the tolerance (NaN differences included).

    Raises:
        GraderBug: `want` holds a NaN at a compared position.
        TypeError: `want` is neither a tensor nor a number.
    """
    pair = _pair(got, want, mask)
    if pair is None:
        return False
    g, w = pair
    w_finite = torch.isfinite(w)
    if bool(w_finite.all()):
        # Every compared reference entry is finite: a NaN or ±inf entry of got makes a NaN or inf difference,
        # which is never within the (finite) bound, so one pass decides.
        return bool(((g - w).abs() <= atol + rtol * w.abs()).all())
    if bool(torch.isnan(w).any()):
        raise GraderBug("the reference value holds NaN at a compared position")
    if not bool(torch.isfinite(g[w_finite]).all()):
        return False
    if not bool((g[~w_finite] == w[~w_finite]).all()):  # a reference ±inf matches only the same inf
        return False
    diff = (g[w_finite] - w[w_finite]).abs()
    bound = atol + rtol * w[w_finite].abs()
    return bool((diff <= bound).all())


def close_scalar(got: Any, want: float, rtol: float, atol: float) -> bool:
    """`close` for one number: True when `got` is a real number (not bool) within atol + rtol·|want|.

    Raises:
        GraderBug: `want` is NaN.
    """
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        return False
    value = number_of(got)
    return value is not None and close(value, float(want), rtol=rtol, atol=atol)


def same_values(got: Any, variant: Any, rtol: float, atol: float, mask: torch.Tensor | None = None) -> bool:
    """True when `got` matches a known buggy variant's output (NaN matches NaN, inf the same inf).

    For naming a mistake only: it never grants a point. Shapes must agree; a non-tensor never matches.
    """
    if not _same_shape(got, variant):  # before any float64 copy: a student's value of another shape is never copied
        return False
    g, v = _tensor(got), _tensor(variant)
    if g is None or v is None:
        return False
    return bool(torch.allclose(_real(g, mask), _real(v, mask), rtol=rtol, atol=atol, equal_nan=True))


def max_abs_diff(got: Any, want: Any, mask: torch.Tensor | None = None) -> float:
    """max |got − want| over real entries, NaN when any entry's difference is NaN (never hidden by max).

    Returns inf when the shapes differ or got is not a number/tensor, 0.0 for empty tensors.
    """
    pair = _pair(got, want, mask)
    if pair is None:
        return math.inf
    g, w = pair
    if g.numel() == 0:
        return 0.0
    diff = (g - w).abs()
    if bool(torch.isnan(diff).any()):
        return math.nan
    return float(diff.max())


def max_param_diff(got: Mapping, want: Mapping) -> float:
    """max |got[k] − want[k]| over every parameter of two state dicts (NaN-propagating).

    Returns inf when the names or shapes differ or a value is not a tensor, NaN when any
    difference is NaN.
    """
    if not isinstance(got, Mapping) or set(got) != set(want):
        return math.inf
    worst = 0.0
    for key in want:
        d = max_abs_diff(got[key], want[key])
        if math.isnan(d):
            return math.nan
        if not d <= worst:
            worst = d
    return worst


def params_close(got: Any, want: Mapping, atol: float) -> bool:
    """True when every parameter of `got` (a state dict) is finite and within `atol` of `want`'s.

    Raises:
        GraderBug: a reference parameter holds NaN.
    """
    if not isinstance(got, Mapping) or set(got) != set(want):
        return False
    return all(close(got[k], want[k], rtol=0.0, atol=atol) for k in want)


def any_nonzero(x: Any) -> bool:
    """True when a tensor has an entry that is not exactly 0 (NaN counts as non-zero); None is False."""
    if x is None:
        return False
    t = _tensor(x)
    if t is None:
        return True
    return not bool((t == 0).all())


def describe_difference(got: Any, want: Any, mask: torch.Tensor | None = None) -> str:
    """One line for public feedback: "got nan at real entry #k" / "got inf ..." / "largest difference X at ...".

    A non-finite value is named as such, never reported as a large difference.
    """
    pair = _pair(got, want, mask)
    if pair is None:
        return "got a value of another shape or type"
    g, w = pair
    if g.numel() == 0:
        return "nothing to compare"
    bad = ~torch.isfinite(g) & torch.isfinite(w)
    if bool(bad.any()):
        k = int(bad.nonzero()[0, 0])
        return f"got {float(g[k])} at real entry #{k} where a finite value was expected"
    diff = (g - w).abs().nan_to_num(nan=math.inf, posinf=math.inf)
    k = int(diff.argmax())
    return f"largest difference {float(diff[k]):.3g} at real entry #{k}"
