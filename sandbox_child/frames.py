"""Frames of the sandbox's wire format: one message as one JSON header plus raw byte buffers.

Both sides of the sandbox cut their byte streams into frames with this module:
the trusted parent (``grader.sandbox``) and the child that runs student code
(``sandbox_child.worker``). What goes inside the JSON header (tensors,
tuples, handles) is ``sandbox_child.codec``'s concern; a frame only
carries bytes, and every length is checked against a limit before anything
is allocated.

Frame layout (all integers little-endian)::

    b"PPOS" | json_len: u32 | n_buffers: u32 | n_buffers x u64 lengths | json | buffers...
"""

from __future__ import annotations

import json
import struct

from sandbox_child.codec import ProtocolError

MAGIC = b"PPOS"
_HEADER = struct.Struct("<4sII")
_LEN = struct.Struct("<Q")

#: Largest JSON header accepted (bytes). Tensors travel as buffers, so the
#: header only holds structure and scalars.
MAX_JSON_BYTES = 16 * 1024 * 1024
#: Most buffers in one frame (one per tensor or generator).
MAX_BUFFERS = 100_000


#: Alignment (bytes) of each buffer in a shared-memory request (see ``shared_layout``).
SHM_ALIGN = 64


def shared_layout(lengths: list[int]) -> tuple[list[tuple[int, int]], int]:
    """Where each buffer of a shared-memory request lies: ``([(offset, length), ...], total_size)``.

    Offsets are multiples of ``SHM_ALIGN``, so that every tensor built on the
    mapping is aligned for its dtype.
    """
    layout, pos = [], 0
    for n in lengths:
        layout.append((pos, int(n)))
        pos += -(-int(n) // SHM_ALIGN) * SHM_ALIGN
    return layout, pos


def pack_frame(header: dict, buffers: list[bytes]) -> list[bytes]:
    """Serialise one message into a list of byte chunks (send them in order).

    Args:
        header:  the JSON-able message (already encoded with ``codec.Encoder``).
        buffers: raw byte strings referenced by index from the header.

    Returns:
        The chunks of the frame; ``b"".join(chunks)`` is the whole frame.

    Raises:
        ProtocolError: if the header is larger than ``MAX_JSON_BYTES`` or
            there are more than ``MAX_BUFFERS`` buffers.
    """
    body = json.dumps(header, separators=(",", ":"), allow_nan=True).encode("utf-8")
    if len(body) > MAX_JSON_BYTES:
        raise ProtocolError(f"message header of {len(body)} bytes exceeds {MAX_JSON_BYTES}")
    if len(buffers) > MAX_BUFFERS:
        raise ProtocolError(f"{len(buffers)} buffers in one message exceed {MAX_BUFFERS}")
    head = _HEADER.pack(MAGIC, len(body), len(buffers)) + b"".join(_LEN.pack(len(b)) for b in buffers)
    return [head, body, *buffers]


class FrameReader:
    """Incremental parser of frames arriving on a byte stream (non-blocking friendly).

    Feed it whatever ``recv`` returned; ``next_frame()`` yields complete
    ``(header, buffers)`` pairs. Every length is checked against limits before
    anything is allocated, so a hostile peer cannot make the reader allocate
    more than ``max_message_bytes``.

    Args:
        max_message_bytes: largest frame accepted (header + buffers), in bytes.
    """

    def __init__(self, max_message_bytes: int) -> None:
        self.max_message_bytes = int(max_message_bytes)
        self._buf = bytearray()
        self._need: tuple[int, int, list[int]] | None = None  # json_len, n, lengths

    def feed(self, data: bytes) -> None:
        """Append received bytes."""
        self._buf += data
        if len(self._buf) > self.max_message_bytes + 1024 and self._need is None:
            self._parse_head()

    def pending_bytes(self) -> int:
        """Bytes received but not yet returned as a frame."""
        return len(self._buf)

    def _parse_head(self) -> bool:
        buf = self._buf
        if len(buf) < _HEADER.size:
            return False
        magic, json_len, n = _HEADER.unpack_from(buf, 0)
        if magic != MAGIC:
            raise ProtocolError(f"bad frame magic {bytes(magic)!r} (expected {MAGIC!r})")
        if json_len > MAX_JSON_BYTES or n > MAX_BUFFERS:
            raise ProtocolError(f"frame header announces {json_len} JSON bytes and {n} buffers: over the limits")
        lens_end = _HEADER.size + n * _LEN.size
        if len(buf) < lens_end:
            return False
        lengths = [_LEN.unpack_from(buf, _HEADER.size + i * _LEN.size)[0] for i in range(n)]
        total = lens_end + json_len + sum(lengths)
        if total > self.max_message_bytes:
            raise ProtocolError(f"a message of {total} bytes exceeds the limit of {self.max_message_bytes} bytes")
        self._need = (json_len, n, lengths)
        return True

    def next_frame(self) -> tuple[dict, list[bytes]] | None:
        """Return the next complete frame, or None if more bytes are needed.

        Raises:
            ProtocolError: bad magic, over-limit sizes, invalid UTF-8/JSON, or
                a header that is not a JSON object.
        """
        if self._need is None and not self._parse_head():
            return None
        json_len, n, lengths = self._need  # type: ignore[misc]
        start = _HEADER.size + n * _LEN.size
        total = start + json_len + sum(lengths)
        if len(self._buf) < total:
            return None
        mv = memoryview(self._buf)
        try:
            header = json.loads(bytes(mv[start : start + json_len]).decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise ProtocolError(f"message header is not valid JSON: {exc}") from None
        if not isinstance(header, dict):
            raise ProtocolError("message header is not a JSON object")
        buffers: list[bytes] = []
        pos = start + json_len
        for length in lengths:
            # bytearray: writable, so the decoder can wrap it in a tensor without another copy.
            buffers.append(bytearray(mv[pos : pos + length]))  # type: ignore[arg-type]
            pos += length
        mv.release()
        del self._buf[:total]
        self._need = None
        return header, buffers
