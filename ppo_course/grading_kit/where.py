"""Where a student's output differs from the expected one: a sentence that is always true (public and hidden).

When no known mistake explains a failed comparison, the feedback still says what it knows: which
output differs (the value, a gradient) and at which positions, computed from the actual difference
mask against the input's structure: padding only, the last real token of rows, the first token,
positions with negative (or positive) advantages, one row, every compared position, or a count. A
location is claimed only when every differing position lies in it. The sentence holds no input value
or expected value (the hidden graders show it). For a scalar it says only that the value differs (or
is not finite): any number relating got to expected (a ratio, a difference, "expected is 0") is the
expected value itself to a student who chooses got (got = 1 makes got/expected print 1/expected, and
got = expected·x, with the right formula, prints any x the submission read from a hidden input).

Tensor conventions follow the contract: [B, T] token tensors with prefix masks (bool/int/float).
"""

from __future__ import annotations

import torch


def _differs(got: torch.Tensor, want: torch.Tensor, rtol: float, atol: float) -> torch.Tensor:
    """Elementwise: True where got is not within tolerance of want (NaN/inf against finite differ)."""
    g, w = got.detach().double(), want.detach().double()
    return ~torch.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)


def _prefix_parts(real: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(last real token, first token) masks of a [B, T] prefix mask (rows with no real token: none)."""
    B, T = real.shape
    pos = torch.arange(T)[None, :].expand(B, T)
    last = (pos == (real.sum(1, keepdim=True) - 1)) & real
    first = (pos == 0) & real
    return last, first


def _location(diff: torch.Tensor, compared: torch.Tensor, real: torch.Tensor | None,
              advantages: torch.Tensor | None) -> str:
    """The most specific location that holds every differing position."""
    if real is not None:
        last, first = _prefix_parts(real)
        if not bool((diff & real).any()):
            return "only at padding positions (mask = 0)"
        rows = int(diff.any(1).sum())
        if bool((diff <= last).all()):
            return f"only at the last real token of a row ({rows} of {diff.shape[0]} rows)"
        if bool((diff <= first).all()):
            return f"only at the first token of a row ({rows} of {diff.shape[0]} rows)"
    if advantages is not None and tuple(advantages.shape) == tuple(diff.shape):
        adv = advantages.detach()
        if bool((diff <= (adv < 0)).all()):
            return "only at positions where the advantage is negative"
        if bool((diff <= (adv > 0)).all()):
            return "only at positions where the advantage is positive"
    if diff.dim() == 2 and diff.shape[0] > 1 and int(diff.any(1).sum()) == 1:
        return f"only in row {int(diff.any(1).nonzero()[0, 0])} of {diff.shape[0]}"
    if bool((diff == compared).all()):
        return "at every compared position"
    return f"at {int(diff.sum())} of {int(compared.sum())} compared positions"


def where_they_differ(got: object, want: torch.Tensor, *, rtol: float, atol: float,
                      mask: torch.Tensor | None = None, structure: torch.Tensor | None = None,
                      advantages: torch.Tensor | None = None, what: str = "the value") -> str:
    """One sentence saying which output differs and where; "" when got is not a tensor of want's shape.

    Args:
        got: the student's output (any value; only a tensor of ``want``'s shape is described).
        want: the expected tensor.
        rtol, atol: the comparison's tolerances.
        mask: the positions the comparison looks at ([B, T] bool/int/float; None: every position).
        structure: the input's [B, T] prefix mask (real tokens), for "padding" / "last token" / "first token".
        advantages: the input's advantages [B, T], for "negative / positive advantages".
        what: what is compared, e.g. "the value" or "d loss / d logp_new".

    Returns:
        e.g. "d loss / d logp_new differs only at the last real token of a row (2 of 3 rows), on an input of
        shape (3, 5)."; for a scalar, "the value differs." or "the value differs: got a
        non-finite value." (nothing that depends on the expected value).
    """
    if not isinstance(got, torch.Tensor) or tuple(got.shape) != tuple(want.shape) or not want.numel():
        return ""
    if want.dim() == 0:
        if not bool(torch.isfinite(got.detach())):
            return f"{what} differs: got a non-finite value."
        return f"{what} differs."
    diff = _differs(got, want, rtol, atol)
    compared = torch.ones_like(diff)
    if mask is not None and tuple(mask.shape) == tuple(diff.shape):
        compared = mask.detach().to(torch.bool)
    diff = diff & compared
    if not bool(diff.any()):
        return ""
    real = (structure.detach().to(torch.bool) if structure is not None and diff.dim() == 2
            and tuple(structure.shape) == tuple(diff.shape) else None)
    bad = int((~torch.isfinite(got.detach()) & compared).sum())
    nan_note = f" ({bad} of them NaN or inf)" if bad else ""
    return (f"{what} differs {_location(diff, compared, real, advantages)}{nan_note}, "
            f"on an input of shape {tuple(want.shape)}.")
