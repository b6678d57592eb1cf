"""The shared-leaf gradient: every float input of a call derived from one leaf θ, one gradient back.

The parent sends a flat leaf ``θ`` (float64, ``[n]``) and, per argument, a matrix ``M`` (``[numel(arg), n]``):
the argument becomes ``value + reshape(M @ θ)``, so the differentiable inputs and the constants of a loss
(advantages, logp_old, returns, scores, ...) all hang on the same leaf. The scalar that is backpropagated is
``Σ_k sum(out_k * (reshape(P_k @ θ) + w_k))`` over chosen outputs ``k`` of the call, and ``dL/dθ`` (``[n]``)
is the reply. The parent computes the same quantity with the reference, the constants' paths detached, and
compares: a gradient that leaks into a constant adds a term; an output that must carry no graph still
multiplies a path of θ, so the expected gradient (its values times ``P_k``) is non-zero and a reply that
claims "no gradient" without the right values fails (``grader.hidden.tied``).

Made before the student's import (``harness.trusted_operations``), with its primitives bound then, like
``harness._make_grad_runner``.
"""

from __future__ import annotations

from typing import Any


def _make_pieces() -> tuple[Any, Any]:
    """``(derive, head_term)`` of :func:`make_tied_runner`, with their primitives bound now."""
    import torch

    base = torch._C.TensorBase.__dict__
    is_floating, clone, detach, numel = base["is_floating_point"], base["clone"], base["detach"], base["numel"]
    reshape, to_dtype, dtype_of, shape_of = base["reshape"], base["to"], base["dtype"].__get__, base["shape"].__get__
    matmul, add, mul, tsum = base["matmul"], base["add"], base["mul"], base["sum"]
    tensor_base, is_instance, as_int, length = torch._C.TensorBase, isinstance, int, len

    def derive(value: Any, m: Any, theta: Any, name: str) -> Any:
        if not is_instance(value, tensor_base) or not is_floating(value):
            raise TypeError(f"tied_grad: argument {name!r} is not a floating-point tensor")
        path = reshape(to_dtype(matmul(m, theta), dtype_of(value)), shape_of(value))
        return add(clone(detach(value)), path)

    def head_term(output: Any, index: Any, p: Any, w: Any, theta: Any) -> Any:
        out = output
        if is_instance(output, (list, tuple)) and not is_instance(output, tensor_base):
            if index is None or not 0 <= as_int(index) < length(output):
                raise ValueError(f"tied_grad: the output has no element {index!r}")
            out = output[as_int(index)]
        if not is_instance(out, tensor_base) or numel(out) != numel(w):
            raise ValueError("tied_grad: an output is not a tensor of the expected size")
        weight = add(reshape(to_dtype(matmul(p, theta), dtype_of(out)), shape_of(out)),
                     reshape(to_dtype(w, dtype_of(out)), shape_of(out)))
        return tsum(mul(out, weight))

    return derive, head_term


def make_tied_runner() -> Any:
    """``tied_grad(fn, args, kwargs, tie) -> {"output": ..., "grads": {"theta": Tensor or None}}``.

    ``tie``: ``{"theta": Tensor[n] float64, "maps": {arg name: Tensor[numel(arg), n]}, "heads":
    [[output index or None, P: Tensor[numel(out), n], w: Tensor[numel(out)]], ...]}``.

    Raises (from the returned function):
        TypeError: a mapped argument the call does not bind, or not a floating-point tensor; ValueError: a
        head whose output is missing, not a tensor, or of another size than its ``P``; whatever the
        student's code raises.
    """
    import inspect

    import torch

    base = torch._C.TensorBase.__dict__
    run_backward = torch.autograd.variable.Variable._execution_engine.run_backward
    requires_grad, detach, clone = base["requires_grad"].__get__, base["detach"], base["clone"]
    requires_grad_, add, dtype_of = base["requires_grad_"], base["add"], base["dtype"].__get__
    set_grad_enabled, is_grad_enabled = torch._C._set_grad_enabled, torch._C.is_grad_enabled
    no_torch_function, ones = torch._C.DisableTorchFunction, torch.ones
    signature, as_str, as_tuple, as_list = inspect.signature, str, tuple, list
    derive, head_term = _make_pieces()

    def tied_grad(fn: Any, args: list, kwargs: dict, tie: dict) -> dict:
        bound = signature(fn).bind(*args, **kwargs)
        previous = is_grad_enabled()
        set_grad_enabled(True)
        try:
            with no_torch_function():
                theta = requires_grad_(clone(detach(tie["theta"])), True)
                for name, m in tie["maps"].items():
                    if as_str(name) not in bound.arguments:
                        raise TypeError(f"tied_grad: argument {name!r} was not passed")
                    bound.arguments[as_str(name)] = derive(bound.arguments[as_str(name)], m, theta, as_str(name))
            output = fn(*bound.args, **bound.kwargs)
            total = None
            with no_torch_function():
                for index, p, w in tie["heads"]:
                    term = head_term(output, index, p, w, theta)
                    total = term if total is None else add(total, term)
        finally:
            set_grad_enabled(previous)
        grad = None
        with no_torch_function():
            if total is not None and requires_grad(total):
                seed = ones((), dtype=dtype_of(total))
                grad = as_list(run_backward(as_tuple([total]), as_tuple([seed]), False, False, as_tuple([theta]),
                                            True, False))[0]
        return {"output": output, "grads": {"theta": grad}}

    return tied_grad
