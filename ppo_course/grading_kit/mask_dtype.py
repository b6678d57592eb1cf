"""A call that raises with its mask's dtype and returns with another one: the mistake `mask_dtype_unsupported`.

The contract accepts a prefix mask as bool, int or float 0/1 values for every
function with a `mask` parameter (shared/CONTRACT.md, "masks"). A student's
function written for one dtype often raises for another (``obj[mask]`` with a
float mask: IndexError; ``1 - mask`` with a bool mask: TypeError;
``torch.where(mask, ...)`` with an int mask: RuntimeError). Any test may make
such a call directly, so the name is given where every call into student code
passes: both providers (`grader.hidden.provider.GuardedModule`, the sandbox's
proxy in the hidden grader; `ppo_course.check_support.local.LocalModule`,
``ppo-course check``) call `name_mask_dtype_failure` when a call raises an
error they would otherwise report as ``raises_error``. It repeats the same
call (same provider, so in the hidden grader the student's code still runs in
the sandbox's child only) with the mask in each other dtype; when one of them
returns, the failure is the mask's dtype, and `Mismatch('mask_dtype_unsupported')`
replaces the student's exception. The test still fails (the points are lost);
only the name changes. Deterministic: the same calls in the same order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ppo_course.grading_kit.feedback import Mismatch
from ppo_course.grading_kit.signatures import STUB_SIGNATURES

#: The mask dtypes the contract accepts, in the order they are tried (one per kind: bool, int, float).
MASK_DTYPES = (torch.bool, torch.int64, torch.float64)


def mask_position(name: str) -> int | None:
    """The positional index of the `mask` parameter of the exercise function `name` (the stubs'
    signatures, `STUB_SIGNATURES`), or None when `name` is not a module-level function with a mask."""
    for functions in STUB_SIGNATURES.values():
        params = functions.get(name)
        if params is not None:
            names = [p for p, _ in params]
            return names.index("mask") if "mask" in names else None
    return None


def _kind(dtype: torch.dtype) -> str | None:
    if dtype == torch.bool:
        return "bool"
    if dtype.is_floating_point:
        return "float"
    if dtype.is_complex:
        return None
    return "int"


def given_mask(name: str, args: tuple, kwargs: dict | None) -> torch.Tensor | None:
    """The tensor passed as `mask` in the call ``name(*args, **kwargs)``, or None."""
    index = mask_position(name)
    if index is None:
        return None
    given = (kwargs or {}).get("mask", args[index] if len(args) > index else None)
    return given if isinstance(given, torch.Tensor) else None


def other_mask_calls(name: str, args: tuple, kwargs: dict | None) -> list[tuple[tuple, dict, torch.dtype]]:
    """The call ``name(*args, **kwargs)`` with its mask in each other dtype kind: [(args, kwargs, dtype)].

    Empty when `name` has no `mask` parameter, the call passes none, or the mask is not a tensor of
    0/1 values (a malformed mask is another test's business).
    """
    index, given = mask_position(name), given_mask(name, args, kwargs)
    kwargs, args = dict(kwargs or {}), tuple(args)
    if given is None or _kind(given.dtype) is None or given.numel() == 0 \
            or not bool(((given == 0) | (given == 1)).all()):
        return []
    out = []
    for dtype in MASK_DTYPES:
        if _kind(dtype) == _kind(given.dtype):
            continue
        other = given.detach().to(dtype)
        if "mask" in kwargs:
            out.append((args, {**kwargs, "mask": other}, dtype))
        else:
            out.append((args[:index] + (other,) + args[index + 1:], kwargs, dtype))
    return out


def name_mask_dtype_failure(name: str, args: tuple, kwargs: dict | None, call: Callable[[tuple, dict], Any],
                            error_type: str) -> None:
    """Raise `Mismatch('mask_dtype_unsupported')` when the failed call returns with its mask in another dtype.

    Args:
        name: the exercise function that raised (e.g. "compute_gae").
        args, kwargs: the failed call's arguments.
        call: repeats the call through the provider: ``call(args, kwargs)``; anything it raises
            means "no" for that dtype.
        error_type: the type name of the student's exception (shown; never its message, which in the
            hidden grader could echo a hidden input).

    Returns:
        None when no other dtype helps (the caller re-raises the student's exception).

    Raises:
        Mismatch: "mask_dtype_unsupported", saying which dtype raised and which returned.
    """
    calls = other_mask_calls(name, args, kwargs)
    if not calls:
        return
    given = given_mask(name, args, kwargs)
    for other_args, other_kwargs, dtype in calls:
        try:
            call(other_args, other_kwargs)
        except Exception:  # noqa: BLE001 - still failing with this dtype: not the mask's
            continue
        raise Mismatch("mask_dtype_unsupported",
                       f"`{name}` raised {error_type} with a {_kind(given.dtype)} mask ({given.dtype}) and returned "
                       f"with the same mask as {dtype}", f"{name}(...)") from None
