"""The grader's handle on the fork server (trusted, parent side; the server is ``sandbox_child.zygote``).

One fork server per grader process is started lazily (``ForkServerClient.shared()``),
or early without waiting for it (``ForkServerClient.start_early()``, at the start of a
command, so that its ``import torch`` overlaps the grader's own imports), and reused by every ``Sandbox``: it is exec'd fresh (``python -I``), with a
scrubbed environment, so it holds nothing of the grader's memory (no reference,
no hidden input), and pays ``import torch`` once.

Batch grading runs one worker process per student; they can share one fork
server (and its ``import torch``) instead of starting one each::

    server = ForkServerClient(share=True)          # in the batch parent
    env = {**os.environ, **server.share_env()}     # for every worker it starts

A worker's ``ForkServerClient.shared()`` then connects to ``$PPO_COURSE_FORKSERVER``
(falling back to a server of its own if that fails). Each connection owns
the children it spawns; a worker that dies or is killed takes them along.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from grader.sandbox.errors import SandboxError

#: Stage 1 of the server (``sandbox_child.fixed_root.launch``): SRC_ROOT VENV CTL_FD PARENT_PID warm|cold LISTEN.
_LAUNCH = (
    "import sys, importlib.util\n"
    "if importlib.util.find_spec('ppo_course') is None: sys.path.append(sys.argv[1])\n"
    "from sandbox_child.fixed_root import launch\n"
    "launch(sys.argv[1:])\n"
)


def _src_root_and_venv() -> tuple[str, str]:
    """The folder holding ``ppo_course`` and this interpreter's venv ('' when it runs in none)."""
    spec = importlib.util.find_spec("ppo_course")
    root = str(Path(spec.origin).parent.parent) if spec and spec.origin else ""
    return root, (sys.prefix if sys.prefix != sys.base_prefix else "")


def _fixed_layout() -> dict[str, str]:
    from sandbox_child import fixed_root

    return fixed_root.layout(*_src_root_and_venv())


def _server_env() -> dict[str, str]:
    # Nothing of the grader's environment (tokens, paths to hidden data) is passed on.
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "CUDA_VISIBLE_DEVICES": "",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
    }


#: Environment variable naming a shared fork server's socket (set by ``share_env``).
SHARE_ENV = "PPO_COURSE_FORKSERVER"


class ForkServerClient:
    """Starts (or connects to) one fork-server process and talks to it (thread-safe).

    Args:
        start_timeout_s: how long to wait for the server's hello (its ``import torch``).
        warm_up: run one forward/backward/Adam step of the toy model before the
            first fork (≈2 s once, saves ≈2 s in every child that trains).
        share: also listen on a Unix socket (mode 0600, in a fresh 0700 folder)
            so that other grader processes can ``connect`` (see ``share_env``).

        wait: read the server's hello now (the default). With False the process is
            started and the hello is read on first use (``finish_start``, which
            ``shared()`` and every command call), so the server's ``import torch``
            runs while this process does its own work.

    Raises:
        SandboxError: if the server cannot be started (with ``wait=False``: from
            ``finish_start``, also when the server died before its first use).
    """

    #: Longest wait for the answer to one control command, in seconds.
    COMMAND_TIMEOUT_S = 60.0

    _shared: "ForkServerClient | None" = None
    _start_timeout_s: float | None = None  # set while a server started with wait=False has not said hello
    _shared_lock = threading.Lock()

    def __init__(self, start_timeout_s: float = 120.0, warm_up: bool = True, share: bool = False,
                 wait: bool = True) -> None:
        self._lock = threading.Lock()
        self._start_lock = threading.Lock()
        self._start_timeout_s: float | None = start_timeout_s
        self._broken = False
        self.creator_pid = os.getpid()
        self.listen_path: str | None = None
        self._listen_dir: str | None = None
        if share:
            self._listen_dir = tempfile.mkdtemp(prefix="ppo-course-forkserver-")  # 0700
            self.listen_path = os.path.join(self._listen_dir, "control.sock")
        parent_sock, child_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        root, venv = _src_root_and_venv()
        try:
            self.proc: subprocess.Popen | None = subprocess.Popen(
                # -P -s and a fixed environment (-I's isolation) without -E, so that PYTHONHASHSEED
                # applies: str hashes, hence set order, are the same in every child on every run.
                # Stage 1 re-execs the server with the venv and the package at fixed paths.
                [sys.executable, "-P", "-s", "-c", _LAUNCH, root, venv, str(child_sock.fileno()), str(os.getpid()),
                 "warm" if warm_up else "cold", self.listen_path or ""],
                pass_fds=[child_sock.fileno()],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                env=_server_env(),
                cwd="/",
                start_new_session=True,
            )
        finally:
            child_sock.close()
        self.sock = parent_sock
        if wait:
            self.finish_start()

    @classmethod
    def connect(cls, path: str, timeout_s: float = 10.0) -> "ForkServerClient":
        """A client of the shared fork server listening at ``path`` (started by another process).

        Raises:
            SandboxError: if nothing answers there.
        """
        self = object.__new__(cls)
        self._lock = threading.Lock()
        self._start_lock = threading.Lock()
        self._start_timeout_s = None
        self._broken = False
        self.creator_pid = os.getpid()
        self.listen_path = None
        self._listen_dir = None
        self.proc = None
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.sock.settimeout(timeout_s)
            self.sock.connect(path)
        except OSError as exc:
            self.sock.close()
            raise SandboxError(f"no shared sandbox fork server at {path}: {exc}") from None
        self._handshake(timeout_s)
        return self

    @property
    def pending(self) -> bool:
        """True while the server was started (``wait=False``) but its hello is not read yet."""
        return self._start_timeout_s is not None

    def finish_start(self) -> None:
        """Wait for the hello of a server started with ``wait=False`` (nothing to do otherwise).

        Raises:
            SandboxError: if the server does not say hello within ``start_timeout_s`` of this call,
                or died before (the same error as a server that fails to start in the constructor).
        """
        if self._start_timeout_s is None:
            return
        with self._start_lock:
            timeout_s, self._start_timeout_s = self._start_timeout_s, None
            if timeout_s is not None:
                self._handshake(timeout_s)

    def _handshake(self, timeout_s: float) -> None:
        self.sock.settimeout(timeout_s)
        try:
            hello = self._recv()
        except (OSError, SandboxError, ValueError) as exc:
            self._mark_broken()
            raise SandboxError(f"the sandbox fork server did not start: {exc}") from None
        # Every command is answered at once or after a kill; a silent server is broken.
        self.sock.settimeout(self.COMMAND_TIMEOUT_S)
        self.pid = int(hello["pid"])
        self.root = bool(hello["root"])
        self.probe = dict(hello.get("probe", {}))
        # The server sees the venv and the package at fixed paths: the paths sent with a spawn are rewritten.
        self.fixed_layout = _fixed_layout() if hello.get("fixed_root") else {}
        if self.proc is not None:
            for feature, ok in self.probe.items():
                if not ok:
                    print(f"ppo-course sandbox: this machine refuses a {feature.replace('_', ' ')}; "
                          f"see docs/threat_model.md for what that leaves undefended", file=sys.stderr)

    def share_env(self) -> dict[str, str]:
        """Environment entries that make worker processes connect to this server.

        Raises:
            ValueError: if this server was not started with ``share=True``.
        """
        if not self.listen_path:
            raise ValueError("this fork server does not listen for other processes (start it with share=True)")
        return {SHARE_ENV: self.listen_path}

    def _mark_broken(self) -> None:
        self._broken = True
        if self.proc is not None:
            self.proc.kill()
        else:
            try:
                self.sock.close()
            except OSError:
                pass

    @classmethod
    def shared(cls, share: bool = False) -> "ForkServerClient":
        """The process-wide fork server, (re)made when missing, dead, or inherited across a fork.

        Connects to ``$PPO_COURSE_FORKSERVER`` when set (a batch parent's shared
        server), else starts one of this process's own (listening for other
        processes when ``share``; an existing server is returned as it is).
        """
        with cls._shared_lock:
            srv = cls._shared
            if srv is not None and srv.pending and srv.creator_pid == os.getpid():
                try:  # started by start_early: its failure is this call's, never a silent restart
                    srv.finish_start()
                except SandboxError:
                    cls._shared = None
                    raise
            if srv is None or srv.creator_pid != os.getpid() or not srv.alive():
                srv = None
                path = os.environ.get(SHARE_ENV)
                if path:
                    try:
                        srv = cls.connect(path)
                    except SandboxError as exc:
                        print(f"ppo-course sandbox: {exc}; starting a fork server of this process's own", file=sys.stderr)
                cls._shared = srv = srv or cls(share=share)
            return srv

    @classmethod
    def start_early(cls, share: bool = False, warm_up: bool = True) -> None:
        """Start this process's fork server now, without waiting for it; ``shared()`` waits for its hello.

        The server's ``import torch`` and warm-up step then run on another core while this process
        imports the grader. Does nothing when a server is already there, or when
        ``$PPO_COURSE_FORKSERVER`` names a batch's server (``shared()`` connects to that one).
        A server that cannot be created, fails to start, or dies before its first use is reported
        by ``shared()`` (``SandboxError``), as if it had been started there; this never raises.
        """
        with cls._shared_lock:
            srv = cls._shared
            if os.environ.get(SHARE_ENV) or (srv is not None and srv.creator_pid == os.getpid() and srv.alive()):
                return
            try:
                cls._shared = cls(share=share, warm_up=warm_up, wait=False)
            except OSError:  # shared() starts one again and reports why it cannot
                pass

    def _recv(self) -> dict:
        data = self.sock.recv(1 << 20)
        if not data:
            raise SandboxError("the sandbox fork server closed its control socket")
        return json.loads(data)

    def _ask(self, request: dict, fds: list[int] | None = None) -> dict:
        self.finish_start()
        with self._lock:
            try:
                payload = json.dumps(request).encode()
                if fds:
                    socket.send_fds(self.sock, [payload], fds)
                else:
                    self.sock.send(payload)
                reply = self._recv()
            except (OSError, SandboxError, ValueError) as exc:
                # A late reply would be read as the answer to the next command:
                # this server is unusable from now on (shared() makes a new one).
                self._mark_broken()
                raise SandboxError(f"the sandbox fork server is gone or stuck: {exc}") from None
        if "error" in reply:
            raise SandboxError(f"the sandbox fork server refused {request.get('cmd')}: {reply['error']}")
        return reply

    def alive(self) -> bool:
        """True while the server runs (and, for a connection, until a command failed)."""
        if self._broken:
            return False
        return self.proc.poll() is None if self.proc is not None else True

    def spawn(self, config: dict, fds: list[int]) -> int:
        """Fork a child with ``config``; ``fds`` = [protocol socket, stdout w, stderr w]. Returns its pid."""
        if self.fixed_layout:
            from sandbox_child import fixed_root

            config = dict(config)
            for key in ("needed_paths", "hide_paths"):
                config[key] = fixed_root.translate(list(config.get(key, [])), self.fixed_layout)
        return int(self._ask({"cmd": "spawn", "config": config}, fds)["pid"])

    def finish(self, pid: int, grace_s: float = 0.0) -> str:
        """Kill child ``pid`` with everything it started, reap it; returns how it ended, in words."""
        return str(self._ask({"cmd": "finish", "pid": pid, "grace_s": grace_s})["status"])

    def ping(self) -> dict:
        """``{"pong": True, "children": n}``."""
        return self._ask({"cmd": "ping"})

    def close(self) -> None:
        """Stop the server (it kills any child it still has); for a connection, hang up
        (the server kills this connection's children)."""
        try:
            self.sock.close()
        finally:
            if self.proc is not None:
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            if self._listen_dir is not None:
                shutil.rmtree(self._listen_dir, ignore_errors=True)
