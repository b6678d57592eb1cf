"""The child's end of the protocol socket: frames in and out, handle tables, generator states, callbacks.

``Channel`` is what ``worker.Worker`` serves requests over (see ``worker``'s docstring for the
messages). It keeps the tables that let values stay in the child (handles to the student's objects,
the generators the parent sent), maps the shared argument memory a request brings
(``grader.sandbox.shared_args``), and asks the parent to run a known-good piece (``callback``). Runs
in the sandboxed child, after ``isolate.confine``.
"""

from __future__ import annotations

import mmap
import os
import socket
import weakref
from typing import Any

import torch

from sandbox_child import codec, frames


class Channel:
    """The child's end of the protocol socket (blocking), with handle tables.

    Args:
        sock: the protocol socket (fd 3).
        max_message_bytes: largest frame accepted from the parent.
    """

    def __init__(self, sock: socket.socket, max_message_bytes: int) -> None:
        self.sock = sock
        self.reader = frames.FrameReader(max_message_bytes)
        self.objects: dict[int, Any] = {}
        self._handle_of: dict[int, int] = {}  # id(obj) -> handle, for objects in the table
        self._next_handle = 1
        self._gen_ids: "weakref.WeakKeyDictionary[torch.Generator, int]" = weakref.WeakKeyDictionary()
        self._gens: dict[int, "weakref.ref[torch.Generator]"] = {}
        self._next_cb = 1
        self._fds: list[int] = []  # descriptors received with requests (shared-memory arguments)

    # -- encoding ---------------------------------------------------------
    def register(self, obj: Any) -> dict:
        """Keep ``obj`` in the object table and return its handle node."""
        from sandbox_child.proxies import ParentObject

        if isinstance(obj, ParentObject):  # an object of the parent's goes back as itself
            return obj._handle_node()
        hid = self._handle_of.get(id(obj))
        if hid is None or self.objects.get(hid) is not obj:
            hid = self._next_handle
            self._next_handle += 1
            self.objects[hid] = obj  # the table keeps obj alive, so id(obj) stays unique
            self._handle_of[id(obj)] = hid
        cls = type(obj)
        return {"t": "handle", "owner": "child", "id": hid, "type": f"{cls.__module__}.{cls.__qualname__}"}

    def generator_id(self, gen: torch.Generator) -> int:
        gid = self._gen_ids.get(gen)
        if gid is None:
            gid = len(self._gens) + 1
            self._gen_ids[gen] = gid
            self._gens[gid] = weakref.ref(gen)
        return gid

    def generator_states(self) -> dict[str, Any]:
        """Current states of every generator ever sent to the parent (for known-good sync)."""
        out = {}
        for gid, ref in self._gens.items():
            gen = ref()
            if gen is not None:
                out[str(gid)] = gen.get_state()
        return out

    def apply_generator_states(self, states: dict) -> None:
        for gid, state in states.items():
            ref = self._gens.get(int(gid))
            gen = ref() if ref is not None else None
            if gen is not None and isinstance(state, torch.Tensor):
                gen.set_state(state)

    def _make_generator(self, state: torch.Tensor, gid: int) -> torch.Generator:
        ref = self._gens.get(gid)
        gen = ref() if ref is not None else None
        if gen is None:
            gen = torch.Generator()
        gen.set_state(state)
        return gen

    def _resolve(self, owner: str, hid: int, type_name: str) -> Any:
        if owner == "child":
            if hid not in self.objects:
                raise codec.ProtocolError(f"unknown object handle {hid}")
            return self.objects[hid]
        from sandbox_child.proxies import ParentObject

        return ParentObject._from_handle(self, hid, type_name)

    def encoder(self) -> codec.Encoder:
        return codec.Encoder(on_unknown=self.register, generator_ids=self.generator_id)

    def decode(self, node: Any, buffers: list[bytes]) -> Any:
        return codec.Decoder(buffers, resolve_handle=self._resolve, make_generator=self._make_generator,
                             shared=True).decode(node)

    def shared_buffers(self, spec: Any) -> list[memoryview]:
        """The buffers of a request whose arguments the parent put in shared memory.

        ``spec`` is the header's ``{"size": n, "bufs": [[offset, length], ...]}``; the
        memfd came with the request. The mapping is ``MAP_SHARED``: tensors decoded on
        these views are the parent's bytes, so the parent sees any in-place change
        (``grader.sandbox.shared_args``). The mapping lives as long as a tensor on it.

        Raises:
            codec.ProtocolError: no descriptor came with the request, or a malformed spec.
        """
        if not self._fds:
            raise codec.ProtocolError("a shared-memory request came without its descriptor")
        fd = self._fds.pop(0)
        try:
            size, bufs = spec.get("size"), spec.get("bufs")
            if type(size) is not int or size <= 0 or type(bufs) is not list:
                raise codec.ProtocolError("malformed shared-memory spec")
            view = memoryview(mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE))
        finally:
            os.close(fd)  # mmap keeps its own duplicate
        out = []
        for item in bufs:
            off, n = item
            if type(off) is not int or type(n) is not int or off < 0 or n < 0 or off + n > size:
                raise codec.ProtocolError("shared-memory buffer out of range")
            out.append(view[off : off + n])
        return out

    # -- I/O --------------------------------------------------------------
    def send(self, header: dict, buffers: list[bytes]) -> None:
        for chunk in frames.pack_frame(header, buffers):
            self.sock.sendall(chunk)

    def send_value(self, header: dict, key: str, value: Any) -> None:
        """Send ``header`` with ``header[key] = encode(value)``."""
        enc = self.encoder()
        header[key] = enc.encode(value)
        self.send(header, enc.buffers)

    def recv(self) -> tuple[dict, list[bytes]]:
        while True:
            frame = self.reader.next_frame()
            if frame is not None:
                return frame
            data, fds, _, _ = socket.recv_fds(self.sock, 1 << 20, 4)
            self._fds.extend(fds)
            if not data:
                os._exit(0)  # the parent closed the channel: nothing left to do
            self.reader.feed(data)

    def callback(self, op: str, **fields: Any) -> Any:
        """Ask the parent to run a known-good piece; returns its decoded value.

        Raises:
            StopIteration: when the parent's iterator is exhausted.
            Exception: the reference's exception, rebuilt as a builtin type
                of the same name when there is one (else RuntimeError).
        """
        cb_id = self._next_cb
        self._next_cb += 1
        enc = self.encoder()
        header = {"m": "cb", "id": cb_id, "op": op, "fields": enc.encode(fields), "gens": enc.encode(self.generator_states())}
        self.send(header, enc.buffers)
        reply, buffers = self.recv()
        if reply.get("id") != cb_id:
            raise codec.ProtocolError("callback reply out of order")
        if "gens" in reply:
            self.apply_generator_states(self.decode(reply["gens"], buffers))
        kind = reply.get("m")
        if kind == "cb_ok":
            return self.decode(reply.get("value"), buffers)
        if kind == "cb_stop":
            raise StopIteration
        if kind == "cb_err":
            import builtins

            exc_type = getattr(builtins, str(reply.get("type", "RuntimeError")), None)
            if not (isinstance(exc_type, type) and issubclass(exc_type, Exception)):
                exc_type = RuntimeError
            raise exc_type(f"(known-good {reply.get('where', 'piece')}) {reply.get('message', '')}")
        raise codec.ProtocolError(f"unexpected reply {kind!r} to a callback")
