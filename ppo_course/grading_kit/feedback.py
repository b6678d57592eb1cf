"""Comparisons that fail with a diagnosis: `Mismatch`, `expect_close`, `expect_raises`.

Shared by the public tests (`ppo_course/public_tests/`, run by `ppo-course
check`) and the hidden graders (`grader/hidden/`). A failed comparison raises
`Mismatch`, which carries

* `diagnosis`: a stable id from `diagnoses.DIAGNOSES` naming the mistake
  (a known buggy variant whose output matches the student's, or a generic id
  such as `wrong_shape`), and
* `detail`: expected vs got and where. Only PUBLIC tests show the detail; the
  hidden graders report the test name, its points and the diagnosis only, so
  that no hidden input or expected value reaches a student.

Tensor conventions follow the contract: `[B, T]` token tensors, prefix masks
(bool/int/float), values at padding unspecified unless a function says
"0 on padding".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch

from ppo_course.grading_kit import compare
from ppo_course.grading_kit.diagnoses import message
from ppo_course.grading_kit.where import where_they_differ

# A candidate is (diagnosis id, the buggy variant's output or a thunk computing it).
Candidate = tuple[str, Any]

# How many entries of a tensor the detail prints (public feedback only).
_MAX_SHOWN = 6


class Mismatch(AssertionError):
    """A comparison failed; `diagnosis` names the mistake, `detail` says where (public only).

    Attributes:
        diagnosis: an id of `DIAGNOSES` (e.g. "max_instead_of_min", "wrong_value").
        detail: expected vs got, shapes, the worst position; shown for public tests only.
        what: what was compared, e.g. "clipped_surrogate_loss(...)" or "stats['clipfrac']".
        finding: one sentence that holds no input or expected value (a fitted parameter against the
            call's, or where the outputs differ): shown for hidden tests too.
        fitted: what a fitted mistake family claims, with its parameter ("" when none was fitted): two
            failures of one exercise that name different claims tell no single story.
    """

    def __init__(self, diagnosis: str, detail: str = "", what: str = "output", finding: str = "", fitted: str = ""):
        self.diagnosis = diagnosis
        self.detail = detail
        self.what = what
        self.finding = finding
        self.fitted = fitted
        super().__init__(f"{what}: [{diagnosis}] {message(diagnosis)}" + (f"\n{detail}" if detail else ""))


def expect_number(value: Any, what: str) -> float:
    """`value` as a float, or `Mismatch("wrong_type")` when it is not one real number (`compare.number_of`).

    For a student's value a test reads as a number (``AdaptiveKLController.value``): ``float()`` on it
    raised TypeError (None, a list), ValueError (a str), RuntimeError (a tensor of two elements) or
    OverflowError (an int of 400 digits) inside the grader, which is a grader fault, not the student's 0.

    Args:
        value: what the student's code gave.
        what: the name of the value, for the message (e.g. "AdaptiveKLController.value").

    Raises:
        Mismatch: ``wrong_type``, naming the type that came back.
    """
    number = compare.number_of(value)
    if number is None:
        kind = f"tensor of {value.numel()} elements" if isinstance(value, torch.Tensor) else type(value).__name__
        raise Mismatch("wrong_type", f"expected a number, got a {kind}", what)
    return number


def snapshot(value: Any) -> Any:
    """`value` as it is now: a tensor's detached copy (a later in-place update of the student's tensor does not
    reach it), anything else as it is. For numbers read with `expect_numbers_close` after several calls."""
    return value.detach().clone() if isinstance(value, torch.Tensor) else value


def expect_numbers_close(values: Sequence[Any], want: torch.Tensor, *, rtol: float, atol: float, what: str,
                         candidates: Sequence[Candidate] = ()) -> None:
    """`expect_close` on numbers the student's code gave (``AdaptiveKLController.value`` after each update).

    Each value is read with `expect_number`. When the comparison fails and some value is a reduced-precision
    tensor or numpy scalar (float32, float16, bfloat16) with which the numbers agree to that dtype's precision,
    the type is the mistake, not the formula: `Mismatch("wrong_type")` says so.

    Args:
        values: what the student's code gave, in order (each taken with `snapshot` when it was read); want: float64 [len(values)], the expected numbers.
        rtol, atol, what, candidates: as `expect_close`.

    Raises:
        Mismatch: `wrong_type` (a value not one real number, or a low-precision one that explains the
            difference), else whatever `expect_close` raises.
    """
    got = torch.tensor([expect_number(v, what) for v in values], dtype=torch.float64)
    try:
        expect_close(got, want, rtol=rtol, atol=atol, what=what, candidates=candidates)
    except Mismatch:
        low = [(v, compare.precision_of(v)) for v in values]
        low = [(v, eps) for v, eps in low if eps is not None and eps > torch.finfo(torch.float64).eps]
        if low and compare.same_values(got, want, 8 * max(e for _, e in low), atol, None):
            raise Mismatch("wrong_type", f"a tensor of {low[0][0].dtype}, not a Python float: the numbers agree "
                           "only to its precision (keep a float: float(...) or .item())", what) from None
        raise


#: How a padding position is shown: its value is unspecified by the contract and never compared.
PADDING_SHOWN = "·"


def _fmt(x: Any, mask: torch.Tensor | None = None) -> str:
    """A short printable form of a tensor or value for public feedback.

    With a ``mask`` of ``x``'s shape, padding positions show as ``PADDING_SHOWN`` (the contract leaves
    their values unspecified, and they are not compared), never as the reference's own filler.
    """
    if isinstance(x, torch.Tensor):
        flat = x.detach().reshape(-1)
        real = [True] * min(flat.numel(), _MAX_SHOWN)
        if mask is not None and x.dim() > 0 and tuple(mask.shape) == tuple(x.shape):
            real = mask.detach().to(torch.bool).reshape(-1)[:_MAX_SHOWN].tolist()
        body = ", ".join(f"{v:.6g}" if r else PADDING_SHOWN for v, r in zip(flat[:_MAX_SHOWN].tolist(), real))
        more = ", ..." if flat.numel() > _MAX_SHOWN else ""
        if x.dim() == 0:
            return f"tensor({flat.item():.8g}, dtype={x.dtype})"
        return f"tensor([{body}{more}], shape={tuple(x.shape)}, dtype={x.dtype})"
    return repr(x)


def _real(x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """x at real positions (flattened) when `mask` is given and shapes agree, else all of x."""
    x = x.detach()
    if mask is None or x.shape != mask.shape:
        return x.reshape(-1)
    return x[mask.to(torch.bool)]


def close(got: Any, want: torch.Tensor, mask: torch.Tensor | None, rtol: float, atol: float) -> bool:
    """True when `got` is a tensor of `want`'s shape whose real entries match within rtol/atol.

    NaN or ±inf in `got` where `want` is finite never matches (`compare.close`);
    a NaN in `want` raises `compare.GraderBug`.
    """
    if not isinstance(got, torch.Tensor):
        return False
    return compare.close(got, want, rtol=rtol, atol=atol, mask=mask)


def _evaluate(candidate: Any) -> Any:
    """The candidate's output; a thunk is called lazily; a failing variant yields None."""
    if callable(candidate) and not isinstance(candidate, torch.Tensor):
        try:
            return candidate()
        except Exception:  # a variant undefined on this input simply does not match
            return None
    return candidate


def diagnose(got: Any, want: torch.Tensor, candidates: Iterable[Candidate], mask: torch.Tensor | None,
             rtol: float, atol: float) -> str | None:
    """The id of the first candidate whose output matches `got` but not `want`, else None."""
    for diagnosis_id, candidate in candidates:
        variant = _evaluate(candidate)
        if variant is None or not isinstance(variant, torch.Tensor):
            continue
        if close(variant, want, mask, rtol, atol):
            continue  # indistinguishable from the right answer on this input: no evidence
        if isinstance(got, torch.Tensor) and compare.same_values(got, variant, rtol, atol, mask):
            return diagnosis_id
    return None


def matching(got: Any, want: torch.Tensor, candidates: Iterable[Candidate], mask: torch.Tensor | None,
             rtol: float, atol: float) -> list[str]:
    """Every distinct candidate id whose output matches `got` but not `want`, in candidate order."""
    found: list[str] = []
    for diagnosis_id, candidate in candidates:
        if diagnosis_id in found:
            continue
        variant = _evaluate(candidate)
        if isinstance(variant, torch.Tensor) and not close(variant, want, mask, rtol, atol) \
                and isinstance(got, torch.Tensor) and compare.same_values(got, variant, rtol, atol, mask):
            found.append(diagnosis_id)
    return found


def _confirmed(found: str | None, probe: Callable[[str], bool] | None) -> str | None:
    """`found` when there is no probe or the probe confirms it, else None (no evidence for the name)."""
    return found if found is None or probe is None or probe(found) else None


def expect_close(got: Any, want: torch.Tensor, *, rtol: float, atol: float, mask: torch.Tensor | None = None,
                 what: str = "output", candidates: Sequence[Candidate] = (), inputs: str = "",
                 check_dtype: bool = True, probe: Callable[[str], bool] | None = None) -> None:
    """Raise `Mismatch` unless `got` equals `want` (same shape, dtype, device; values within tolerance).

    Args:
        got: what the student's code returned (anything; checked for being a tensor).
        want: the expected tensor (reference output or a hand-computed value).
        rtol, atol: tolerances; each caller justifies them for its dtype and size.
        mask: [B, T] prefix mask; when given and `want` is [B, T], only real positions
            are compared (padding is unspecified by the contract).
        what: the name of what is compared, used in the message.
        candidates: (diagnosis id, variant output or thunk) pairs, tried in order when the
            values differ; the first variant that matches `got` (and differs from `want`)
            names the mistake.
        inputs: a description of the input, shown in public feedback only.
        check_dtype: compare dtypes (off for stats or integer outputs).
        probe: the evidence rule's second input (`ppo_course.grading_kit.public_probe.Probe`):
            a candidate's name stands only when ``probe(name)`` confirms it; else the result is generic.

    Raises:
        Mismatch: with diagnosis `not_scalar`, `wrong_shape`, `wrong_dtype`, `wrong_device`,
            a candidate's id, `not_finite` or `wrong_value`.
    """
    where = f"\n  input: {inputs}" if inputs else ""
    if not isinstance(got, torch.Tensor):
        raise Mismatch("not_scalar" if want.dim() == 0 else "wrong_shape",
                       f"expected a tensor of shape {tuple(want.shape)}, got {type(got).__name__}: {_fmt(got)}{where}",
                       what)
    if tuple(got.shape) != tuple(want.shape):
        # A candidate with a different shape (e.g. a shifted gather) may still name the mistake.
        found = _confirmed(diagnose(got, want, candidates, mask, rtol, atol), probe)
        diagnosis = found or ("not_scalar" if want.dim() == 0 else "wrong_shape")
        raise Mismatch(diagnosis, f"expected shape {tuple(want.shape)}, got {tuple(got.shape)}{where}", what)
    if check_dtype and got.dtype != want.dtype:
        raise Mismatch("wrong_dtype", f"expected dtype {want.dtype}, got {got.dtype}{where}", what)
    if got.device != want.device:
        raise Mismatch("wrong_device", f"expected device {want.device}, got {got.device}{where}", what)
    if close(got, want, mask, rtol, atol):
        return
    found = _confirmed(diagnose(got, want, candidates, mask, rtol, atol), probe)
    if found is None:
        found = "wrong_value" if compare.all_finite(_real(got, mask)) else "not_finite"
    padding = mask is not None and tuple(mask.shape) == tuple(want.shape) and not bool(mask.to(torch.bool).all())
    legend = f"\n  ({PADDING_SHOWN} = padding: its value is unspecified and not compared)" if padding else ""
    finding = ""
    if found in ("wrong_value", "not_finite"):  # no known mistake: say what is always true
        finding = where_they_differ(got, want, rtol=rtol, atol=atol, mask=mask, structure=mask, what="the value")
    detail = (f"  expected: {_fmt(want, mask)}\n  got:      {_fmt(got, mask)}\n"
              f"  {compare.describe_difference(got, want, mask)} (rtol={rtol:g}, atol={atol:g}){legend}{where}"
              + (f"\n  {finding}" if finding else ""))
    raise Mismatch(found, detail, what, finding=finding)


def expect_raises(call: Callable[[], Any], error_names: Sequence[str], diagnosis: str, *, what: str,
                  is_error: Callable[[BaseException], str | None]) -> None:
    """Raise `Mismatch(diagnosis)` unless `call()` raises one of `error_names`.

    Args:
        call: runs the student's code.
        error_names: accepted exception type names (e.g. ("RuntimeError",)); names, not
            classes, because the sandbox reports a student's exception by its type name.
        diagnosis: the id reported when nothing (or the wrong type) is raised.
        what: what was called, for the message.
        is_error: maps a caught exception to the student's exception type name, or None
            when it is not a student exception (then it propagates).
    """
    try:
        call()
    except Exception as exc:  # the student's exception, possibly wrapped by the sandbox
        name = is_error(exc)
        if name is None:
            raise
        if name in error_names:
            return
        if name == "NotImplementedError":
            raise Mismatch("not_implemented", f"{name}: {exc}", what) from None
        raise Mismatch(diagnosis, f"expected {' or '.join(error_names)}, got {name}: {exc}", what) from None
    raise Mismatch(diagnosis, f"expected {' or '.join(error_names)}, but nothing was raised", what)
