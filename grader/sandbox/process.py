"""One sandboxed child process, seen from the trusted parent.

The parent never blocks on the child: every exchange runs one ``selectors``
loop over the protocol socket (non-blocking, both directions) and the child's
stdout/stderr pipes, against a wall-clock deadline. What the child prints is
kept up to ``Limits.max_output_bytes`` and counted beyond; past
``Limits.max_output_kill_bytes`` the child is stopped. Callbacks from
known-good proxies are served inside the same loop, and the time they take is
not charged to the student's deadline.
"""

from __future__ import annotations

import os
import selectors
import socket
import time
from typing import Any, Callable

from grader.sandbox.errors import (SandboxError, StudentCrash, StudentError, StudentImportError,
                                   StudentIteratorExhausted, StudentTimeout)
from grader.sandbox.forkserver import ForkServerClient
from grader.sandbox.limits import Limits
from grader.sandbox.shared_args import SharedArgs
from ppo_course.sandbox import codec


class _Died(Exception):
    """The child closed the channel, broke the protocol, or flooded its output."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


class OutputCapture:
    """Bounded capture of a child's stdout/stderr, in the order the pipes were read."""

    def __init__(self, keep_bytes: int, kill_bytes: int) -> None:
        self.keep_bytes = keep_bytes
        self.kill_bytes = kill_bytes
        self.kept: list[tuple[str, bytes]] = []
        self.kept_total = 0
        self.total = 0

    def add(self, stream: str, data: bytes) -> None:
        self.total += len(data)
        room = self.keep_bytes - self.kept_total
        if room > 0:
            piece = data[:room]
            self.kept.append((stream, piece))
            self.kept_total += len(piece)

    def text(self, stream: str | None = None) -> str:
        """What was kept (``stream``: "stdout", "stderr" or None for both), with a note on what was dropped."""
        raw = b"".join(d for s, d in self.kept if stream is None or s == stream)
        text = raw.decode("utf-8", "backslashreplace")
        dropped = self.total - self.kept_total
        if dropped > 0 and stream is None:
            text += f"\n[... {dropped} more bytes of output not kept]\n"
        return text


class ChildProcess:
    """A forked child serving one module (see ``ppo_course.sandbox.worker``).

    Args:
        server: the fork server to fork from.
        config: the spawn configuration (module, submission_dir, limits, ...).
        limits: the same limits as a model (deadlines, capture sizes).
        resolve_handle: builds a parent-side object for a child handle node.
        on_callback: ``(op, fields, gens) -> (kind, value, gens)`` for known-good
            callbacks, or None when the child has no proxies.
    """

    def __init__(
        self,
        server: ForkServerClient,
        config: dict,
        limits: Limits,
        resolve_handle: Callable[[str, int, str], Any],
        on_callback: Any = None,
    ) -> None:
        self.server = server
        self.limits = limits
        self.resolve_handle = resolve_handle
        self.on_callback = on_callback
        self.module_name = str(config.get("module", ""))
        self.output = OutputCapture(limits.max_output_bytes, limits.max_output_kill_bytes)
        self.reader = codec.FrameReader(limits.max_message_bytes)
        self.alive = False
        self.end_status = ""
        self.info: dict = {}
        self._next_id = 1
        self._send_fds: list[int] = []  # descriptors to attach to the next bytes sent
        #: The last request's arguments in shared memory (None when it had no tensors).
        self.last_shared: SharedArgs | None = None
        #: Paths of the last request's tensor arguments that the child changed in place.
        self.last_modified: list[str] = []
        parent_sock, child_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        for sock in (parent_sock, child_sock):
            # Larger socket buffers: a [B, T, V] tensor crosses in a few system calls.
            for opt in (socket.SO_SNDBUF, socket.SO_RCVBUF):
                try:
                    sock.setsockopt(socket.SOL_SOCKET, opt, 4 << 20)
                except OSError:
                    pass
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            self.pid = server.spawn(config, [child_sock.fileno(), out_w, err_w])
        finally:
            child_sock.close()
            os.close(out_w)
            os.close(err_w)
        self.alive = True
        self.sock = parent_sock
        self.sock.setblocking(False)
        self.pipes = {out_r: "stdout", err_r: "stderr"}
        for fd in self.pipes:
            os.set_blocking(fd, False)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.sock, selectors.EVENT_READ, "sock")
        for fd in self.pipes:
            self.selector.register(fd, selectors.EVENT_READ, "pipe")

    # -- life -------------------------------------------------------------
    def close(self, grace_s: float = 0.0) -> str:
        """Kill the child and everything it started; returns how it ended (idempotent)."""
        if self.alive:
            self.alive = False
            self.drain_output()
            try:
                self.end_status = self.server.finish(self.pid, grace_s)
            except SandboxError as exc:
                self.end_status = f"unknown ({exc})"
            self.selector.close()
            self.sock.close()
            for fd in self.pipes:
                os.close(fd)
        return self.end_status

    def drain_output(self) -> None:
        """Read whatever the child has printed so far (non-blocking)."""
        for fd, stream in list(self.pipes.items()):
            while True:
                try:
                    data = os.read(fd, 1 << 16)
                except (BlockingIOError, OSError):
                    break
                if not data:
                    break
                self.output.add(stream, data)
                if len(data) < (1 << 16):
                    break

    def _died(self, why: str) -> StudentCrash:
        status = self.close(grace_s=0.5)
        return StudentCrash(f"{why}; the process {status}")

    # -- I/O --------------------------------------------------------------
    def _pump(self, out: bytearray, deadline: float) -> tuple[dict, list[bytes]]:
        """Send ``out`` and return the next frame from the child, before ``deadline``.

        Raises:
            _Died: EOF, malformed frame, or output flood.
            TimeoutError: the deadline passed.
        """
        sock_events = selectors.EVENT_READ | (selectors.EVENT_WRITE if out else 0)
        self.selector.modify(self.sock, sock_events, "sock")
        while True:
            try:
                frame = self.reader.next_frame()
            except codec.ProtocolError as exc:
                raise _Died(f"the submission's process sent a malformed message ({exc})") from None
            if frame is not None and not out:
                return frame
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            for key, events in self.selector.select(min(remaining, 1.0)):
                if key.data == "pipe":
                    fd = key.fd
                    try:
                        data = os.read(fd, 1 << 16)
                    except BlockingIOError:
                        continue
                    if not data:
                        self.selector.unregister(fd)
                        continue
                    self.output.add(self.pipes[fd], data)
                    if self.output.total > self.output.kill_bytes:
                        raise _Died(f"the submission printed more than {self.output.kill_bytes} bytes")
                    continue
                if events & selectors.EVENT_WRITE and out:
                    try:
                        if self._send_fds:  # the request's shared memory travels with its first bytes
                            sent = socket.send_fds(self.sock, [out[: 4 << 20]], self._send_fds)
                            self._send_fds = []
                        else:
                            sent = self.sock.send(out[: 4 << 20])
                    except BlockingIOError:
                        sent = 0
                    except OSError:
                        raise _Died("the submission's process closed its channel") from None
                    del out[:sent]
                    if not out:
                        self.selector.modify(self.sock, selectors.EVENT_READ, "sock")
                if events & selectors.EVENT_READ:
                    try:
                        data = self.sock.recv(4 << 20)
                    except BlockingIOError:
                        continue
                    except OSError:
                        data = b""
                    if not data:
                        raise _Died("the submission's process ended unexpectedly")
                    try:
                        self.reader.feed(data)
                    except codec.ProtocolError as exc:
                        raise _Died(f"the submission's process sent a malformed message ({exc})") from None

    def decode(self, node: Any, buffers: list[bytes]) -> Any:
        """Decode a value from the child (plain types, plain tensors, handles)."""
        return codec.Decoder(buffers, resolve_handle=self.resolve_handle).decode(node)

    def wait_ready(self) -> dict:
        """Wait for the module's import; returns the child's isolation info.

        Raises:
            StudentImportError: the import raised, exited, crashed or timed out.
            SandboxError: the sandbox could not be set up (not the student's fault).
        """
        deadline = time.monotonic() + self.limits.import_timeout_s
        try:
            header, _ = self._pump(bytearray(), deadline)
        except TimeoutError:
            self.close()
            raise StudentImportError(f"importing the module took longer than {self.limits.import_timeout_s:g} s", cause="timeout") from None
        except _Died as died:
            status = self.close(grace_s=0.5)
            raise StudentImportError(f"the module's import ended the process ({died.why}; it {status})", cause="crash") from None
        kind = header.get("m")
        if kind == "ready":
            self.info = dict(header.get("info") or {})
            return self.info
        if kind == "import_error":
            self.info = dict(header.get("info") or {})
            self.close()
            type_name = str(header.get("type", "Exception"))
            message = str(header.get("message", ""))
            missing = type_name == "ModuleNotFoundError" and f"'{self.module_name}'" in message
            raise StudentImportError(f"{type_name}: {message}", cause="missing" if missing else "error", type_name=type_name,
                                     traceback=str(header.get("traceback", "")))
        if kind == "setup_error":
            self.close()
            if header.get("student"):
                raise StudentImportError(str(header.get("message")), cause="error")
            raise SandboxError(str(header.get("message")))
        self.close()
        raise StudentImportError(f"the module's process sent {kind!r} instead of its ready message", cause="crash")

    def request(self, op: str, fields: dict, timeout_s: float | None = None) -> Any:
        """Run one operation in the child; returns the decoded value.

        Raises:
            StudentError: the student's code raised.
            StudentIteratorExhausted: a ``next`` on an exhausted iterator (a StopIteration).
            StudentTimeout: past the deadline (the child is killed).
            StudentCrash: the child died or broke the protocol.
        """
        if not self.alive:
            raise StudentCrash(f"the submission's process is no longer running (it {self.end_status})")
        rid = self._next_id
        self._next_id += 1
        enc = codec.Encoder(on_unknown=_parent_handle)
        header = {"m": "req", "id": rid, "op": op}
        for key, value in fields.items():
            header[key] = enc.encode(value)
        if self.last_shared is not None:
            self.last_shared.close()
            self.last_shared = None
        self.last_modified = []
        buffers_out = enc.buffers
        if buffers_out and sum(len(b) for b in buffers_out) > 0:
            # Arguments in shared memory: the parent checks them after the call (shared_args).
            try:
                shared = SharedArgs(header, buffers_out)
            except OSError:
                shared = None  # no memfd here: the arguments travel in the frame (copies, unchecked)
            if shared is not None:
                self.last_shared = shared
                header["shm"] = shared.spec
                buffers_out = []
                self._send_fds = [shared.fd]
        out = bytearray(b"".join(codec.pack_frame(header, buffers_out)))
        timeout = self.limits.call_timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + timeout
        try:
            return self._exchange(rid, out, deadline, timeout)
        finally:
            self._send_fds = []
            if self.last_shared is not None:
                self.last_modified = self.last_shared.modified()

    def _exchange(self, rid: int, out: bytearray, deadline: float, timeout: float) -> Any:
        """Send the request ``out`` and serve the child until its reply (see ``request``)."""
        try:
            while True:
                reply, buffers = self._pump(out, deadline)
                kind = reply.get("m")
                if kind == "cb" and self.on_callback is not None:
                    started = time.monotonic()
                    out = bytearray(self._serve_callback(reply, buffers))
                    deadline += time.monotonic() - started  # the parent's time is not the student's
                    continue
                if reply.get("id") != rid:
                    raise _Died(f"the submission's process sent {kind!r} out of turn")
                if kind == "ok":
                    try:
                        return self.decode(reply.get("value"), buffers)
                    except codec.ProtocolError as exc:
                        raise _Died(f"the submission's process sent a malformed value ({exc})") from None
                if kind == "err":
                    raise StudentError(str(reply.get("type", "Exception")), str(reply.get("message", "")),
                                       str(reply.get("traceback", "")))
                if kind == "stop":
                    raise StudentIteratorExhausted("the submission's iterator ended")
                raise _Died(f"the submission's process sent an unknown reply {kind!r}")
        except TimeoutError:
            self.close()
            raise StudentTimeout(f"the call ran longer than {timeout:g} s and was stopped") from None
        except _Died as died:
            raise self._died(died.why) from None

    def _serve_callback(self, reply: dict, buffers: list[bytes]) -> bytes:
        cb_id = reply.get("id")
        try:
            decoder = self.on_callback.decoder(buffers)
            fields = decoder.decode(reply.get("fields"))
            gens = decoder.decode(reply.get("gens"))
            if not isinstance(fields, dict) or not isinstance(gens, dict):
                raise codec.ProtocolError("callback fields are not dicts")
        except codec.ProtocolError as exc:
            raise _Died(f"the submission's process sent a malformed callback ({exc})") from None
        header, out_buffers = self.on_callback.handle(cb_id, str(reply.get("op")), fields, gens)
        return b"".join(codec.pack_frame(header, out_buffers))


def _parent_handle(value: Any) -> dict:
    """Encode a ``RemoteObject`` argument as the child's own handle."""
    node = getattr(value, "_sandbox_handle_node", None)
    if node is None:
        raise codec.Unencodable(f"a {type(value).__name__} cannot be sent to the sandbox (tensors, numbers, "
                                f"strings, lists, tuples, dicts, generators and RemoteObjects can)")
    return node()
