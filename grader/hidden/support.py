"""Helpers of the hidden graders: compare with the reference, name the mistake, check gradients.

Trusted code: the reference runs here, in the grading process; the student's
functions are reached through the provider's module proxy (`student`), whose
calls send copies of the arguments to a sandboxed child.

Tolerances (used by every comparison unless a test says otherwise):
* float64: rtol = atol = 1e-9 — the reference accumulates in float64; a correct
  float64 submission differs by summation order only (~1e-15 relative for the
  ≤ 50-term sums of these tests), and every known mistake differs by > 1e-3.
* float32: rtol = atol = 2e-5 (scaled by the magnitude where noted) — one float32
  rounding is 6e-8 relative; sums of ≤ 50 terms and exp/log keep a correct
  float32 submission within ~1e-6 of the float64-accurate reference.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from grader.mistakes import buggy_variants
from grader.hidden.calls import reference_call, reference_grads, student_grads
from ppo_course.grading_kit.compare import any_nonzero
from ppo_course.grading_kit.feedback import Mismatch, expect_close
from ppo_course.grading_kit import inputs


def hidden_batches(**kw):
    """The `batches` strategy for hidden tests: at least 2 rows of 3 tokens, so that a failing
    example tells the known mistakes apart (a 1×1 batch cannot tell a max from a min);
    one-token and full rows still occur through the row lengths."""
    kw.setdefault("min_B", 2)
    kw.setdefault("min_T", 3)
    return inputs.batches(**kw)

TOL = {torch.float32: 2e-5, torch.float64: 1e-9}


def tol(dtype: torch.dtype, scale: float = 1.0) -> float:
    """The tolerance of the module docstring for `dtype`, times `scale` (the data's magnitude)."""
    return TOL[dtype] * max(1.0, scale)


def part(index: int, what: str) -> Callable[[Any], Any]:
    """A picker for element `index` of a returned tuple; Mismatch('wrong_type') if it is not one."""
    def pick(out: Any) -> Any:
        if not isinstance(out, (tuple, list)) or len(out) <= index:
            raise Mismatch("wrong_type", f"expected a tuple, got {type(out).__name__}", what)
        return out[index]
    return pick


def compare(student, reference, name: str, args: tuple, kwargs: dict | None = None, *, rtol: float, atol: float,
            mask: torch.Tensor | None = None, pick: Callable[[Any], Any] | None = None, what: str | None = None,
            check_dtype: bool = True, diagnose: bool = True, got: Any = None,
            variant_pick: Callable[[Any], Any] | None = None) -> Any:
    """Call `name` on the student and the reference with the same arguments and compare.

    Args:
        student: the provider's module proxy.
        reference: the `ppo_reference` module.
        name: a contract function name.
        args, kwargs: the call (positional and keyword arguments are passed as given).
        rtol, atol: tolerances (see the module docstring).
        mask: compare real positions only (padding is unspecified by the contract).
        pick: selects the compared part of the output (e.g. `part(0, ...)` for advantages).
        what: label for the message (hidden tests never show inputs or expected values).
        check_dtype: compare dtypes too.
        diagnose: try the buggy variants of `name` when the values differ.
        got: the student's output when already computed (else it is called here).
        variant_pick: selects the compared part of a buggy variant's output (default: `pick`).

    Returns:
        The student's full output.

    Raises:
        Mismatch: naming the mistake (see `feedback.expect_close`).
        Student errors (from the provider) propagate; the collector classifies them.
    """
    kwargs = kwargs or {}
    pick = pick or (lambda out: out)
    label = what or f"{name}(...)"
    try:
        if got is None:
            got = getattr(student, name)(*args, **kwargs)
        want = pick(reference_call(reference, name, args, kwargs))
        candidates = []
        if diagnose and name in buggy_variants.VARIANTS:
            candidates = buggy_variants.candidates(name, args, kwargs, signature_of=getattr(reference, name),
                                                   pick=variant_pick or pick)
        try:
            expect_close(pick(got), want, rtol=rtol, atol=atol, mask=mask, what=label, candidates=candidates,
                         check_dtype=check_dtype)
        except Mismatch as exc:
            refined = _on_evidence(exc.diagnosis, student, reference, name, pick(got), want, candidates, args,
                                   kwargs, pick, variant_pick or pick, rtol, atol, mask)
            finding, fitted = exc.finding, ""
            if refined in ("wrong_value", "not_finite"):  # no catalogued name: a fitted family, or where
                from grader.hidden.evidence import explain_unnamed

                refined, finding, fitted = explain_unnamed(refined, student, name, pick(got), want, args, kwargs,
                                                           pick, variant_pick or pick, rtol, atol, mask)
            if refined != exc.diagnosis or finding != exc.finding:
                raise Mismatch(refined, exc.detail, exc.what, finding=finding, fitted=fitted) from None
            raise
    except Exception as exc:  # a failure with an int/float mask that a bool mask cures names the mask
        if isinstance(exc, Mismatch) and exc.diagnosis == "mask_dtype_unsupported":
            raise  # already named by the provider (a call that raised with this mask dtype only)
        if _works_with_bool_mask(student, reference, name, args, kwargs, pick, rtol, atol, mask):
            raise _mask_dtype_mismatch(exc, label) from None
        raise
    return got


#: Statements about the output's kind, not its values: true whatever the probe shows.
_STRUCTURAL = frozenset({"wrong_dtype", "wrong_shape", "not_scalar", "wrong_device", "wrong_type"})


def _on_evidence(first: str, student, reference, name, got_part, want, candidates, args, kwargs, pick,
                 variant_pick, rtol, atol, mask) -> str:
    """The reported diagnosis of a failed value comparison (`grader.hidden.evidence`): a known mistake only
    when it also reproduces the student's output on the probe; `computes_nothing` for a wrong output that is
    zero or an input unchanged (on the probe too); otherwise what `expect_close` said."""
    from grader.hidden.evidence import COMPUTES_NOTHING, computes_nothing, confirm

    if first in {d for d, _ in candidates} and first not in _STRUCTURAL:
        first = confirm(first, student, reference, name, got_part, want, candidates, args, kwargs, pick,
                        variant_pick, rtol, atol, mask)
    if first == "wrong_value" and computes_nothing(student, reference, name, got_part, args, kwargs, pick, mask):
        return COMPUTES_NOTHING
    return first


def _mask_dtype_mismatch(exc: BaseException, label: str) -> Mismatch:
    """``mask_dtype_unsupported`` for a call that failed (``exc``) with its mask's dtype and is right with another."""
    failed = exc.diagnosis if isinstance(exc, Mismatch) else type(exc).__name__
    return Mismatch("mask_dtype_unsupported", f"{failed} with this mask's dtype, right with another", label)


def _works_with_bool_mask(student, reference, name, args, kwargs, pick, rtol, atol, mask) -> bool:
    """True when the call fails with its mask dtype but is right with another one (bool <-> float).

    The contract asks for bool, int and float masks alike; a function that only works
    for some of them gets the `mask_dtype_unsupported` diagnosis.
    """
    import inspect

    bound = inspect.signature(getattr(reference, name)).bind(*args, **kwargs)
    given = bound.arguments.get("mask")
    if not isinstance(given, torch.Tensor) or not _is_01(given):
        return False
    bound.arguments["mask"] = given.to(torch.float64 if given.dtype == torch.bool else torch.bool)
    try:
        got = getattr(student, name)(*bound.args, **bound.kwargs)
        want = pick(reference_call(reference, name, bound.args, bound.kwargs))
        expect_close(pick(got), want, rtol=rtol, atol=atol, mask=mask, what=name)
    except Exception:  # still wrong with the other mask dtype: the mask is not the problem
        return False
    return True


def _is_01(x: torch.Tensor) -> bool:
    return bool(((x == 0) | (x == 1)).all())


def expect_no_grad(grads: dict, names: tuple[str, ...], what: str) -> None:
    """Mismatch('gradient_into_constants') if any of `names` received a non-zero gradient."""
    for name in names:
        g = grads.get(name)
        if g is not None and any_nonzero(g):
            raise Mismatch("gradient_into_constants", f"a gradient reached `{name}`", what)


def inplace_error(exc: BaseException, error_name: Callable[[BaseException], str | None]) -> bool:
    """True when a student error is autograd refusing an in-place change of an input leaf."""
    name = error_name(exc)
    text = str(exc)
    return name == "RuntimeError" and ("leaf Variable that requires grad" in text
                                        or "in-place operation" in text or "inplace operation" in text)


def expect_inputs_untouched(student, name: str, args: tuple, kwargs: dict | None, float_params: tuple[str, ...],
                            error_name: Callable[[BaseException], str | None]) -> None:
    """Mismatch('modifies_input') when the student's `name` modifies an input tensor in place.

    The check that counts is made by the provider outside the student's reach
    (`modified_inputs`): the sandbox passes the arguments in shared memory and the
    grading process compares their bytes after an ordinary call (plain inputs, no
    `requires_grad`, nothing to tell it from any other call; `grader.sandbox.shared_args`),
    and after every earlier call of `name` in the grading (`inputs_modified_before`);
    the local provider of `ppo-course check` compares clones. A provider without
    `modified_inputs` falls back to passing the float inputs as leaves that require
    grad, where autograd refuses (and reports) an in-place change made with grad enabled.
    """
    kwargs = kwargs or {}
    # The sandbox's RemoteModule and the local provider's module have it (a class attribute, so that
    # a module proxy never forwards the name to the student's code).
    if callable(getattr(type(student), "modified_inputs", None)):
        changed = student.modified_inputs(name, args, kwargs)
        if changed:
            raise Mismatch("modifies_input", f"changed in place: {', '.join(changed)}", f"{name}(...)")
        # Any earlier call of the grading counts too: the probe's fixed input must not be the only one
        # watched (a function could recognise it and behave only then).
        earlier = student.inputs_modified_before(name) if callable(getattr(type(student), "inputs_modified_before",
                                                                              None)) else []
        if earlier:
            raise Mismatch("modifies_input", f"changed in place on an earlier call: {', '.join(earlier)}",
                           f"{name}(...)")
        return
    out = getattr(student, name)(*args, **kwargs)
    head = out[0] if isinstance(out, (tuple, list)) and out else out
    grad_output = None
    if isinstance(head, torch.Tensor) and head.numel() != 1:
        grad_output = torch.ones(head.shape, dtype=head.dtype if head.is_floating_point() else torch.float64)
    try:
        student.call_with_grad(name, args, kwargs, wrt=float_params, grad_output=grad_output)
    except Exception as exc:  # the sandbox reports the student's exception by type name
        if inplace_error(exc, error_name):
            raise Mismatch("modifies_input", "autograd refused an in-place change of an input", f"{name}(...)") from None
        raise


def away_from_kinks(logp_new: torch.Tensor, logp_old: torch.Tensor, advantages: torch.Tensor, clip_eps: float,
                    margin: float = 1e-3) -> tuple[torch.Tensor, torch.Tensor]:
    """Move (logp_new, advantages) off the kinks of the clip: r within `margin` of 1 ± ε, or Â near 0.

    Value comparisons near a kink compare two legitimate sides of a
    discontinuity (of the gradient) or amplify rounding; tests about the kink
    build their inputs by hand instead. Returns new tensors.
    """
    ratio = torch.exp((logp_new - logp_old).double())
    near = ((ratio - (1 + clip_eps)).abs() < margin) | ((ratio - (1 - clip_eps)).abs() < margin)
    logp_new = torch.where(near, logp_new + 0.01, logp_new)
    small = advantages.abs() < margin
    advantages = torch.where(small, torch.where(advantages < 0, advantages - 0.1, advantages + 0.1), advantages)
    return logp_new, advantages


def compare_grads(student, reference, name: str, args: tuple, kwargs: dict | None, wrt: tuple[str, ...], *,
                  rtol: float, atol: float, grad_output: torch.Tensor | None = None, what: str | None = None,
                  mask: torch.Tensor | None = None, detached_diagnosis: str | None = None) -> dict:
    """Compare the student's gradients w.r.t. `wrt` with the reference's; name the mistake on failure.

    A missing gradient (None: nothing reached the parameter) counts as zeros;
    `detached_diagnosis` is reported when the reference gradient is non-zero and
    the student's is all zeros. Returns the student's gradients.
    """
    kwargs = kwargs or {}
    out, grads = student_grads(student, name, args, kwargs, wrt, grad_output, what or name)
    want = reference_grads(reference, name, args, kwargs, wrt, grad_output)
    for param in wrt:
        label = f"d {what or name} / d {param}"
        ref = want[param]
        ref = torch.zeros_like(args_value(reference, name, args, kwargs, param)) if ref is None else ref
        got = grads.get(param)
        got = torch.zeros_like(ref) if got is None else got
        candidates = []
        if name in buggy_variants.VARIANTS:
            candidates = buggy_variants.grad_candidates(name, args, kwargs, signature_of=getattr(reference, name),
                                                        wrt=param, grad_output=grad_output)
        if detached_diagnosis:  # after the specific mistakes: an all-zero gradient means detached
            candidates.append((detached_diagnosis, torch.zeros_like(ref)))
        try:
            expect_close(got, ref, rtol=rtol, atol=atol, mask=mask, what=label, candidates=candidates,
                         check_dtype=False)
        except Mismatch as exc:
            from grader.hidden.tie_break import disambiguate_grads

            refined = disambiguate_grads(exc.diagnosis, student, reference, name, got, ref, candidates, args,
                                          kwargs, param, grad_output, rtol, atol, mask)
            if refined != detached_diagnosis and refined in {d for d, _ in candidates}:
                from grader.hidden.evidence import value_consistent
                from grader.hidden.tie_break import matching

                def consistent(diagnosis: str) -> bool:
                    return value_consistent(diagnosis, out, reference, name, args, kwargs, max(rtol, 1e-9),
                                            max(atol, 1e-9), mask)

                if not consistent(refined):
                    # Another mistake with this gradient may also have the student's value (an entropy term
                    # left out and one computed on detached logits both stop the logits' gradient); else no name.
                    others = [d for d in matching(got, ref, candidates, mask, rtol, atol)
                              if d not in (refined, detached_diagnosis)]
                    refined = next((d for d in others if consistent(d)), "wrong_value")
            finding = exc.finding
            if refined in ("wrong_value", "not_finite"):  # no name: where the gradients differ, always true
                from grader.hidden.evidence import where_grads_differ

                finding = where_grads_differ(got, ref, reference, name, args, kwargs, label, rtol, atol, mask)
            if refined != exc.diagnosis or finding != exc.finding:
                raise Mismatch(refined, exc.detail, exc.what, finding=finding) from None
            raise
    return grads


def args_value(reference, name: str, args: tuple, kwargs: dict, param: str) -> torch.Tensor:
    """The value passed for parameter `param` in the call (bound to the reference signature)."""
    import inspect

    bound = inspect.signature(getattr(reference, name)).bind(*args, **kwargs)
    return bound.arguments[param]
