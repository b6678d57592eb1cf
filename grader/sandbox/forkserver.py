"""The grader's handle on the fork server (``ppo_course.sandbox.forkserver``).

One fork server per grader process is started lazily (``ForkServerClient.shared()``)
and reused by every ``Sandbox``: it is exec'd fresh (``python -I``), with a
scrubbed environment, so it holds nothing of the grader's memory (no reference,
no hidden input), and pays ``import torch`` once.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

from grader.sandbox.errors import SandboxError

_BOOT = (
    "import sys, importlib.util\n"
    "if importlib.util.find_spec('ppo_course') is None: sys.path.append(sys.argv[3])\n"
    "from ppo_course.sandbox.forkserver import main\n"
    "main([sys.argv[1], sys.argv[2], sys.argv[4]])\n"
)


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
    }


class ForkServerClient:
    """Starts and talks to one fork-server process (thread-safe).

    Args:
        start_timeout_s: how long to wait for the server's hello (its ``import torch``).
        warm_up: run one forward/backward/Adam step of the toy model before the
            first fork (≈2 s once, saves ≈2 s in every child that trains).

    Raises:
        SandboxError: if the server cannot be started.
    """

    #: Longest wait for the answer to one control command, in seconds.
    COMMAND_TIMEOUT_S = 60.0

    _shared: "ForkServerClient | None" = None
    _shared_lock = threading.Lock()

    def __init__(self, start_timeout_s: float = 120.0, warm_up: bool = True) -> None:
        self._lock = threading.Lock()
        self.creator_pid = os.getpid()
        parent_sock, child_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        spec = importlib.util.find_spec("ppo_course")
        root = str(Path(spec.origin).parent.parent) if spec and spec.origin else ""
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-c", _BOOT, str(child_sock.fileno()), str(os.getpid()), root, "warm" if warm_up else "cold"],
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
        self.sock.settimeout(start_timeout_s)
        try:
            hello = self._recv()
        except (OSError, SandboxError) as exc:
            self.proc.kill()
            raise SandboxError(f"the sandbox fork server did not start: {exc}") from None
        # Every command is answered at once or after a kill; a silent server is broken.
        self.sock.settimeout(self.COMMAND_TIMEOUT_S)
        self.pid = int(hello["pid"])
        self.root = bool(hello["root"])
        self.probe = dict(hello.get("probe", {}))
        for feature, ok in self.probe.items():
            if not ok:
                print(f"ppo-course sandbox: this machine refuses a {feature.replace('_', ' ')}; "
                      f"see docs/threat_model.md for what that leaves undefended", file=sys.stderr)

    @classmethod
    def shared(cls) -> "ForkServerClient":
        """The process-wide fork server, (re)started when missing, dead, or inherited across a fork."""
        with cls._shared_lock:
            srv = cls._shared
            if srv is None or srv.creator_pid != os.getpid() or srv.proc.poll() is not None:
                cls._shared = srv = cls()
            return srv

    def _recv(self) -> dict:
        data = self.sock.recv(1 << 20)
        if not data:
            raise SandboxError("the sandbox fork server closed its control socket")
        return json.loads(data)

    def _ask(self, request: dict, fds: list[int] | None = None) -> dict:
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
                # this server is unusable from now on (shared() starts a new one).
                self.proc.kill()
                raise SandboxError(f"the sandbox fork server is gone or stuck: {exc}") from None
        if "error" in reply:
            raise SandboxError(f"the sandbox fork server refused {request.get('cmd')}: {reply['error']}")
        return reply

    def alive(self) -> bool:
        """True while the server process runs."""
        return self.proc.poll() is None

    def spawn(self, config: dict, fds: list[int]) -> int:
        """Fork a child with ``config``; ``fds`` = [protocol socket, stdout w, stderr w]. Returns its pid."""
        return int(self._ask({"cmd": "spawn", "config": config}, fds)["pid"])

    def finish(self, pid: int, grace_s: float = 0.0) -> str:
        """Kill child ``pid`` with everything it started, reap it; returns how it ended, in words."""
        return str(self._ask({"cmd": "finish", "pid": pid, "grace_s": grace_s})["status"])

    def ping(self) -> dict:
        """``{"pong": True, "children": n}``."""
        return self._ask({"cmd": "ping"})

    def close(self) -> None:
        """Stop the server (it kills any child it still has)."""
        try:
            self.sock.close()
        finally:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
