"""The trusted side of known-good proxies: exercises 1-6 run by the reference in the parent.

For exercise 7 the student's ``ppo_step`` must be graded on its own, with
correct building blocks underneath. The child gets proxy modules
(``sandbox_child.proxies``) whose calls come back here as callbacks; this
module runs ``ppo_reference`` on the decoded data and sends back data only:
values, VJPs, handles to objects kept here, and error type + message (never a
traceback: it would show reference source lines).

What a callback may reach is deliberately narrow, because the child is hostile
and could forge any callback: only the functions and classes in the table,
public (non-underscore) attributes and methods of objects this session made,
``len``/``iter``/``next``. An attribute read returns data only, never a new
handle, so no chain of attributes can walk from a reference object to a module,
a function's globals or ``os``.
"""

from __future__ import annotations

import itertools
import types
from collections import OrderedDict
from typing import Any, Mapping

import torch

from grader.sandbox.errors import safe_message, safe_type_name
from sandbox_child import codec
from sandbox_child.proxies import replace_tensor_leaves, tensor_leaves

#: Public names of exercises 1-6, by module: every name of the stub's ``__all__`` (the contract's functions and
#: classes, and the given ``masked_mean`` helper of exercises 2 and 3, which a student's ppo_step may call too).
PUBLIC_NAMES: dict[str, dict[str, list[str]]] = {
    "ex1_ratio": {"functions": ["logprobs_from_logits", "probability_ratio"], "classes": []},
    "ex2_clipped_loss": {"functions": ["clipped_surrogate_loss", "masked_mean"], "classes": []},
    "ex3_full_loss": {"functions": ["clipped_value_loss", "entropy_from_logits", "ppo_loss", "masked_mean"],
                      "classes": []},
    "ex4_gae": {"functions": ["compute_gae", "whiten"], "classes": []},
    "ex5_rollout_buffer": {"functions": [], "classes": ["RolloutBuffer"]},
    "ex6_kl_reward": {"functions": ["per_token_kl", "kl_shaped_rewards"], "classes": ["AdaptiveKLController"]},
}

MAX_OBJECTS = 10_000
MAX_PENDING_VJPS = 256


class KnownGood:
    """Which trusted implementations stand in for which student modules.

    Args:
        table: ``{module_stem: {name: function or class}}``.
    """

    def __init__(self, table: Mapping[str, Mapping[str, Any]]) -> None:
        self.table = {m: dict(names) for m, names in table.items()}

    @classmethod
    def reference(cls, modules: list[str] | None = None) -> "KnownGood":
        """Exercises 1-6 (or the listed module stems) served by ``ppo_reference``."""
        import ppo_reference

        stems = list(PUBLIC_NAMES) if modules is None else modules
        return cls({m: {n: getattr(ppo_reference, n) for kind in PUBLIC_NAMES[m].values() for n in kind} for m in stems})

    def spec(self) -> dict:
        """What the child must install: ``{module: {"functions": [...], "classes": [...]}}`` (names only)."""
        out = {}
        for module, names in self.table.items():
            out[module] = {
                "functions": sorted(n for n, v in names.items() if not isinstance(v, type)),
                "classes": sorted(n for n, v in names.items() if isinstance(v, type)),
            }
        return out

    def session(self) -> "KnownGoodSession":
        """Fresh per-child state (objects, pending VJPs, generators)."""
        return KnownGoodSession(self)


class _Refused(Exception):
    """A callback asked for something outside what known-good proxies may reach."""


class KnownGoodSession:
    """Serves the callbacks of one child (see the module docstring)."""

    def __init__(self, known_good: KnownGood) -> None:
        self.kg = known_good
        self.objects: dict[int, Any] = {}
        self._ids = itertools.count(1)
        self.generators: dict[int, torch.Generator] = {}
        self.pending: "OrderedDict[int, tuple]" = OrderedDict()
        self._tokens = itertools.count(1)
        self._classes = tuple(v for names in self.kg.table.values() for v in names.values() if isinstance(v, type))

    def release(self) -> None:
        """Drop everything kept for the child (objects, pending gradients, generators): called when it ends.

        A failed test keeps its exception, and with it the child's process object and this session,
        alive in pytest's report: without this, every dead child's callback data would stay in the grader.
        """
        self.objects.clear()
        self.pending.clear()
        self.generators.clear()

    # -- codec hooks ----------------------------------------------------------
    def _make_generator(self, state: torch.Tensor, gid: int) -> torch.Generator:
        gen = self.generators.get(gid) if gid >= 0 else None
        if gen is None:
            gen = torch.Generator()
            if gid >= 0:
                self.generators[gid] = gen
        gen.set_state(state)
        return gen

    def _resolve(self, owner: str, hid: int, type_name: str) -> Any:
        if owner != "parent" or hid not in self.objects:
            raise codec.ProtocolError(f"a callback named an unknown object {hid}")
        return self.objects[hid]

    def decoder(self, buffers: list[bytes]) -> codec.Decoder:
        return codec.Decoder(buffers, resolve_handle=self._resolve, make_generator=self._make_generator)

    def _register(self, obj: Any) -> dict:
        if not (isinstance(obj, self._classes) or isinstance(obj, (types.GeneratorType, Iterator_types))):
            raise _Refused(f"a known-good piece returned a {type(obj).__name__}, which cannot be sent")
        for hid, existing in self.objects.items():
            if existing is obj:
                break
        else:
            if len(self.objects) >= MAX_OBJECTS:
                raise _Refused("too many known-good objects")
            hid = next(self._ids)
            self.objects[hid] = obj
        cls = type(obj)
        return {"t": "handle", "owner": "parent", "id": hid, "type": f"{cls.__module__}.{cls.__qualname__}"}

    # -- dispatch -------------------------------------------------------------
    def handle(self, cb_id: Any, op: str, fields: dict, gens: dict) -> tuple[dict, list[bytes]]:
        """Run one callback; returns the reply frame ``(header, buffers)``."""
        for gid, state in gens.items():
            if isinstance(state, torch.Tensor):
                try:
                    self._make_generator(state, int(gid))
                except (ValueError, RuntimeError, TypeError):  # a state torch refuses (TypeError: not uint8)
                    pass
        header: dict = {"id": cb_id}
        enc = codec.Encoder(on_unknown=self._register)
        try:
            kind, value = self._dispatch(op, fields)
            header["m"] = kind
            if kind == "cb_ok":
                header["value"] = enc.encode(value)
        except StopIteration:
            header = {"id": cb_id, "m": "cb_stop"}
            enc = codec.Encoder(on_unknown=self._register)
        except Exception as exc:  # noqa: BLE001 - the reference's error, as type + message only
            header = {"id": cb_id, "m": "cb_err", "type": safe_type_name(type(exc).__name__),
                      "message": callback_error_message(exc), "where": op}
            enc = codec.Encoder(on_unknown=self._register)
        header["gens"] = enc.encode({str(g): gen.get_state() for g, gen in self.generators.items()})
        return header, enc.buffers

    def _lookup(self, module: Any, name: Any) -> Any:
        try:
            return self.kg.table[str(module)][str(name)]
        except KeyError:
            raise _Refused(f"no known-good {module}.{name}") from None

    def _object(self, hid: Any) -> Any:
        if type(hid) is not int or hid not in self.objects:
            raise _Refused(f"unknown known-good object {hid!r}")
        return self.objects[hid]

    def _dispatch(self, op: str, f: dict) -> tuple[str, Any]:
        if op == "kg_call":
            fn = self._lookup(f.get("module"), f.get("name"))
            if isinstance(fn, type):
                raise _Refused(f"{f.get('name')} is a class")
            args, kwargs = list(f.get("args") or []), dict(f.get("kwargs") or {})
            wrt = [int(i) for i in f.get("wrt") or []]
            with torch.no_grad():
                value = fn(*args, **kwargs)
            token = None
            if wrt:
                token = next(self._tokens)
                self.pending[token] = (fn, args, kwargs, wrt)
                while len(self.pending) > MAX_PENDING_VJPS:
                    self.pending.popitem(last=False)
            return "cb_ok", {"value": value, "token": token}
        if op == "kg_vjp":
            entry = self.pending.pop(f.get("token"), None)  # type: ignore[arg-type]
            if entry is None:
                raise _Refused("this known-good result's gradient was already taken or has expired")
            return "cb_ok", self._vjp(*entry, list(f.get("grad_outputs") or []))
        if op == "kg_new":
            cls = self._lookup(f.get("module"), f.get("name"))
            if not isinstance(cls, type):
                raise _Refused(f"{f.get('name')} is not a class")
            return "cb_ok", cls(*list(f.get("args") or []), **dict(f.get("kwargs") or {}))
        if op == "getattr":
            obj, name = self._object(f.get("handle")), str(f.get("name"))
            if name.startswith("_"):
                raise _Refused(f"attribute {name!r} is not available")
            value = getattr(obj, name)
            if callable(value):
                return "cb_ok", {"callable": True, "value": None}
            codec.encode_value(value)  # data only: raises Unencodable for anything else
            return "cb_ok", {"callable": False, "value": value}
        if op == "call":
            obj, name = self._object(f.get("handle")), str(f.get("name"))
            if name.startswith("_") and name != "__len__":
                raise _Refused(f"method {name!r} is not available")
            if name == "__len__" and not hasattr(type(obj), "__len__"):
                # Python's own answer for an object without a length (a mini-batch generator): `list(it)` and
                # `operator.length_hint` take a TypeError as "no hint", as they do outside the sandbox.
                raise TypeError(f"object of type {type(obj).__name__!r} has no len()")
            method = getattr(obj, name)
            if not callable(method):
                raise _Refused(f"{name!r} is not a method")
            return "cb_ok", method(*list(f.get("args") or []), **dict(f.get("kwargs") or {}))
        if op == "iter":
            return "cb_ok", iter(self._object(f.get("handle")))
        if op == "next":
            return "cb_ok", next(self._object(f.get("handle")))
        raise _Refused(f"unknown callback {op!r}")

    @staticmethod
    def _vjp(fn: Any, args: list, kwargs: dict, wrt: list[int], grad_outputs: list) -> list:
        """Recompute ``fn`` with fresh leaves at ``wrt`` and return d(outputs·grad_outputs)/d(inputs)."""
        structure = [args, kwargs]
        leaves = tensor_leaves(structure)
        if any(i < 0 or i >= len(leaves) for i in wrt):
            raise _Refused("gradient request names an input that does not exist")
        new_leaves = list(leaves)
        inputs = []
        for i in wrt:
            if not leaves[i].is_floating_point():
                raise _Refused("gradient requested for a non-float input")
            new_leaves[i] = leaves[i].detach().clone().requires_grad_(True)
            inputs.append(new_leaves[i])
        new_args, new_kwargs = replace_tensor_leaves(structure, new_leaves)
        with torch.enable_grad():
            outs = tensor_leaves(fn(*new_args, **new_kwargs))
        if len(grad_outputs) != len(outs):
            raise _Refused(f"{len(grad_outputs)} output gradients for {len(outs)} outputs")
        pairs = [(o, g.to(o.dtype)) for o, g in zip(outs, grad_outputs) if g is not None and o.requires_grad]
        if not pairs:
            return [None] * len(inputs)
        grads = torch.autograd.grad([o for o, _ in pairs], inputs, [g for _, g in pairs], allow_unused=True)
        return [None if g is None else g.detach() for g in grads]


# Iterators the reference may hand out (a generator object covers RolloutBuffer.minibatches).
Iterator_types: tuple[type, ...] = (type(iter([])), type(iter(())), type(iter({})))


def callback_error_message(exc: BaseException) -> str:
    """What a failed known-good call may tell the child: never text that could carry a reference output.

    Kept (capped): the refusals of this module and the reference's own input checks (a ValueError
    or TypeError raised in a `ppo_reference` frame, whose messages describe the child's inputs).
    Anything else (e.g. an error deep inside torch, after the reference computed something) is
    reported by its type name alone.
    """
    if isinstance(exc, _Refused):
        return safe_message(str(exc))
    if isinstance(exc, (ValueError, TypeError)):
        tb = exc.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        module = tb.tb_frame.f_globals.get("__name__", "") if tb is not None else ""
        if module == "ppo_reference" or module.startswith("ppo_reference."):
            return safe_message(str(exc))
    return ""
