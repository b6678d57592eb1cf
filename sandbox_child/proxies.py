"""Known-good stand-ins for exercises 1-6, served by the trusted parent (exercise 7 grading).

In ``known_good`` mode the child's ``import ex1_ratio`` ... ``import
ex6_kl_reward`` find proxy modules in ``sys.modules`` (installed before the
student's module is imported). No reference or solution code ever enters the
child: each proxy function is a remote call (``Channel.callback``) to the
parent, which runs ``ppo_reference`` there.

* Functions are differentiable: when some tensor argument requires grad (and
  grad mode is on), the call goes through ``_RemoteFunction``, a
  ``torch.autograd.Function`` whose forward is the remote call and whose
  backward sends ``grad_output`` and receives the vector-Jacobian product for
  the tensor inputs that required grad (the parent recomputes the reference
  with ``torch.autograd.grad``). Non-tensor parts of a result (``ppo_loss``'s
  stats dict) pass through unchanged.
* Classes (``RolloutBuffer``, ``AdaptiveKLController``) are ``ParentObject``
  proxies: the object lives in the parent, attribute reads and method calls
  are callbacks, an iterator it returns is another ``ParentObject``.
* ``torch.Generator`` arguments stay in step: every callback carries the
  child's generator states and the reply brings back the parent's, so a
  ``randperm`` the reference buffer draws advances the student's generator
  exactly as a local call would.
"""

from __future__ import annotations

import sys
import types
from typing import Any

import torch


def tensor_leaves(value: Any) -> list[torch.Tensor]:
    """Tensors inside nested lists/tuples/dict values, in a fixed traversal order.

    The parent uses the same order (``grader.sandbox.known_good``) to match
    the ``wrt`` indices of a differentiable call.
    """
    out: list[torch.Tensor] = []

    def walk(v: Any) -> None:
        if isinstance(v, torch.Tensor):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            for x in v:
                walk(x)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)

    walk(value)
    return out


def replace_tensor_leaves(value: Any, new: list[torch.Tensor]) -> Any:
    """``value`` with its tensor leaves (in ``tensor_leaves`` order) replaced by ``new``."""
    it = iter(new)

    def walk(v: Any) -> Any:
        if isinstance(v, torch.Tensor):
            return next(it)
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, tuple):
            return tuple(walk(x) for x in v)
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        return v

    return walk(value)


class ParentObject:
    """An object living in the trusted parent (a reference ``RolloutBuffer``, an iterator...)."""

    _channel: Any
    _hid: int
    _type_name: str

    @classmethod
    def _from_handle(cls, channel: Any, hid: int, type_name: str) -> "ParentObject":
        obj = object.__new__(cls)
        object.__setattr__(obj, "_channel", channel)
        object.__setattr__(obj, "_hid", hid)
        object.__setattr__(obj, "_type_name", type_name)
        return obj

    def _handle_node(self) -> dict:
        return {"t": "handle", "owner": "parent", "id": self._hid, "type": self._type_name}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        got = self._channel.callback("getattr", handle=self._hid, name=name)
        if got["callable"]:
            return lambda *args, **kwargs: self._channel.callback("call", handle=self._hid, name=name, args=list(args), kwargs=kwargs)
        return got["value"]

    def __len__(self) -> int:
        return self._channel.callback("call", handle=self._hid, name="__len__", args=[], kwargs={})

    def __iter__(self) -> "ParentObject":
        return self._channel.callback("iter", handle=self._hid)

    def __next__(self) -> Any:
        return self._channel.callback("next", handle=self._hid)

    def __repr__(self) -> str:
        return f"<known-good {self._type_name} (lives in the grader)>"


class _RemoteFunction(torch.autograd.Function):
    """Forward: a remote call of a known-good function; backward: a remote VJP."""

    @staticmethod
    def forward(ctx: Any, spec: dict, *diff_inputs: torch.Tensor) -> Any:  # type: ignore[override]
        channel = spec["channel"]
        reply = channel.callback("kg_call", module=spec["module"], name=spec["name"], args=spec["args"],
                                 kwargs=spec["kwargs"], wrt=spec["wrt"])
        value, token = reply["value"], reply["token"]
        outs = tensor_leaves(value)
        spec["value"] = value
        ctx.channel, ctx.token, ctx.n_inputs = channel, token, len(diff_inputs)
        ctx.set_materialize_grads(False)
        nondiff = [o for o in outs if not o.is_floating_point()]
        if nondiff:
            ctx.mark_non_differentiable(*nondiff)
        return tuple(outs)

    @staticmethod
    def backward(ctx: Any, *grad_outputs: torch.Tensor | None) -> Any:  # type: ignore[override]
        grads = ctx.channel.callback("kg_vjp", token=ctx.token, grad_outputs=list(grad_outputs))
        if len(grads) != ctx.n_inputs:
            raise RuntimeError("known-good gradient has the wrong number of inputs")
        return (None, *grads)


def remote_apply(channel: Any, module: str, name: str, args: tuple, kwargs: dict) -> Any:
    """Call the known-good ``module.name`` in the parent, differentiably when needed."""
    flat = tensor_leaves([list(args), kwargs])
    wrt = [i for i, t in enumerate(flat) if t.requires_grad] if torch.is_grad_enabled() else []
    if not wrt:
        reply = channel.callback("kg_call", module=module, name=name, args=list(args), kwargs=kwargs, wrt=[])
        return reply["value"]
    spec = {"channel": channel, "module": module, "name": name, "args": list(args), "kwargs": kwargs, "wrt": wrt}
    outs = _RemoteFunction.apply(spec, *[flat[i] for i in wrt])
    return replace_tensor_leaves(spec["value"], list(outs))


def _make_function(channel: Any, module: str, name: str) -> Any:
    def proxy(*args: Any, **kwargs: Any) -> Any:
        return remote_apply(channel, module, name, args, kwargs)

    proxy.__name__ = proxy.__qualname__ = name
    proxy.__module__ = module
    proxy.__doc__ = f"Known-good {module}.{name}, computed by the grader (exercise 7 grading)."
    return proxy


def _make_class(channel: Any, module: str, name: str) -> type:
    def __new__(cls: type, *args: Any, **kwargs: Any) -> Any:
        made = channel.callback("kg_new", module=module, name=name, args=list(args), kwargs=kwargs)
        obj = object.__new__(cls)
        for attr in ("_channel", "_hid", "_type_name"):
            object.__setattr__(obj, attr, getattr(made, attr))
        return obj

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        pass

    return type(name, (ParentObject,), {"__new__": __new__, "__init__": __init__, "__module__": module})


def install(channel: Any, spec: dict) -> None:
    """Put proxy modules in ``sys.modules`` for every module of ``spec``.

    Args:
        channel: the child's ``channel.Channel``.
        spec: ``{module_stem: {"functions": [...], "classes": [...]}}`` sent by the parent.
    """
    for module_name, names in spec.items():
        mod = types.ModuleType(module_name, f"Known-good {module_name} served by the grader.")
        for fname in names.get("functions", []):
            setattr(mod, fname, _make_function(channel, module_name, fname))
        for cname in names.get("classes", []):
            setattr(mod, cname, _make_class(channel, module_name, cname))
        mod.__known_good__ = True  # type: ignore[attr-defined]
        sys.modules[module_name] = mod
