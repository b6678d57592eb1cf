"""``RemoteObject``: the parent's handle on a value the sandboxed child could not send back as data.

An instance of the student's class (a ``RolloutBuffer``, an ``AdaptiveKLController``), a generator or
an iterator stays in the child; the parent holds its handle id and reaches it through its
``RemoteModule`` (``grader.sandbox.remote``): method calls, attributes, ``next``, ``len``. Handles from
a child that has since died or been replaced raise ``StudentCrash`` when used.
"""

from __future__ import annotations

import sys
from typing import Any, Iterator

import torch

from grader.sandbox.errors import StudentError, StudentProtocolError


def _safe_qualname(name: object, limit: int = 80) -> str:
    """`name` when it is a dotted identifier of at most `limit` characters, else "object"."""
    if isinstance(name, str) and len(name) <= limit and all(p.isidentifier() and p.isascii() for p in name.split(".")):
        return name
    return "object"


class RemoteObject:
    """An object living in the child (e.g. the student's ``RolloutBuffer``, an iterator).

    ``obj.method(...)`` and ``obj.attribute`` work through ``__getattr__`` (one
    round trip to learn whether the name is callable); ``call``, ``getattr``,
    ``next``, ``list`` and ``len()`` are explicit forms.

    Attributes:
        type_name: ``module.QualName`` of the object's class in the child.
    """

    def __init__(self, module: Any, hid: int, type_name: str, generation: int) -> None:
        # module: the owning grader.sandbox.remote.RemoteModule (not imported here: remote imports this module).
        self._module = module
        self._hid = hid
        # Child-chosen text: kept as a short dotted identifier only (it can reach error messages).
        self.type_name = _safe_qualname(type_name)
        self._generation = generation
        self._released = False
        #: Names the stub declares methods (set by ``GuardedModule.new``): always called in the child, never
        #: read back as data, so a student's ``update = 5`` is the student's TypeError.
        self.methods: frozenset[str] = frozenset()

    def _sandbox_handle_node(self) -> dict:
        if self._released:
            raise ValueError(f"{self!r} was released; it can no longer be used")
        self._module._check_generation(self._generation, self.type_name)
        return {"t": "handle", "owner": "child", "id": self._hid, "type": self.type_name}

    def _request(self, op: str, timeout_s: float | None = None, **fields: Any) -> Any:
        return self._module._request(op, {"target": self, **fields}, timeout_s, generation=self._generation, what=self.type_name)

    def call(self, name: str, *args: Any, gen_seed: int | None = None, **kwargs: Any) -> Any:
        """Call method ``name``; ``gen_seed=s`` passes ``generator=torch.Generator().manual_seed(s)``."""
        if gen_seed is not None:
            kwargs["generator"] = torch.Generator().manual_seed(int(gen_seed))
        return self._request("call", name=name, args=list(args), kwargs=kwargs)

    def getattr(self, name: str) -> Any:
        """The attribute's value, or a bound remote method if it is callable (always for a name in ``methods``)."""
        if name in self.methods:
            return lambda *args, **kwargs: self.call(name, *args, **kwargs)
        got = self._request("getattr", name=name)
        if type(got) is not dict or set(got) != {"callable", "value"} or type(got["callable"]) is not bool:
            raise self._module._malformed("getattr")
        if got["callable"]:
            return lambda *args, **kwargs: self.call(name, *args, **kwargs)
        return got["value"]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return self.getattr(name)

    def next(self) -> Any:
        """``next(obj)`` in the child; raises StopIteration at the end."""
        return self._request("next")

    def __next__(self) -> Any:
        return self.next()

    def __iter__(self) -> Iterator[Any]:
        it = self._request("iter")
        if isinstance(it, RemoteObject) and it._hid == self._hid:
            return self
        return it

    def list(self, limit: int = 100_000) -> list:
        """Up to ``limit`` items of the iterable, in one round trip."""
        return self._request("list", limit=int(limit))

    def __len__(self) -> int:
        try:
            n = self.call("__len__")
        except StudentError as exc:
            if exc.type_name in ("AttributeError", "TypeError"):
                # list(obj) probes len(); an object without one is simply unsized.
                raise TypeError(f"object of type {self.type_name} has no len()") from None
            raise
        if type(n) is not int or not 0 <= n <= sys.maxsize:
            what = type(n).__name__ if type(n) is not int else "negative int" if n < 0 else "int too large for len()"
            raise StudentProtocolError(f"len() of the student's {self.type_name} returned a {what}")
        return n

    def __bool__(self) -> bool:
        # Without this, truth testing would fall back to a remote __len__ (and raise
        # for objects without one): a handle is always true, like a plain object.
        return True

    def release(self) -> None:
        """Let the child forget this object."""
        if self._released:
            return
        if self._generation == self._module._generation and self._module._child is not None and self._module._child.alive:
            self._module._request("release", {"ids": [self._hid]}, None)
        self._released = True

    def __repr__(self) -> str:
        return f"<RemoteObject {self.type_name} #{self._hid} in the sandbox>"
