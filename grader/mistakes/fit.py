"""Fit a mistake family's parameter to a student's output, and name it only on evidence (hidden graders).

`fit_family` finds the parameters of one `grader.mistakes.families.Family` whose model reproduces the
student's output on the failing input: a discrete family tries its values; a continuous one (a clip
bound, γ, β, ...) is solved on the entry most sensitive to the parameter, by a grid over its span and
bisection inside every bracket where the residual changes sign (the models are piecewise smooth and
monotone between breakpoints, so this is the closed-form root where it is piecewise linear), and each
root is then checked on every real entry. `explain` keeps the roots that also reproduce the student's
output on the second, rich probe input (`grader.hidden.tie_break.probe_args`) and names a family only
when exactly one family, with one parameter (to 1e-3 of its span), does: two families, or a parameter
that the inputs cannot pin down (a flat stretch), give no name. A continuous parameter is named only at a
fixed value (`fixed_values`: a grid of round numbers and the numbers the call gives), which it must reproduce.

Trusted code: the models run in the grading process on copies of the call's inputs.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

import ppo_reference
from grader.mistakes.families import FAMILIES, Family
from ppo_course.grading_kit import compare

#: Grid points over a continuous parameter's span; bisection steps inside each bracket.
GRID, STEPS = 41, 60


@dataclass(frozen=True)
class Named:
    """A family whose fitted model reproduced the student's output on the failing input and the probe.

    Attributes:
        diagnosis: the diagnosis id (a `DIAGNOSES` key).
        claim: what the fitted model does, with the fitted parameter only (e.g. "γ (gamma) = 0.99 is used"):
            two tests that fit the same model and parameter make the same claim.
        contrast: how it differs from the call (e.g. "where the call passed γ (gamma) = 0.9"); may be "".
        param: the fitted parameter (a float, or the discrete value).
    """

    diagnosis: str
    claim: str
    contrast: str
    param: Any

    @property
    def sentence(self) -> str:
        """The claim and its contrast as one sentence (no tensor input)."""
        return f"{self.claim} {self.contrast}".strip() + "."


def bind(function: str, args: tuple, kwargs: dict | None) -> dict:
    """The call bound to the reference's signature, defaults applied, tensors copied and detached."""
    bound = inspect.signature(getattr(ppo_reference, function)).bind(*args, **(kwargs or {}))
    bound.apply_defaults()
    return {k: v.detach().clone() if isinstance(v, torch.Tensor) else v for k, v in bound.arguments.items()}


def _output(family: Family, a: dict, p: Any, pick: Callable[[Any], Any]) -> torch.Tensor | None:
    try:
        with torch.no_grad():
            out = pick(family.model(a, p))
    except Exception:  # a parameter outside the model's domain reproduces nothing
        return None
    return out if isinstance(out, torch.Tensor) else None


def _same(got: torch.Tensor, out: torch.Tensor | None, mask, rtol: float, atol: float) -> bool:
    return out is not None and compare.same_values(got, out.to(got.dtype), rtol, atol, mask)


def _roots(family: Family, a: dict, got: torch.Tensor, pick, mask) -> list[float]:
    """Parameters in `family.span` where the model's most sensitive real entry equals the student's."""
    lo, hi = family.span
    grid = [lo + (hi - lo) * i / (GRID - 1) for i in range(GRID)]
    outs = [_output(family, a, p, pick) for p in grid]
    usable = [(p, o.double().reshape(-1)) for p, o in zip(grid, outs) if o is not None and o.shape == got.shape]
    if len(usable) < 2:
        return []
    real = (mask.to(torch.bool).reshape(-1) if mask is not None and tuple(mask.shape) == tuple(got.shape)
            else torch.ones(got.numel(), dtype=torch.bool))
    stack = torch.stack([o for _, o in usable])
    spread = torch.where(real, (stack.max(0).values - stack.min(0).values).nan_to_num(0.0), torch.zeros(()))
    if not bool((spread > 0).any()):
        return []  # the parameter changes nothing on this input
    k = int(spread.argmax())
    target = float(got.detach().double().reshape(-1)[k])

    def residual(p: float) -> float | None:
        o = _output(family, a, p, pick)
        return None if o is None else float(o.double().reshape(-1)[k]) - target

    found = []
    res = [(p, float(o[k]) - target) for p, o in usable]
    for (p0, r0), (p1, r1) in zip(res, res[1:]):
        if r0 == 0.0:
            found.append(p0)
        elif r0 * r1 < 0:
            for _ in range(STEPS):
                mid = 0.5 * (p0 + p1)
                rm = residual(mid)
                if rm is None:
                    break
                p0, p1, r0 = (mid, p1, rm) if rm * r0 > 0 else (p0, mid, r0)
            found.append(0.5 * (p0 + p1))
    if res[-1][1] == 0.0:
        found.append(res[-1][0])
    return found


def fit_family(family: Family, a: dict, got: torch.Tensor, pick: Callable[[Any], Any], mask, rtol: float,
               atol: float) -> list:
    """The parameters of `family` whose model reproduces `got` on every real entry of the call `a`.

    Args:
        family: the family to fit.
        a: the call's bound arguments (`bind`).
        got: the compared part of the student's output.
        pick: selects the compared part of the model's output.
        mask: compare real positions only (None: every position).
        rtol, atol: the comparison's tolerances.

    Returns:
        The reproducing parameters (floats for a continuous family, in increasing order; the discrete
        values that reproduce otherwise); empty when none does.
    """
    if not isinstance(got, torch.Tensor):
        return []
    params = _roots(family, a, got, pick, mask) if family.span is not None else list(family.values)
    return [p for p in params if _same(got, _output(family, a, p, pick), mask, rtol, atol)]


def _pinned(params: list, family: Family) -> Any:
    """The one parameter `params` agree on (to 1e-3 of the span), or None when they spread."""
    if not params:
        return None
    if family.span is None:
        return params[0] if len(params) == 1 else None
    width = family.span[1] - family.span[0]
    return params[len(params) // 2] if max(params) - min(params) <= 1e-3 * width else None


def fixed_values(family: Family, a: dict) -> list[float]:
    """The values a continuous family's parameter may be named at: multiples of 0.01 over its span (0.05 when the
    span is wider than 3), and the numbers the call itself gives (each float argument v, 1 − v, 1 + v, 1/(1 + v)).

    A fitted parameter is reported only at one of these (`explain`), so that an output shaped by the student
    cannot carry an arbitrary number into the feedback: at most a few bits, as the choice of a diagnosis does.
    """
    lo, hi = family.span
    step = 0.01 if hi - lo <= 3 else 0.05
    grid = [lo + k * step for k in range(int(round((hi - lo) / step)) + 1)]
    given = [float(v) for v in a.values() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    derived = [x for v in given for x in (v, 1.0 - v, 1.0 + v) + ((1.0 / (1.0 + v),) if v != -1.0 else ())]
    return [x for x in grid + derived if lo <= x <= hi]


def _fixed_value(p: float, family: Family, a: dict, reproduces: Callable[[float], bool]) -> float | None:
    """The fixed value (`fixed_values`) within 1e-3 of the span of the fitted ``p`` that reproduces the student's
    outputs, or None: a parameter elsewhere is not named."""
    width = family.span[1] - family.span[0]
    near = sorted((abs(x - p), x) for x in fixed_values(family, a) if abs(x - p) <= 1e-3 * width)
    return next((x for _, x in near if reproduces(x)), None)


def explain(function: str, a: dict, got: torch.Tensor, want: torch.Tensor, pick: Callable[[Any], Any], mask,
            rtol: float, atol: float, probe: Callable[[], tuple[dict, Any, Any] | None]) -> Named | None:
    """The one family that explains the student's output on the failing input AND the probe, or None.

    Args:
        function: the contract name.
        a: the failing call's bound arguments (`bind`).
        got, want: the compared parts of the student's and the reference's output.
        pick, mask, rtol, atol: the failing comparison's.
        probe: () -> (the probe's bound arguments, the student's compared output there, its mask), or None
            when there is no probe or the student's code fails on it (then nothing is named).

    Returns:
        `Named` when exactly one family, with one parameter, reproduces both outputs; None otherwise.
    """
    fits: list[tuple[Family, list]] = []
    for family in FAMILIES.get(function, []):
        params = [p for p in fit_family(family, a, got, pick, mask, rtol, atol)
                  if not _same(want, _output(family, a, p, pick), mask, rtol, atol)]
        if params:
            fits.append((family, params))
    if not fits:
        return None
    seen = probe()
    if seen is None:
        return None
    a2, got2, mask2 = seen
    named = []
    for family, params in fits:
        kept = [p for p in params if _same(got2, _output(family, a2, p, pick), mask2, rtol, atol)]
        p = _pinned(kept, family)
        if p is not None and family.span is not None:
            p = _fixed_value(p, family, a, lambda q: _same(got, _output(family, a, q, pick), mask, rtol, atol)
                             and _same(got2, _output(family, a2, q, pick), mask2, rtol, atol))
        if p is not None:
            named.append(Named(family.diagnosis(a, p), *family.says(a, p), p))
    return named[0] if len(named) == 1 else None
