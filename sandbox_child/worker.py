"""The request loop of a child process: imports one student module and serves calls.

Runs after ``isolate.confine`` (see ``zygote._child_main``), so everything
here may meet hostile code: the student's module is imported *after* the
channel is set up, and every call into student code is wrapped so that any
exception (``SystemExit`` and ``KeyboardInterrupt`` included) becomes an
``err`` reply with its nearest built-in type name and a capped message (no traceback).

Messages (JSON headers, see ``codec``); requests from the parent carry
``{"m": "req", "id": n, "op": ...}``:

======================  ====================================================
op                      does
======================  ====================================================
``call``                ``target.name(*args, **kwargs)`` (target: the module or a handle)
``getattr``             ``target.name``: its value, or ``{"callable": true}``
``call_with_grad``      call with ``requires_grad`` set on named arguments, backprop,
                        return the output and each argument's ``.grad``
``next`` / ``list``     ``next(handle)`` (``stop`` reply at the end) / up to N items
``iter``                ``iter(handle)`` as a handle
``release``             forget handles
``signature``           ``str(inspect.signature(module.name))``
``names``               public names of the module with their kinds
``harness_ex7``         one ``ppo_step`` on the package's model (``harness``)
``probe``               one of ``harness.trusted_operations`` (captured before the import) on the
                        module with the grader's ``plan``; returns raw data the parent judges
``ping``                liveness
======================  ====================================================

A request whose arguments hold tensors carries ``"shm": {"size": n, "bufs":
[[offset, length], ...]}`` instead of frame buffers: its memfd arrives with it
(SCM_RIGHTS) and the arguments are decoded on a shared mapping of it, so that
the parent sees in-place changes (``grader.sandbox.shared_args``).

Replies: ``{"m": "ok", "id": n, "value": ...}``, ``{"m": "err", "id": n,
"type": ..., "message": ..., "traceback": ...}``, ``{"m": "stop", "id": n}``.
While a request runs, known-good proxies may send ``{"m": "cb", ...}``
callbacks to the parent and wait for ``cb_ok`` / ``cb_err`` / ``cb_stop``.

Before the first request: ``setup_error`` (the set-up failed, before any student code ran), else
``setup_done`` (the set-up is over: the student's import comes next), then ``ready`` or ``import_error``.
"""

from __future__ import annotations

import importlib
import inspect
import io
import itertools
import os
import socket
import sys
import zlib
from typing import Any

import torch

from sandbox_child import codec
from sandbox_child.channel import Channel
from ppo_course.sandbox.seeding import seed_globals

#: Packages that never hold anything a student may import (instructor side).
#: Best effort only: the real barrier is the mount namespace + uid drop.
BLOCKED_PACKAGES = ("ppo_reference", "grader", "lms", "solutions", "quiz_bank", "tests")
MAX_TEXT = 8000


class _BlockInstructorImports:
    """A meta-path finder that refuses the instructor packages by name."""

    @classmethod
    def find_spec(cls, fullname: str, path: Any = None, target: Any = None) -> None:
        if fullname.split(".")[0] in BLOCKED_PACKAGES:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


def _safe_text(fn: Any, limit: int = MAX_TEXT) -> str:
    try:
        text = fn()
        if not isinstance(text, str):
            text = str.__str__(text) if isinstance(text, str) else repr(type(text))
    except BaseException as exc:  # noqa: BLE001
        text = f"<unprintable: {type(exc).__name__}>"
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more characters]"


def _builtin_base(cls: type) -> str:
    """The name of the nearest built-in class in `cls`'s MRO (a student's subclass reports its base)."""
    for klass in getattr(cls, "__mro__", ()):
        if getattr(klass, "__module__", None) == "builtins":
            return klass.__name__
    return "Exception"


def describe_exception(exc: BaseException) -> dict:
    """The ``err`` fields for a student exception (never the object itself).

    A pre-filter only: the parent decodes these fields through its own allow-list and caps
    (`grader.sandbox.errors`), since this process runs the student's code. The type is the
    nearest built-in class (a student's own class name never leaves), the message is capped,
    and no traceback is sent.
    """
    name = _builtin_base(type(exc))
    return {"type": name, "base": name, "message": _safe_text(lambda: str(exc), 2000), "traceback": ""}


def syntax_location(exc: BaseException) -> dict:
    """``{"lineno": int, "filename": base name}`` of a SyntaxError at import, else ``{}``.

    Sent with ``import_error`` so that the parent need not parse "(ex4_gae.py, line 12)" out of
    the message. Only when ``str(exc)`` itself shows both (Python's ``SyntaxError.__str__``: a
    file name and a line number); a pre-filter only: the parent accepts a bounded int and a
    plain ``name.py`` (`grader.sandbox.errors.safe_location`), since this process is hostile.
    """
    if not isinstance(exc, SyntaxError):
        return {}
    try:
        lineno, filename = exc.lineno, exc.filename
        if type(lineno) is not int or not isinstance(filename, str) or not filename:
            return {}
        return {"lineno": lineno, "filename": os.path.basename(filename)[:200]}
    except Exception:  # noqa: BLE001 - a student's SyntaxError subclass may raise from its properties
        return {}


class Worker:
    """Serves one student module over a ``Channel`` (see the module docstring)."""

    def __init__(self, channel: Channel, module: Any, config: dict, trusted: dict | None = None) -> None:
        self.channel = channel
        self.module = module
        self.config = config
        # The measurements (``harness.trusted_operations``) and this worker's own methods, bound now:
        # made before the student's import, they are not reached by rebinding a module or class
        # attribute afterwards. ``handle`` uses these, never ``self.<method>``.
        if trusted is None:
            from ppo_course.sandbox import harness

            trusted = harness.trusted_operations()
        self._trusted = dict(trusted)
        self._call_with_grad = self.call_with_grad
        self._target_of = self._target

    def _target(self, req: dict, buffers: list[bytes]) -> Any:
        target = req.get("target")
        if target is None:
            return self.module
        return self.channel.decode(target, buffers)

    def handle(self, req: dict, buffers: list[bytes]) -> tuple[str, Any]:
        """Run one request; returns ``("ok", value)`` or ``("stop", None)``. Student errors propagate."""
        op = req.get("op")
        ch = self.channel
        if op == "ping":
            return "ok", "pong"
        if op == "call":
            fn = getattr(self._target_of(req, buffers), str(req["name"]))
            args = ch.decode(req.get("args", []), buffers)
            kwargs = ch.decode(req.get("kwargs", {"t": "dict", "v": {}}), buffers)
            return "ok", fn(*args, **kwargs)
        if op == "getattr":
            value = getattr(self._target_of(req, buffers), str(req["name"]))
            if callable(value) and not isinstance(value, torch.Tensor):
                return "ok", {"callable": True, "value": None}
            return "ok", {"callable": False, "value": value}
        if op == "call_with_grad":
            return "ok", self._call_with_grad(req, buffers)
        if op == "next":
            try:
                return "ok", next(self._target_of(req, buffers))
            except StopIteration:
                return "stop", None
        if op == "iter":
            return "ok", iter(self._target_of(req, buffers))
        if op == "list":
            limit = int(req.get("limit", 100000))
            return "ok", list(itertools.islice(self._target_of(req, buffers), limit))
        if op == "release":
            for hid in req.get("ids", []):
                obj = ch.objects.pop(int(hid), None)
                if obj is not None:
                    ch._handle_of.pop(id(obj), None)
            return "ok", None
        if op == "signature":
            return "ok", str(inspect.signature(getattr(self.module, str(req["name"]))))
        if op == "names":
            out = {}
            for name, value in vars(self.module).items():
                if not name.startswith("_"):
                    kind = "class" if isinstance(value, type) else "function" if callable(value) else "value"
                    out[name] = kind
            return "ok", out
        if op == "harness_ex7":
            payload = ch.decode(req.get("payload"), buffers)
            return "ok", self._trusted["ppo_step"](self.module, payload)
        if op == "probe":
            probe = self._trusted.get(str(req.get("name")))
            if probe is None or req.get("name") in ("ppo_step", "call_with_grad", "tied_grad"):
                raise ValueError(f"unknown sandbox probe {req.get('name')!r}")
            return "ok", probe(self.module, ch.decode(req.get("plan"), buffers))
        raise ValueError(f"unknown sandbox operation {op!r}")

    def call_with_grad(self, req: dict, buffers: list[bytes]) -> dict:
        """Call ``name`` with fresh leaves on the ``wrt`` arguments and backprop (``harness._make_grad_runner``,
        the copy captured before the student's import).

        The function receives a (non-leaf) copy of each leaf; the gradient reaching each leaf is returned.
        The differentiated output is the returned tensor, or element ``output_index`` (default 0) of a
        returned tuple/list. Without ``grad_output`` it must hold one element (a loss); otherwise
        ``sum(output * grad_output)`` is backpropagated. With ``tie``, every mapped argument is derived from
        one leaf and ``{"theta": dL/dθ}`` is returned instead (``ppo_course.sandbox.tied_grad``).
        """
        ch = self.channel
        fn = getattr(self.module, str(req["name"]))
        args = ch.decode(req.get("args", []), buffers)
        kwargs = ch.decode(req.get("kwargs", {"t": "dict", "v": {}}), buffers)
        if req.get("tie") is not None:  # the shared-leaf gradient (``ppo_course.sandbox.tied_grad``)
            return self._trusted["tied_grad"](fn, args, kwargs, ch.decode(req["tie"], buffers))
        grad_output = ch.decode(req.get("grad_output"), buffers)
        return self._trusted["call_with_grad"](fn, args, kwargs, [str(w) for w in req.get("wrt", [])], grad_output,
                                               req.get("output_index"))


def _flush_std() -> None:
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()  # type: ignore[union-attr]
        except BaseException:  # noqa: BLE001
            pass


def request_seed(req: dict) -> int:
    """The seed of the global RNGs for one request: the request's own ``seed`` field when the parent
    sends one, else a stable hash of (op, name) — never the child's history, the clock or the pid,
    so that the same call of the same test sees the same global random state on every run."""
    seed = req.get("seed")
    if isinstance(seed, int) and not isinstance(seed, bool):
        return seed % (2**63)
    return zlib.crc32(f"{req.get('op')}:{req.get('name')}".encode("utf-8", "backslashreplace"))


def run_child(sock_fd: int, config: dict) -> None:
    """Child entry after the fork: confine, import the module, serve requests. Never returns."""
    sock = socket.socket(fileno=sock_fd)
    sock.setblocking(True)
    channel = Channel(sock, int(config["limits"]["max_message_bytes"]))
    _python_std_streams()
    iso = _confined(channel, config)
    _prepare_imports(channel, config, iso.workdir)
    info = {"pid": os.getpid(), "uid": os.getuid(), "workdir": iso.workdir, "network_isolated": iso.network_isolated,
            "mounts_private": iso.mounts_private, "seccomp": iso.seccomp, "notes": iso.notes}
    module_name = str(config["module"])
    from ppo_course.sandbox import harness

    worker = Worker(channel, None, config, harness.trusted_operations())  # before the student's code runs
    handle = worker.handle  # bound now: rebinding Worker.handle later changes nothing
    serve = _serve  # likewise: rebinding this module's _serve later changes nothing
    seed_globals(zlib.crc32(module_name.encode("utf-8", "backslashreplace")))  # import-time draws too
    # The last message of the set-up: whatever comes after it may come from the student's code, so the
    # parent believes a ``setup_error`` (a grader fault) only before it (``ChildProcess.wait_ready``).
    channel.send({"m": "setup_done"}, [])
    try:
        module = importlib.import_module(module_name)
    except BaseException as exc:  # noqa: BLE001 - SystemExit at import is an import failure too
        _flush_std()
        channel.send({"m": "import_error", **describe_exception(exc), **syntax_location(exc), "info": info}, [])
        os._exit(0)
    _flush_std()
    channel.send({"m": "ready", "info": info}, [])
    worker.module = module
    serve(channel, handle)


def _python_std_streams() -> None:
    """Python-level stdin/stdout/stderr on the fresh descriptors (stdout/stderr: the capture pipes, fds 1 and 2)."""
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="backslashreplace", line_buffering=True)  # type: ignore[misc]
    sys.stderr = sys.__stderr__ = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace", line_buffering=True)  # type: ignore[misc]
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))  # type: ignore[misc]


def _confined(channel: Channel, config: dict) -> Any:
    """Read the submission, then ``isolate.confine``; returns its ``Isolation``. On failure sends a
    ``setup_error`` (``student``: whether the submission is at fault) and exits the child. Runs before any
    of the student's code, and before the ``setup_done`` message that ends what the parent believes of it."""
    from sandbox_child import isolate, submission_files

    try:
        files = submission_files.read_submission(config["submission_dir"], int(config["limits"]["max_submission_bytes"]))
    except (OSError, ValueError) as exc:
        channel.send({"m": "setup_error", "student": True, "message": f"cannot read the submission: {exc}"}, [])
        os._exit(0)
    try:
        return isolate.confine(config, files)
    except BaseException as exc:  # noqa: BLE001
        channel.send({"m": "setup_error", "student": False, "message": f"sandbox set-up failed: {type(exc).__name__}: {exc}"}, [])
        os._exit(0)


def _prepare_imports(channel: Channel, config: dict, workdir: str) -> None:
    """One thread; ``workdir`` first on ``sys.path`` (the grader's paths dropped); instructor packages
    blocked; the known-good proxies installed when the grader asks for them."""
    torch.set_num_threads(1)
    sys.path[:] = [workdir] + [p for p in sys.path if p and p != os.getcwd() and not p.startswith(config.get("workdir", "\0"))]
    sys.meta_path.insert(0, _BlockInstructorImports)  # type: ignore[arg-type]
    importlib.invalidate_caches()
    if config.get("known_good"):
        from sandbox_child import proxies

        proxies.install(channel, config["known_good"])


def _serve(channel: Channel, handle: Any) -> None:
    """The request loop: one reply per request (see the module docstring); never returns."""
    while True:
        req, buffers = channel.recv()
        if req.get("m") != "req":
            channel.send({"m": "err", "id": req.get("id"), "type": "ProtocolError", "message": "expected a request", "traceback": ""}, [])
            continue
        rid = req.get("id")
        try:
            if "shm" in req:
                buffers = channel.shared_buffers(req["shm"])
            seed_globals(request_seed(req))
            kind, value = handle(req, buffers)
        except codec.ProtocolError as exc:
            # A request the grader got wrong (e.g. a released handle): say so, keep serving.
            channel.send({"m": "err", "id": rid, "type": "SandboxProtocolError", "message": str(exc), "traceback": ""}, [])
            continue
        except BaseException as exc:  # noqa: BLE001 - the student's error, reported as data
            _flush_std()
            channel.send({"m": "err", "id": rid, **describe_exception(exc)}, [])
            continue
        _flush_std()
        if kind == "stop":
            channel.send({"m": "stop", "id": rid}, [])
            continue
        try:
            channel.send_value({"m": "ok", "id": rid}, "value", value)
        except BaseException as exc:  # noqa: BLE001 - e.g. a tensor subclass that raises on .detach()
            channel.send({"m": "err", "id": rid, **describe_exception(exc)}, [])
