"""Calls of the reference and of the student's code that the hidden tests and the tie-break share.

The reference's answers are cached per grader version and the call's exact contents
(``grader.hidden.cache``): the hidden inputs are the same for every student, so a warm
worker computes each answer once. The student's gradients come through the provider's
``call_with_grad`` (the child's probe, bound before the student's import).
Used by ``grader.hidden.support`` (comparisons) and ``grader.hidden.tie_break``
(the second look that separates catalogued mistakes), which import nothing of each other's.
"""

from __future__ import annotations

from typing import Any

import torch

from grader.hidden.cache import cached
from ppo_course.grading_kit.feedback import Mismatch
from ppo_course.grading_kit.inputs import fresh_copy


def _is_reference(reference) -> bool:
    """True for the trusted `ppo_reference` module itself (the only reference whose answers are cached)."""
    import sys

    return reference is sys.modules.get("ppo_reference")


def reference_call(reference, name: str, args: tuple, kwargs: dict | None = None) -> Any:
    """The reference's answer on copies of the arguments (detached).

    Cached per grader version and the arguments' exact contents (`grader.hidden.cache`, kept on disk
    too): the hidden inputs are the same for every student, so a warm worker computes each answer once.
    """
    def run():
        return fresh_copy(getattr(reference, name)(*fresh_copy(args), **fresh_copy(kwargs or {})))

    if not _is_reference(reference):
        return run()
    return cached("reference_call", (name, tuple(args), dict(kwargs or {})), run, persist=True)


def reference_grads(reference, name: str, args: tuple, kwargs: dict | None, wrt: tuple[str, ...],
                    grad_output: torch.Tensor | None = None, output_index: int = 0) -> dict[str, torch.Tensor | None]:
    """Gradients of the reference's output w.r.t. the named parameters (same rule as call_with_grad).

    Cached per grader version and the call's exact contents, like `reference_call`."""
    def run():
        return _reference_grads(reference, name, args, kwargs, wrt, grad_output, output_index)

    if not _is_reference(reference):
        return run()
    return cached("reference_grads", (name, tuple(args), dict(kwargs or {}), tuple(wrt), grad_output, output_index),
                  run, persist=True)


def _reference_grads(reference, name: str, args: tuple, kwargs: dict | None, wrt: tuple[str, ...],
                     grad_output: torch.Tensor | None, output_index: int) -> dict[str, torch.Tensor | None]:
    import inspect

    fn = getattr(reference, name)
    bound = inspect.signature(fn).bind(*fresh_copy(args), **fresh_copy(kwargs or {}))
    leaves = {}
    for param in wrt:
        leaves[param] = bound.arguments[param].detach().clone().requires_grad_(True)
        bound.arguments[param] = leaves[param]
    with torch.enable_grad():
        out = fn(*bound.args, **bound.kwargs)
        head = out[output_index] if isinstance(out, (tuple, list)) else out
        if not head.requires_grad:
            return {p: None for p in wrt}
        g_out = torch.ones_like(head) if grad_output is None else grad_output.to(head.dtype)
        got = torch.autograd.grad(head, list(leaves.values()), g_out, allow_unused=True)
    return {p: g for p, g in zip(leaves, got)}


def student_grads(student, name: str, args: tuple, kwargs: dict | None, wrt: tuple[str, ...],
                  grad_output: torch.Tensor | None = None, what: str = "") -> tuple[Any, dict]:
    """(output, grads) of the student's `name` through the provider's call_with_grad."""
    out, grads = student.call_with_grad(name, tuple(args), dict(kwargs or {}), wrt=wrt, grad_output=grad_output)
    if not isinstance(grads, dict):
        raise Mismatch("grader_error", f"call_with_grad returned {type(grads).__name__}", what or name)
    return out, grads
