"""One sandboxed child process, seen from the trusted parent.

The parent never blocks on the child: every exchange runs one ``selectors`` loop over the protocol socket
(non-blocking, both directions) and the child's stdout/stderr pipes, against a wall-clock deadline. What the
child prints is kept up to ``Limits.max_output_bytes`` and counted beyond; past ``max_output_kill_bytes`` it stops.

Callbacks from known-good proxies (exercise 7; during the import too) are served in the same loop, in
this trusted process, budgeted per child: a count (``Limits.max_callbacks``), bytes in and out
(``Limits.max_callback_bytes``), this thread's CPU time (``Limits.max_callback_cpu_s``); the first budget
exceeded ends the child, naming it (so does a callback whose reply one message cannot carry). Their time counts
against the call's (or import's) deadline, and every deadline is capped by the submission's one absolute
wall-clock limit (``submission_time.submission_deadline``, from ``SubmissionLimits.timeout_s``).
"""

from __future__ import annotations

import contextlib
import os
import selectors
import socket
import time
from typing import Any, Callable

from grader.sandbox import submission_time
from grader.sandbox.errors import (SandboxError, StudentCrash, StudentError, StudentImportError,
                                   StudentIteratorExhausted, StudentTimeout)
from grader.sandbox.forkserver_client import ForkServerClient
from grader.sandbox.limits import CallbackBudget, Limits
from grader.sandbox.output_capture import OutputCapture
from grader.sandbox.shared_args import SharedArgs
from ppo_course.text_safety import cap
from sandbox_child import codec, frames


class _Died(Exception):
    """The child closed the channel, broke the protocol, or flooded its output."""

    def __init__(self, why: str) -> None:
        # The grader's words only: a protocol error's own text (in parentheses) quotes what the hostile
        # child sent, and a crash's detail reaches feedback.
        if why.startswith("the submission's process sent"):
            why = why.split(" (", 1)[0]
        super().__init__(why)
        self.why = why


class ChildProcess:
    """A forked child serving one module (see ``sandbox_child.worker``).

    Args:
        server: the fork server to fork from.
        config: the spawn configuration (module, submission_dir, limits, ...).
        limits: the same limits as a model (deadlines, capture sizes, callback budgets).
        resolve_handle: builds a parent-side object for a child handle node.
        on_callback: ``(op, fields, gens) -> (kind, value, gens)`` for known-good
            callbacks, or None when the child has no proxies.

    Raises:
        StudentTimeout: the submission's deadline (``submission_deadline``) has already passed.
        SandboxError: the fork server could not start the child.
    """

    def __init__(
        self,
        server: ForkServerClient,
        config: dict,
        limits: Limits,
        resolve_handle: Callable[[str, int, str], Any],
        on_callback: Any = None,
    ) -> None:
        if submission_time.past_deadline():
            raise StudentTimeout(submission_time.out_of_time())  # no child is started for a submission out of time
        self.server = server
        self.limits = limits
        self.resolve_handle = resolve_handle
        self.on_callback = on_callback
        self.module_name = str(config.get("module", ""))
        self.output = OutputCapture(limits.max_output_bytes, limits.max_output_kill_bytes)
        self.reader = frames.FrameReader(limits.max_message_bytes)
        self.alive = False
        self.end_status = ""
        self.info: dict = {}
        self._next_id = 1
        self._send_fds: list[int] = []  # descriptors to attach to the next bytes sent
        #: The last request's arguments in shared memory (None when it had no tensors).
        self.last_shared: SharedArgs | None = None
        #: Paths of the last request's tensor arguments that the child changed in place.
        self.last_modified: list[str] = []
        #: What this child's known-good callbacks have cost so far (see ``_charge_callback``).
        self.callback_budget = CallbackBudget(limits)
        parent_sock, child_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        for sock, opt in ((s, o) for s in (parent_sock, child_sock) for o in (socket.SO_SNDBUF, socket.SO_RCVBUF)):
            with contextlib.suppress(OSError):  # larger socket buffers: a [B, T, V] tensor crosses in a few calls
                sock.setsockopt(socket.SOL_SOCKET, opt, 4 << 20)
        (out_r, out_w), (err_r, err_w) = os.pipe(), os.pipe()
        try:
            self.pid = server.spawn(config, [child_sock.fileno(), out_w, err_w])
        finally:
            child_sock.close()
            for fd in (out_w, err_w):
                os.close(fd)
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
            release = getattr(self.on_callback, "release", None)
            if release is not None:
                release()  # what the grader kept for this child's callbacks goes with it
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
                    self._read_pipe(key.fd)
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

    def _read_pipe(self, fd: int) -> None:
        """Read what is ready on the child's stdout/stderr pipe ``fd`` into ``self.output`` (EOF: stop watching it).

        Raises:
            _Died: the child printed more than ``output.kill_bytes`` in this call.
        """
        try:
            data = os.read(fd, 1 << 16)
        except BlockingIOError:
            return
        if not data:
            self.selector.unregister(fd)
            return
        self.output.add(self.pipes[fd], data)
        if self.output.call_total > self.output.kill_bytes:
            raise _Died(f"the submission printed more than {self.output.kill_bytes / 2**20:g} MiB: "
                        "remove debug prints (the limit is per call)")

    def decode(self, node: Any, buffers: list[bytes]) -> Any:
        """Decode a value from the child (plain types, plain tensors, handles; ints within int64)."""
        return codec.Decoder(buffers, resolve_handle=self.resolve_handle, int_limit=codec.INT64_LIMIT).decode(node)

    def wait_ready(self) -> dict:
        """Wait for the module's import; returns the child's isolation info (kept only as a dict).

        Only a ``setup_error`` before the child's ``setup_done`` (its set-up, before any student code) is the
        sandbox's; after it the import runs and may forge any frame: anything but ``ready`` or ``import_error``
        is then the module's crash.

        Raises:
            StudentImportError: the import raised, exited, crashed or timed out.
            SandboxError: the sandbox could not be set up (not the student's fault).
        """
        deadline, capped = submission_time.cap_deadline(time.monotonic() + self.limits.import_timeout_s)
        header = self._ready_frame(deadline, capped)
        kind = header.get("m")
        if kind == "setup_error":
            self.close()
            if header.get("student"):
                raise StudentImportError(str(header.get("message")), cause="error")
            raise SandboxError(cap(str(header.get("message")), 2000))
        if kind == "setup_done":
            header = self._ready_frame(deadline, capped, importing=True)
            kind = header.get("m")
        else:
            kind = None  # the set-up sends nothing else before setup_done
        info = header.get("info")
        self.info = dict(info) if type(info) is dict else {}
        if kind == "ready":
            return self.info
        self.close()
        if kind == "import_error":
            # The child is hostile: its type name, message and traceback pass the parent's filter (errors.py).
            raise StudentImportError.from_reply(header, self.module_name, echo=self.on_callback is None)
        raise StudentImportError("the module's process sent another message instead of its ready message", cause="crash")

    def _ready_frame(self, deadline: float, capped: bool, importing: bool = False) -> dict:
        """The child's next frame while it sets up and imports (see ``wait_ready``). ``importing``: known-good
        callbacks the import makes (a sibling exercise's object built at import time) are served on the way."""
        out = bytearray()
        try:
            while True:
                header, buffers = self._pump(out, deadline)
                if not (importing and header.get("m") == "cb" and self.on_callback is not None):
                    return header
                out = bytearray(self._serve_callback(header, buffers))
        except TimeoutError:
            self.close()
            if capped:
                raise StudentImportError(submission_time.out_of_time(), cause="timeout") from None
            raise StudentImportError(f"importing the module took longer than {self.limits.import_timeout_s:g} s", cause="timeout") from None
        except _Died as died:
            status = self.close(grace_s=0.5)
            raise StudentImportError(f"the module's import ended the process ({died.why}; it {status})", cause="crash") from None

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
        out = bytearray(b"".join(frames.pack_frame(header, buffers_out)))
        self.output.call_total = 0  # each call may print up to the limit: no test pays for another's prints
        timeout = self.limits.call_timeout_s if timeout_s is None else timeout_s
        deadline, capped = submission_time.cap_deadline(time.monotonic() + timeout)
        try:
            return self._exchange(rid, out, deadline, timeout, capped)
        finally:
            self._send_fds = []
            if self.last_shared is not None:
                self.last_modified = self.last_shared.modified()

    def _exchange(self, rid: int, out: bytearray, deadline: float, timeout: float, capped: bool = False) -> Any:
        """Send the request ``out`` and serve the child until its reply (see ``request``).

        Callbacks are served within the same ``deadline`` (their time is the submission's too).
        """
        try:
            while True:
                reply, buffers = self._pump(out, deadline)
                kind = reply.get("m")
                if kind == "cb" and self.on_callback is not None:
                    out = bytearray(self._serve_callback(reply, buffers))
                    if time.monotonic() > deadline:
                        raise TimeoutError
                    continue
                if reply.get("id") != rid:
                    raise _Died("the submission's process sent a reply out of turn")
                if kind == "ok":
                    try:
                        return self.decode(reply.get("value"), buffers)
                    except codec.ProtocolError as exc:
                        raise _Died(f"the submission's process sent a malformed value ({exc})") from None
                if kind == "err":
                    raise StudentError.from_reply(reply, echo=self.on_callback is None)
                if kind == "stop":
                    raise StudentIteratorExhausted("the submission's iterator ended")
                raise _Died("the submission's process sent an unknown reply")
        except TimeoutError:
            self.close()
            if capped:
                raise StudentTimeout(submission_time.out_of_time()) from None
            raise StudentTimeout(f"the call ran longer than {timeout:g} s and was stopped") from None
        except _Died as died:
            raise self._died(died.why) from None

    def _charge_callback(self, nbytes: int, cpu_s: float) -> None:
        """Add one callback to this child's budgets; raises ``_Died`` naming the first budget exceeded."""
        over = self.callback_budget.charge(nbytes, cpu_s)
        if over is not None:
            raise _Died(over)

    def _serve_callback(self, reply: dict, buffers: list[bytes]) -> bytes:
        """Serve one known-good callback within this child's budgets (see the module docstring)."""
        # Checked before the work: a child over its count or bytes gets nothing more served.
        self._charge_callback(sum(len(b) for b in buffers), 0.0)
        started = time.thread_time()
        try:
            frame = self._serve_callback_unbudgeted(reply, buffers)
        finally:
            cpu = time.thread_time() - started
        self._charge_callback(len(frame), cpu)
        self.callback_budget.count -= 1  # one callback, charged in two halves
        return frame

    def _serve_callback_unbudgeted(self, reply: dict, buffers: list[bytes]) -> bytes:
        cb_id = reply.get("id")
        try:
            if type(cb_id) is not int or type(reply.get("op")) is not str:  # echoed or str()-ed in this process
                raise codec.ProtocolError("its id is not an int or its op not a str")
            decoder = self.on_callback.decoder(buffers)
            fields = decoder.decode(reply.get("fields"))
            gens = decoder.decode(reply.get("gens"))
            if not isinstance(fields, dict) or not isinstance(gens, dict):
                raise codec.ProtocolError("callback fields are not dicts")
        except codec.ProtocolError as exc:
            raise _Died(f"the submission's process sent a malformed callback ({exc})") from None
        header, out_buffers = self.on_callback.handle(cb_id, reply["op"], fields, gens)
        try:
            return b"".join(frames.pack_frame(header, out_buffers))
        except codec.ProtocolError:  # more tensors or structure than a message holds: what the child asked for
            raise _Died("the submission asked a known-good piece for a reply larger than one message may be") from None


def _parent_handle(value: Any) -> dict:
    """Encode a ``RemoteObject`` argument as the child's own handle."""
    node = getattr(value, "_sandbox_handle_node", None)
    if node is None:
        raise codec.Unencodable(f"a {type(value).__name__} cannot be sent to the sandbox (tensors, numbers, "
                                f"strings, lists, tuples, dicts, generators and RemoteObjects can)")
    return node()
