"""The shared-leaf gradient check: the parent decides "no gradient into the constants" from a value.

A graph fact ("no gradient reached the advantages") exists only in the student's process, where a reply
can state it without any work. Here every float input of the call hangs on one leaf θ (``[n]`` float64,
zeros, so the inputs keep their drawn values): argument ``a`` becomes ``a + reshape(M_a @ θ)``, ``M_a`` drawn
per grader version. The child (``ppo_course.sandbox.tied_grad``) backpropagates

    L = Σ_k sum(out_k * (reshape(P_k @ θ) + w_k))

to θ and replies ``dL/dθ``; the parent computes the same with the reference, every constant's path
detached. For a loss (``P = 0``, ``w = 1``) the answer is ``M_x^T ∂loss/∂x`` over the differentiable inputs
``x``; for outputs that must carry no gradient it is ``Σ_k P_k^T out_k``, the outputs' values. Either way
it is non-zero: a reply must hold the right gradient, and a leak into a constant ``c`` adds
``M_c^T ∂L/∂c``, far above the tolerance. The constant that leaked is named by tying the differentiable
inputs and one constant at a time.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence

import torch

from grader.hidden.draws import draw_generator
from ppo_course.grading_kit.feedback import Mismatch, expect_close
from ppo_course.grading_kit.inputs import fresh_copy


def tie_plan(label: str, args_of: dict[str, torch.Tensor], heads: Sequence[tuple[int | None, Sequence[int], bool]],
             n: int = 12, head_mask: torch.Tensor | None = None) -> dict:
    """A tie for the named arguments and outputs, drawn from the grader's secret under `label`.

    Args:
        label: the draw's label (one per test).
        args_of: argument name -> its value in the call (the map's shape).
        heads: (output index or None, output shape, through_theta): a loss (``through_theta`` False) is
            backpropagated as is (``P = 0, w = 1``); an output that must carry no gradient is multiplied by a
            path of θ (``P`` drawn) plus a drawn weight ``w``.
        n: θ's size.
        head_mask: for outputs of its shape, the real positions: ``P`` and ``w`` are 0 elsewhere (what an
            output holds at padding is not graded here).

    Returns:
        ``{"theta": zeros [n] float64, "maps": {name: [numel, n]}, "heads": [[index, P, w], ...]}``.
    """
    g = draw_generator(label)
    maps = {name: torch.randn(value.numel(), n, generator=g, dtype=torch.float64) / math.sqrt(n)
            for name, value in args_of.items()}
    out = []
    for index, shape, through_theta in heads:
        size = math.prod(shape)
        if through_theta:
            p = torch.randn(size, n, generator=g, dtype=torch.float64) / math.sqrt(n)
            w = torch.rand(size, generator=g, dtype=torch.float64) + 0.5
            if head_mask is not None and tuple(head_mask.shape) == tuple(shape):
                real = head_mask.reshape(-1).bool().to(torch.float64)
                p, w = p * real[:, None], w * real
        else:
            p, w = torch.zeros(size, n, dtype=torch.float64), torch.ones(size, dtype=torch.float64)
        out.append([index, p, w])
    return {"theta": torch.zeros(n, dtype=torch.float64), "maps": maps, "heads": out}


def restricted(tie: dict, names: Sequence[str]) -> dict:
    """`tie` with only the maps of `names` (the others' arguments stay plain values)."""
    return {"theta": tie["theta"], "maps": {k: v for k, v in tie["maps"].items() if k in names},
            "heads": tie["heads"]}


def reference_tied_grad(reference, name: str, args: tuple, kwargs: dict | None, tie: dict,
                        constants: Sequence[str]) -> torch.Tensor:
    """dL/dθ of the reference's `name` under `tie`, the paths of `constants` detached (``[n]`` float64)."""
    fn = getattr(reference, name)
    bound = inspect.signature(fn).bind(*fresh_copy(args), **fresh_copy(kwargs or {}))
    theta = tie["theta"].detach().clone().requires_grad_(True)
    with torch.enable_grad():
        for arg, m in tie["maps"].items():
            value = bound.arguments[arg]
            path = (m @ theta).to(value.dtype).reshape(value.shape)
            bound.arguments[arg] = value + (path.detach() if arg in constants else path)
        output = fn(*bound.args, **bound.kwargs)
        total = theta.sum() * 0
        for index, p, w in tie["heads"]:
            out = output if index is None else output[index]
            total = total + (out * ((p @ theta).to(out.dtype).reshape(out.shape) + w.to(out.dtype).reshape(out.shape))).sum()
        (grad,) = torch.autograd.grad(total, [theta], allow_unused=True)
    return torch.zeros_like(theta) if grad is None else grad.detach()


def _student_tied_grad(student, name: str, args: tuple, kwargs: dict | None, tie: dict, what: str) -> torch.Tensor:
    _, grads = student.call_with_grad(name, tuple(args), dict(kwargs or {}), tie=tie)
    got = grads.get("theta") if isinstance(grads, dict) else None
    if got is not None and (not isinstance(got, torch.Tensor) or got.shape != tie["theta"].shape):
        # The reply is the submission's process's (its worker can be rewritten): the student's, never the grader's.
        raise Mismatch("wrong_shape", "the shared-leaf reply is not a gradient of θ's shape", what)
    return torch.zeros_like(tie["theta"]) if got is None else got.to(torch.float64)


def expect_tied_grad(student, reference, name: str, args: tuple, kwargs: dict | None, tie: dict, *,
                     constants: Sequence[str], diagnosis: str, what: str, rtol: float = 1e-9,
                     atol: float = 1e-9) -> None:
    """Mismatch unless the student's dL/dθ under `tie` is the reference's with the constants detached.

    On a failure, the non-constant arguments are tied alone: if that differs too, the gradient (or, for
    outputs that carry no gradient, the values) is wrong and the Mismatch is the comparison's. Otherwise
    each constant is tied with them: the first whose gradient differs is named (`diagnosis`, "a gradient
    reached `<constant>`").

    Raises:
        Mismatch: as above; student errors propagate.
    """
    label = f"d/dθ of {what} with every input derived from one leaf θ"
    got = _student_tied_grad(student, name, args, kwargs, tie, what)
    want = reference_tied_grad(reference, name, args, kwargs, tie, constants)
    try:
        expect_close(got, want, rtol=rtol, atol=atol, what=label, check_dtype=False)
    except Mismatch:
        free = [a for a in tie["maps"] if a not in constants]
        alone = restricted(tie, free)
        if not _close(_student_tied_grad(student, name, args, kwargs, alone, what),
                      reference_tied_grad(reference, name, args, kwargs, alone, constants), rtol, atol):
            raise  # wrong without any constant tied: the gradient (or the values) itself is wrong
        for constant in constants:
            if constant not in tie["maps"]:
                continue
            one = restricted(tie, [*free, constant])
            got_one = _student_tied_grad(student, name, args, kwargs, one, what)
            want_one = reference_tied_grad(reference, name, args, kwargs, one, constants)
            if not _close(got_one, want_one, rtol, atol):
                raise Mismatch(diagnosis, f"a gradient reached `{constant}`", what) from None
        raise


def _close(got: torch.Tensor, want: torch.Tensor, rtol: float, atol: float) -> bool:
    """Both finite and within the tolerances (NaN is never close)."""
    return bool(torch.isfinite(got).all()) and bool(torch.isclose(got, want, rtol=rtol, atol=atol).all())
