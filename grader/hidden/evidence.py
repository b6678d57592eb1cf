"""A mistake is named only on evidence; a function that computes nothing is told apart (hidden graders).

A known buggy variant that matches the student's output on one failing input is
a hypothesis, not yet a diagnosis: another mistake (or the same mistake with
another parameter) can coincide with it on a small input. `confirm` runs the
student's function once more on the rich fixed probe of
`grader.hidden.tie_break.probe_args` (4 rows of 7 tokens with lengths 7, 1, 4, 6,
both signs of Â, ratios on both sides of the clip, junk at padding), with the
failing call's hyper-parameters, and keeps the first matching variant that
reproduces the student's probe output too; a function that raises on the probe is
run on the same probe with every row padded (a function that fails on a full row
can still show its mistake on the others). When none does, the test reports the
generic `wrong_value` (or `not_finite`): a statement that is always true, rather
than a name that would send the student to fix code that is right.

`explain_unnamed` takes over where no catalogued variant is confirmed: a parametrised family of
`grader.mistakes.families` fitted on the failing input (`grader.mistakes.fit`) names the mistake with
its parameter when it alone reproduces the student's output there and on the probe; otherwise the
finding says where the outputs differ (`ppo_course.grading_kit.where`), which is always true.

`computes_nothing` is the behavioural test behind the points rule of
`grader/points.yaml` (`requires:`): a failed value test shows work unless the
function's output is an input returned unchanged or one constant (zeros
included), on the failing input and on the probe alike (or is not a finite
tensor of the expected shape and dtype: the ids of `grader.points.NO_WORK_DIAGNOSES`).
Whether the mistake is catalogued plays no part.

Trusted code: it runs in the grading process, the student's function through the
provider's module proxy.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch

import ppo_reference
from grader.hidden.tie_break import probe_like
from grader.mistakes import buggy_variants, fit
from grader.mistakes.families import FAMILIES
from ppo_course.grading_kit import compare
from ppo_course.grading_kit.feedback import matching
from ppo_course.grading_kit.where import where_they_differ

#: How a finding that names a fitted family starts (`explain_unnamed`, `one_story`).
FITTED = "Fitted to your output:"

#: The diagnosis of a value test whose function returned nothing computed (zero or an input unchanged).
COMPUTES_NOTHING = "computes_nothing"


def _generic(got_part: Any, mask: torch.Tensor | None) -> str:
    """`not_finite` when the student's real entries hold NaN/inf, else `wrong_value`."""
    if isinstance(got_part, torch.Tensor):
        real = got_part.detach()
        if mask is not None and tuple(mask.shape) == tuple(real.shape):
            real = real[mask.to(torch.bool)]
        if not compare.all_finite(real):
            return "not_finite"
    return "wrong_value"


def confirm(first: str, student, reference, name: str, got_part: Any, want: torch.Tensor, candidates: list,
            args: tuple, kwargs: dict | None, pick: Callable[[Any], Any], variant_pick: Callable[[Any], Any],
            rtol: float, atol: float, mask: torch.Tensor | None) -> str:
    """The diagnosis to report for a failed comparison whose first guess is `first`.

    Args:
        first: what `expect_close` named (a candidate's id, or a generic id).
        student, reference, name: the provider's module proxy, the reference module, the contract name.
        got_part, want: the compared part of the student's and the reference's output on the failing input.
        candidates: (id, thunk) pairs of `buggy_variants.candidates` on the failing input.
        args, kwargs, pick, variant_pick, rtol, atol, mask: the failing comparison's.

    Returns:
        The first candidate id that matches the failing input AND reproduces the student's output on the
        probe (on its every-row-padded form when the student's code raises on the probe itself); `first`
        when it is generic or no probe exists for `name`; otherwise the generic id.
    """
    ids = matching(got_part, want, candidates, mask, rtol, atol)
    if not ids:
        return first
    probe = probe_like(reference, name, args, kwargs)
    if probe is None:
        return first
    got2 = _run_on_probe(student, name, probe, pick)
    if got2 is None:  # the student's code fails on a full row, perhaps: the probe with every row padded
        probe = probe_like(reference, name, args, kwargs, padded=True)
        got2 = _run_on_probe(student, name, probe, pick)
    if not isinstance(got2, torch.Tensor):  # it fails there too, or returns no tensor: no evidence for a name
        return _generic(got_part, mask)
    probe_call, probe_mask, extra = probe
    m2 = probe_mask if mask is not None else None
    for diagnosis_id, thunk in buggy_variants.candidates(name, probe_call, extra,
                                                         signature_of=getattr(reference, name), pick=variant_pick):
        if diagnosis_id not in ids:
            continue
        try:
            variant = thunk()
        except Exception:  # a variant undefined on the probe reproduces nothing
            continue
        if isinstance(variant, torch.Tensor) and compare.same_values(got2, variant, rtol, atol, m2):
            return diagnosis_id
    return _generic(got_part, mask)


def _run_on_probe(student, name: str, probe: tuple, pick: Callable[[Any], Any]) -> Any:
    """The compared part of the student's output on a probe (`probe_like`'s triple), or None when it raises."""
    probe_call, _, extra = probe
    try:
        return pick(getattr(student, name)(*probe_call, **extra))
    except Exception:  # the student's code fails on the probe
        return None


def _idle(out: Any, inputs: list[torch.Tensor], mask: torch.Tensor | None) -> tuple | None:
    """What makes `out` idle: ("input",) when it equals (value and shape) one of `inputs`, ("constant", c)
    when its real entries all equal c (zeros included); None when it is computed."""
    if not isinstance(out, torch.Tensor) or not out.is_floating_point() or not out.numel():
        return None
    out = out.detach()
    if any(tuple(x.shape) == tuple(out.shape) and bool(torch.equal(x.to(out.dtype), out)) for x in inputs):
        return ("input",)
    real = out[mask.to(torch.bool)] if mask is not None and tuple(mask.shape) == tuple(out.shape) else out.reshape(-1)
    if real.numel() and compare.all_finite(real) and bool((real == real[0]).all()):
        return ("constant", float(real[0]))
    return None


def computes_nothing(student, reference, name: str, got_part: Any, args: tuple, kwargs: dict | None,
                     pick: Callable[[Any], Any], mask: torch.Tensor | None) -> bool:
    """True when the student's output is idle on the failing input AND on the probe: an input returned
    unchanged, or one constant (zeros included) on both.

    Both inputs must agree, so that a small failing input (where a computing function may give a constant)
    never makes a computing function look idle; a student function that raises on the probe after an idle
    output on the failing input computes nothing either.
    """
    bound = inspect.signature(getattr(reference, name)).bind(*args, **(kwargs or {}))
    inputs = [v for v in bound.arguments.values() if isinstance(v, torch.Tensor) and v.is_floating_point()]
    first = _idle(got_part, inputs, mask)
    if first is None:
        return False
    probe = probe_like(reference, name, args, kwargs)
    if probe is None:
        return first == ("constant", 0.0) or first == ("input",)
    probe_call, probe_mask, extra = probe
    try:
        got2 = pick(getattr(student, name)(*probe_call, **extra))
    except Exception:  # its failing output was idle already
        return True
    probe_inputs = [v for v in probe_call if isinstance(v, torch.Tensor) and v.is_floating_point()]
    second = _idle(got2, probe_inputs, probe_mask if mask is not None else None)
    return second is not None and (second == first or second == ("constant", 0.0))


def value_consistent(diagnosis_id: str, student_out: Any, reference, name: str, args: tuple, kwargs: dict | None,
                     rtol: float, atol: float, mask: torch.Tensor | None) -> bool:
    """Whether a mistake named from a gradient also reproduces the student's VALUE on the same input.

    A model of a mistake predicts every output: a variant whose gradient fits but whose value does not
    (an entropy from the sampled token's log-prob has the gradient of detached logits, not their value)
    is not the student's mistake. True when the student's output is not a tensor (nothing to check).
    """
    def head(out: Any) -> Any:
        return out[0] if isinstance(out, (tuple, list)) and out else out

    got = head(student_out)
    if not isinstance(got, torch.Tensor):
        return True
    real = mask if mask is not None and tuple(mask.shape) == tuple(got.shape) else None
    for variant_id, thunk in buggy_variants.candidates(name, args, kwargs or {}, signature_of=getattr(reference, name),
                                                       pick=head):
        if variant_id != diagnosis_id:
            continue
        try:
            value = thunk()
        except Exception:  # a variant undefined on this input reproduces nothing
            continue
        if isinstance(value, torch.Tensor) and compare.same_values(got.detach(), value, rtol, atol, real):
            return True
    return False


def explain_unnamed(generic: str, student, name: str, got_part: Any, want: torch.Tensor, args: tuple,
                    kwargs: dict | None, pick: Callable[[Any], Any], variant_pick: Callable[[Any], Any],
                    rtol: float, atol: float, mask: torch.Tensor | None) -> tuple[str, str, str]:
    """(diagnosis, finding, fitted) for a failed comparison that no catalogued mistake explains.

    Args:
        generic: the generic id reported so far (`wrong_value` or `not_finite`).
        student, name: the provider's module proxy and the contract name.
        got_part, want: the compared parts of the student's and the reference's output (failing input).
        args, kwargs, pick, variant_pick, rtol, atol, mask: the failing comparison's (`pick` selects the
            compared part of the student's output, `variant_pick` that of a model's).

    Returns:
        A fitted family's (id, its sentence and then where the outputs differ, "id: claim") when exactly
        one family reproduces the student's output on the failing input and on the probe
        (`grader.mistakes.fit.explain`); else (``generic``, where the outputs differ, ""): a sentence that
        is always true ("" when it cannot say).
    """
    try:
        a = fit.bind(name, args, kwargs)
    except (TypeError, AttributeError):  # not a call of a contract function's signature: nothing to fit
        a = None
    if a is not None and name in FAMILIES and isinstance(got_part, torch.Tensor):
        def probe():
            found = probe_like(ppo_reference, name, args, kwargs)
            if found is None:
                return None
            probe_call, probe_mask, extra = found
            try:
                got2 = pick(getattr(student, name)(*probe_call, **extra))
            except Exception:  # the student's code fails on the probe: no evidence for a name
                return None
            if not isinstance(got2, torch.Tensor):
                return None
            return fit.bind(name, probe_call, extra), got2.detach(), probe_mask if mask is not None else None

        # A family models the contract function's whole output, as the student's: `pick` selects its compared part.
        named = fit.explain(name, a, got_part.detach(), want, pick, mask, rtol, atol, probe)
    else:
        named = None
    bound = a or {}
    structure = bound.get("mask") if isinstance(bound.get("mask"), torch.Tensor) else mask
    advantages = bound.get("advantages") if isinstance(bound.get("advantages"), torch.Tensor) else None
    where = where_they_differ(got_part, want, rtol=rtol, atol=atol, mask=mask, structure=structure,
                              advantages=advantages, what="the value")
    if named is not None:
        return (named.diagnosis, f"{FITTED} {named.sentence}" + (f"\n{where}" if where else ""),
                f"{named.diagnosis}: {named.claim}")
    return generic, where, ""


def one_story(outcomes: dict) -> None:
    """Never two different fitted parameters for one exercise: demote them all to the generic id, in place.

    ``outcomes``: {(exercise, kind, test): Outcome} of one grading. A fitted name rests on one test's
    inputs; when two failed tests of one exercise fit different models or parameters (γ = 0.99 on one,
    γ = 0.95 on another: their `Outcome.fitted` claims differ), neither is the student's mistake: each
    keeps only its "where" sentence (the finding's later lines) under `wrong_value`.
    """
    by_exercise: dict[str, list] = {}
    for (exercise, _kind, _test), o in outcomes.items():
        if not o.passed and getattr(o, "fitted", ""):
            by_exercise.setdefault(exercise, []).append(o)
    for fitted in by_exercise.values():
        if len({o.fitted for o in fitted}) > 1:
            for o in fitted:
                o.diagnosis = "wrong_value"
                o.finding = o.finding.split("\n", 1)[1] if "\n" in o.finding else ""
                o.fitted = ""


def where_grads_differ(got: torch.Tensor, want: torch.Tensor, reference, name: str, args: tuple,
                       kwargs: dict | None, label: str, rtol: float, atol: float, mask: torch.Tensor | None) -> str:
    """Where a student's gradient differs from the reference's (`ppo_course.grading_kit.where`), read against
    the call's own mask and advantages; "" when it cannot say (another shape, not a contract call)."""
    try:
        bound = inspect.signature(getattr(reference, name)).bind(*args, **(kwargs or {})).arguments
    except (TypeError, AttributeError):  # not a call of a contract function's signature
        bound = {}
    structure = bound.get("mask") if isinstance(bound.get("mask"), torch.Tensor) else mask
    advantages = bound.get("advantages") if isinstance(bound.get("advantages"), torch.Tensor) else None
    return where_they_differ(got, want, rtol=rtol, atol=atol, mask=mask, structure=structure,
                             advantages=advantages, what=label)
