"""The data-only wire format between the grader and an untrusted child process.

Both sides of the sandbox speak it: the trusted parent (``grader.sandbox``) and
the child that runs student code (``sandbox_child.worker``). Nothing here
ever unpickles, evaluates or imports anything chosen by the other side: a
message is one JSON header plus raw byte buffers (framed by
``sandbox_child.frames``), and decoding builds only
plain Python values and plain ``torch.Tensor`` objects.

Value encoding inside the JSON header:

======================  =====================================================
Python value            JSON node
======================  =====================================================
None, bool, int, str    themselves
float                   itself (NaN/±inf written as JSON extensions)
list                    a JSON list
tuple                   ``{"t": "tuple", "v": [...]}``
dict with str keys      ``{"t": "dict", "v": {...}}``
torch.Tensor            ``{"t": "tensor", "dtype": "float32", "shape": [...], "b": i}``
                        (buffer ``i`` holds the C-contiguous bytes)
torch.Generator (CPU)   ``{"t": "generator", "b": i, "id": n}`` (buffer = RNG state)
an opaque object        ``{"t": "handle", "owner": "child"|"parent", "id": n, "type": "..."}``
======================  =====================================================

A tensor subclass, a float subclass (``numpy.float64``) or a str subclass is
sent as its plain base value: whatever ``__eq__`` or ``__torch_function__``
it overrides stays behind in the child.
"""

from __future__ import annotations

import ctypes
import math
from typing import Any, Callable

import torch

#: Deepest nesting of lists/tuples/dicts accepted either way.
MAX_DEPTH = 64
#: Most dimensions of a tensor.
MAX_NDIM = 16
#: Largest product of a tensor's non-zero dimensions, also for an empty tensor (``[0, 2**70]`` made
#: torch raise TypeError, and ``[0, 2**62, 2**62]`` RuntimeError, inside the grader).
MAX_DIM_PRODUCT = 2**48

#: The bound of an int the grader accepts from a child (int64's range: every int a contract returns fits).
INT64_LIMIT = 2**63

#: dtypes that may cross the channel, by wire name.
DTYPES: dict[str, torch.dtype] = {
    "bool": torch.bool,
    "uint8": torch.uint8,
    "int8": torch.int8,
    "int16": torch.int16,
    "int32": torch.int32,
    "int64": torch.int64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    "float64": torch.float64,
}
_DTYPE_NAMES = {v: k for k, v in DTYPES.items()}


class ProtocolError(Exception):
    """A frame or value that breaks the wire format (malformed, oversized, wrong type).

    Raised by the decoders and frame readers on both sides; the parent turns it
    into a ``StudentCrash`` ("the child sent a malformed message") and stops the child.
    """


class Unencodable(Exception):
    """A value that has no data-only encoding and no handle table to fall back on."""


def tensor_bytes(t: torch.Tensor) -> bytes:
    """The C-contiguous bytes of a CPU tensor's values (any shape, incl. 0-dim and empty)."""
    flat = t.reshape(-1)
    nbytes = flat.numel() * flat.element_size()
    if nbytes == 0:
        return b""
    return ctypes.string_at(flat.data_ptr(), nbytes)


class Encoder:
    """Turns a Python value into a JSON node plus byte buffers.

    Args:
        on_unknown: called with a value that has no data encoding; it must
            return a JSON node (normally a handle from an object table). When
            None, such a value raises ``Unencodable``.
        generator_ids: optional callback giving a stable id to each
            ``torch.Generator`` (used to keep generator states in step across
            the channel); None sends id -1.
    """

    def __init__(
        self,
        on_unknown: Callable[[Any], dict] | None = None,
        generator_ids: Callable[[torch.Generator], int] | None = None,
    ) -> None:
        self.on_unknown = on_unknown
        self.generator_ids = generator_ids
        self.buffers: list[bytes] = []

    def encode(self, value: Any, depth: int = 0) -> Any:
        """Encode ``value``; buffers accumulate in ``self.buffers``.

        Raises:
            Unencodable: for a value with no encoding and no ``on_unknown``.
        """
        if depth > MAX_DEPTH:
            raise Unencodable(f"value nested deeper than {MAX_DEPTH} levels")
        if value is None or value is True or value is False:
            return value
        cls = type(value)
        if cls is int:
            return value
        if cls is float:
            return value
        if cls is str:
            return value
        if isinstance(value, torch.Tensor):
            return self._tensor(value)
        if cls is list:
            return [self.encode(v, depth + 1) for v in value]
        if cls is tuple:
            return {"t": "tuple", "v": [self.encode(v, depth + 1) for v in value]}
        if cls is dict and all(type(k) is str for k in value):
            return {"t": "dict", "v": {k: self.encode(v, depth + 1) for k, v in value.items()}}
        if isinstance(value, torch.Generator) and value.device.type == "cpu":
            self.buffers.append(tensor_bytes(value.get_state()))
            gid = self.generator_ids(value) if self.generator_ids else -1
            return {"t": "generator", "b": len(self.buffers) - 1, "id": gid}
        # Subclasses of plain scalars (numpy.float64, IntEnum, a str subclass)
        # travel as their plain value, read through the base class's own slot
        # so that an overridden __float__/__int__/__str__ is never consulted.
        if isinstance(value, bool):
            return bool(int.__index__(value))
        if isinstance(value, int):
            return int.__index__(value)
        if isinstance(value, float):
            return float.__float__(value)
        if isinstance(value, str):
            return str.__str__(value)
        if self.on_unknown is None:
            raise Unencodable(f"a value of type {cls.__module__}.{cls.__qualname__} cannot cross the sandbox channel")
        return self.on_unknown(value)

    def _tensor(self, value: torch.Tensor) -> dict:
        plain = torch.Tensor.as_subclass(value, torch.Tensor) if type(value) is not torch.Tensor else value
        plain = plain.detach()
        if plain.dtype not in _DTYPE_NAMES:
            raise Unencodable(f"tensor dtype {plain.dtype} cannot cross the sandbox channel")
        if plain.layout != torch.strided:
            plain = plain.to_dense()
        if plain.device.type != "cpu":
            plain = plain.cpu()
        plain = plain.contiguous()
        if plain.dtype == torch.bool:
            # bool storage may hold bytes other than 0/1 (e.g. from .view(torch.bool));
            # normalise so that the parent's decoded tensor is a well-formed bool tensor.
            plain = plain.to(torch.uint8).clamp_(max=1).to(torch.bool)
        self.buffers.append(tensor_bytes(plain))
        return {"t": "tensor", "dtype": _DTYPE_NAMES[plain.dtype], "shape": list(plain.shape), "b": len(self.buffers) - 1}


def encode_value(value: Any, **kwargs: Any) -> tuple[Any, list[bytes]]:
    """Encode one value; returns ``(json_node, buffers)``. See ``Encoder``."""
    enc = Encoder(**kwargs)
    node = enc.encode(value)
    return node, enc.buffers


class Decoder:
    """Turns a JSON node plus buffers back into plain Python values and plain tensors.

    Every node is checked: unknown tags, wrong field types, a buffer whose
    length disagrees with dtype × shape, or nesting deeper than ``MAX_DEPTH``
    raise ``ProtocolError``. Tensors are copied out of the frame into a fresh
    plain ``torch.Tensor`` (``type(t) is torch.Tensor``; never ``requires_grad``).

    Args:
        buffers: the frame's raw buffers.
        resolve_handle: ``(owner, id, type_name) -> object`` for handle nodes;
            None makes a handle a ``ProtocolError``.
        make_generator: ``(state_tensor, gen_id) -> torch.Generator``; the
            default builds a fresh CPU generator with that state.
        shared: the buffers are writable memoryviews of the parent's shared memory
            (a request's arguments, see ``grader.sandbox.shared_args``): tensors,
            bool ones included, are built on them without a copy, so that the
            parent sees any in-place change. Only the child decodes so.
        int_limit: when given, an int outside ``[-int_limit, int_limit)`` is a ``ProtocolError``.
            The parent decodes a child's values with ``INT64_LIMIT``: a 400-digit int made ``float()``
            raise OverflowError, and ``torch.tensor()`` RuntimeError, inside the grader.
    """

    def __init__(
        self,
        buffers: list[bytes],
        resolve_handle: Callable[[str, int, str], Any] | None = None,
        make_generator: Callable[[torch.Tensor, int], torch.Generator] | None = None,
        shared: bool = False,
        int_limit: int | None = None,
    ) -> None:
        self.buffers = buffers
        self.shared = shared
        self.int_limit = int_limit
        self.resolve_handle = resolve_handle
        self.make_generator = make_generator
        self._used: set[int] = set()

    def _buffer(self, node: dict) -> bytearray:
        """The node's buffer as a bytearray this decoder alone owns, so that no two decoded tensors share memory.

        Each buffer backs one node at most (an `Encoder` appends one buffer per tensor or generator): a
        buffer named by many nodes would be decoded into as many copies, a message of a few MiB into
        GiBs in the receiver (the trusted grader), past every limit counted in wire bytes.

        Raises:
            ProtocolError: the index is out of range, or names a buffer an earlier node used.
        """
        idx = node.get("b")
        if type(idx) is not int or not 0 <= idx < len(self.buffers):
            raise ProtocolError(f"buffer index {idx!r} out of range")
        if idx in self._used:
            raise ProtocolError(f"buffer {idx} is named by more than one value")
        self._used.add(idx)
        raw = self.buffers[idx]
        if self.shared and isinstance(raw, memoryview) and not raw.readonly:
            return raw  # shared on purpose (see the ``shared`` argument)
        if not isinstance(raw, bytearray):
            return bytearray(raw)
        return raw

    def decode(self, node: Any, depth: int = 0) -> Any:
        """Decode one node (see the table in the module docstring).

        Raises:
            ProtocolError: on any malformed node.
        """
        if depth > MAX_DEPTH:
            raise ProtocolError(f"value nested deeper than {MAX_DEPTH} levels")
        if type(node) is int and self.int_limit is not None and not -self.int_limit <= node < self.int_limit:
            raise ProtocolError(f"an int of {len(str(abs(node)))} digits, outside int64")
        if node is None or type(node) in (bool, int, float, str):
            return node
        if type(node) is list:
            return [self.decode(v, depth + 1) for v in node]
        if type(node) is not dict:
            raise ProtocolError(f"unexpected JSON node of type {type(node).__name__}")
        tag = node.get("t")
        if tag == "tuple":
            items = node.get("v")
            if type(items) is not list:
                raise ProtocolError("tuple node without a list")
            return tuple(self.decode(v, depth + 1) for v in items)
        if tag == "dict":
            items = node.get("v")
            if type(items) is not dict:
                raise ProtocolError("dict node without an object")
            return {str(k): self.decode(v, depth + 1) for k, v in items.items()}
        if tag == "tensor":
            return self._tensor(node)
        if tag == "generator":
            raw = self._buffer(node)
            state = torch.frombuffer(raw, dtype=torch.uint8) if raw else torch.empty(0, dtype=torch.uint8)
            gid = node.get("id", -1)
            if type(gid) is not int:
                raise ProtocolError("generator id is not an int")
            try:
                if self.make_generator is not None:
                    return self.make_generator(state, gid)
                gen = torch.Generator()
                gen.set_state(state)
                return gen
            except (RuntimeError, ValueError, TypeError) as exc:
                raise ProtocolError(f"invalid generator state: {exc}") from None
        if tag == "handle":
            owner, hid, type_name = node.get("owner"), node.get("id"), node.get("type", "")
            if owner not in ("child", "parent") or type(hid) is not int or type(type_name) is not str:
                raise ProtocolError("malformed handle node")
            if self.resolve_handle is None:
                raise ProtocolError("a handle was sent where only data is accepted")
            return self.resolve_handle(owner, hid, type_name)
        raise ProtocolError(f"unknown value tag {tag!r}")

    def _tensor(self, node: dict) -> torch.Tensor:
        dtype = DTYPES.get(node.get("dtype"))  # type: ignore[arg-type]
        shape = node.get("shape")
        if dtype is None:
            raise ProtocolError(f"tensor dtype {node.get('dtype')!r} is not allowed")
        if type(shape) is not list or len(shape) > MAX_NDIM or any(type(s) is not int or s < 0 for s in shape) \
                or math.prod(s for s in shape if s) > MAX_DIM_PRODUCT:
            raise ProtocolError(f"invalid tensor shape {str(shape)[:200]}")
        raw = self._buffer(node)
        numel = math.prod(shape)
        itemsize = torch.empty((), dtype=dtype).element_size()
        if len(raw) != numel * itemsize:
            raise ProtocolError(f"tensor buffer holds {len(raw)} bytes, but {shape} x {dtype} needs {numel * itemsize}")
        try:  # the checks above should leave torch nothing to refuse; whatever it does is the sender's
            if numel == 0:
                return torch.empty(shape, dtype=dtype)
            if dtype == torch.bool and not (self.shared and isinstance(raw, memoryview)):
                # Only 0/1 bytes make a valid bool tensor; normalise any other byte.
                return torch.frombuffer(raw, dtype=torch.uint8).ne(0).reshape(shape)
            return torch.frombuffer(raw, dtype=dtype).reshape(shape)
        except (RuntimeError, TypeError, ValueError, OverflowError) as exc:
            raise ProtocolError(f"tensor {str(shape)[:200]} x {dtype} cannot be built: {str(exc)[:200]}") from None


def decode_value(node: Any, buffers: list[bytes], **kwargs: Any) -> Any:
    """Decode one node with its frame's buffers. See ``Decoder``."""
    return Decoder(buffers, **kwargs).decode(node)
