"""The zygote (the fork server; untrusted side): a clean interpreter that forks one confined child per exercise.

Started by the grader (``grader.sandbox.forkserver_client``) through
``fixed_root.launch`` as ``/opt/ppo/venv/bin/python -S -P -c "...main()" CTL_FD
PARENT_PID`` (the venv and the package at fixed paths) with a
scrubbed environment. It
imports torch and the public package once (the per-exercise cost is then a
``fork``, not a ~1.5 s ``import torch``), and never imports the reference,
the graders, hidden inputs or scores: it only knows what the parent sends in a
spawn request (a submission path, limits, paths to hide). It never runs
student code itself; children do, after ``isolate.confine``.

Control protocol: one JSON object per SOCK_SEQPACKET message on the control
socket, replies likewise.

* ``{"cmd": "spawn", "config": {...}}`` with three descriptors attached (the
  child's protocol socket, stdout pipe, stderr pipe) → ``{"pid": n}``.
* ``{"cmd": "finish", "pid": n, "grace_s": x}`` → waits up to ``grace_s`` for a
  child that is exiting by itself, then kills its process group and every
  process of its private uid (or its descendants when there is none), reaps it,
  removes its temp folder → ``{"status": "exited with code 3"}``.
* EOF (the grader died or closed it) → every child is killed, the server exits.

With a listening path (``ForkServerClient(share=True)``), other grader
processes of the same user (batch workers) connect there and speak the same
protocol; each connection may only finish its own children, and its EOF
kills them. Only the owner's EOF stops the server.

It is a child subreaper, so processes orphaned by a student's fork stay its
descendants and are found and killed. Where it is root, the process it forks
for a child (whose pid it replies) holds a pid namespace of its own, whose pid
1 reaps and whose pid 2 runs the student's code (``pidns``); the holder ends
the way the worker did, so ``finish`` reads the worker's status.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import socket
import sys
import tempfile
import time

from ppo_course.process_exit import run_and_exit
from sandbox_child import cpucg, fixed_root, isolate, linux, memcg, pidns, reaper, warm_up
from sandbox_child.reaper import Child


def describe_status(status: int | None) -> str:
    """Human words for a ``waitpid`` status, with the likely limit that caused it."""
    if status is None:
        return "still running"
    if os.WIFEXITED(status):
        return f"exited with code {os.WEXITSTATUS(status)}"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        hint = {
            "SIGXCPU": " (CPU time limit exceeded)",
            "SIGXFSZ": " (file size limit exceeded)",
            "SIGSEGV": " (segmentation fault)",
            "SIGABRT": " (aborted)",
        }.get(name, "")
        return f"killed by {name}{hint}"
    return f"status {status}"


class ForkServer:
    """State of the fork-server process (see the module docstring)."""

    def __init__(self, ctl: socket.socket, parent_pid: int, listen_path: str | None = None) -> None:
        self.ctl = ctl
        self.parent_pid = parent_pid
        self.children: dict[int, Child] = {}
        # Further graders of the same machine (batch workers) may connect here;
        # each connection owns the children it spawns, and its EOF kills them.
        self.clients: dict[int, socket.socket] = {ctl.fileno(): ctl}
        self.listener: socket.socket | None = None
        if listen_path:
            self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            old_umask = os.umask(0o177)
            try:
                self.listener.bind(listen_path)  # created 0600: only the grader's user may connect
            finally:
                os.umask(old_umask)
            self.listener.listen(64)
        self.is_root = os.geteuid() == 0
        if self.is_root:
            os.makedirs(reaper.LOCK_DIR, mode=0o700, exist_ok=True)
            reaper.kill_abandoned(self.children)
        # One memory budget per child, counting every process and memory-backed file.
        self.memcg, why = memcg.Controller.open(os.getpid()) if self.is_root else (None, "the grader is not root")
        if self.memcg is None:
            isolate.warn(f"no memory cgroup ({why}): each child is held to one process without memfds, and "
                         "its address space to the memory budget less its tmpfs sizes (docs/threat_model.md)")
        self.cpucg = self._open_cpu_cgroups()

    def _open_cpu_cgroups(self) -> "cpucg.CpuController | None":
        """The CPU quota per child: v1's ``cpu`` hierarchy, or (v2) the memory leaf itself; None with a warning."""
        if self.memcg is not None and self.memcg.version == 2 and self.memcg.cpu:
            return None  # the quota is written on each child's v2 leaf (memcg.Controller.create)
        ctl, why = cpucg.CpuController.open(os.getpid()) if self.is_root else (None, "the grader is not root")
        if ctl is None:
            isolate.warn(f"no CPU cgroup ({why}): each child is bounded by RLIMIT_CPU and its task count only, "
                         "so a busy child can slow a sibling graded at the same time (docs/threat_model.md)")
        return ctl

    def finish(self, pid: int, grace_s: float) -> str:
        child = self.children.get(pid)
        if child is None:
            return "unknown process"
        deadline = time.monotonic() + max(0.0, grace_s)
        while child.status is None:
            reaper.reap(self.children)
            if child.status is not None or time.monotonic() >= deadline:
                break
            time.sleep(0.002)
        status = child.status
        reaper.kill_tree(child, self.children)
        if status is None:
            status = child.status
            words = "stopped by the grader"
        else:
            words = describe_status(status)
        words += self._release_cgroup(child)
        if child.lock_fd is not None:
            os.close(child.lock_fd)
        if child.workdir:
            shutil.rmtree(child.workdir, ignore_errors=True)
        del self.children[pid]
        return words

    def _release_cgroup(self, child: Child) -> str:
        """Close the child's OOM watch and remove its memory cgroup; returns words to add when it ran out of memory."""
        if child.oom_fd is not None:
            os.close(child.oom_fd)
            child.oom_fd = None
        if self.cpucg is not None and child.cpu_cgroup is not None:
            for round_ in range(50):
                if self.cpucg.remove(child.cpu_cgroup):
                    break
                time.sleep(0.002 * min(round_ + 1, 10))
            child.cpu_cgroup = None
        if self.memcg is None or child.cgroup is None:
            return ""
        # The watch may kill the child before the kernel's OOM killer picks a victim (oom_kill stays 0).
        oom = child.out_of_memory or self.memcg.oom_kills(child.cgroup) > 0
        for round_ in range(50):  # the last exiting task may still be leaving the cgroup
            if self.memcg.remove(child.cgroup):
                break
            time.sleep(0.002 * min(round_ + 1, 10))
        else:
            isolate.warn(f"memory cgroup {child.cgroup} could not be removed")
        child.cgroup = None
        return (f" (out of memory: the submission's processes together used more than its {child.memory_mb} MiB "
                "memory budget)") if oom else ""

    def on_oom(self, fd: int) -> None:
        """An OOM in a child's cgroup (v1 eventfd): kill the whole child, as v2's ``memory.oom.group`` does."""
        try:
            os.eventfd_read(fd)
        except OSError:
            return
        for child in self.children.values():
            if child.oom_fd == fd:
                child.out_of_memory = True
                reaper.kill_tree(child, self.children)

    def spawn(self, config: dict, fds: list[int], client: int = -1) -> int:
        if len(fds) != 3:
            raise ValueError("spawn needs exactly three descriptors")  # the caller closes them
        uid, lock_fd = reaper.allocate_uid(self.children) if self.is_root else (None, None)
        workdir = tempfile.mkdtemp(prefix="ppo-sandbox-")
        if uid is not None:
            os.chown(workdir, uid, uid)
        server_pid = os.getpid()
        cores = float(config.get("limits", {}).get("cpu_cores", 1.0))
        cgroup = self.memcg.create(cores) if self.memcg is not None else None
        oom_fd = self.memcg.watch_oom(cgroup) if cgroup is not None else None
        cpu_cgroup = self.cpucg.create(cores) if self.cpucg is not None else None
        config = dict(config, uid=uid, workdir=workdir, server_pid=server_pid, memory_cgroup=cgroup,
                      memory_cgroup_version=self.memcg.version if self.memcg is not None else None,
                      cpu_cgroup=cpu_cgroup)
        pid = os.fork()
        if pid == 0:  # the child: never returns into the server loop
            code = 70
            try:
                _child_main(config, fds, server_pid)
                code = 0
            except BaseException as exc:  # noqa: BLE001 - report anything, then exit
                try:
                    isolate.warn(f"child setup failed: {type(exc).__name__}: {exc}")
                except BaseException:  # noqa: BLE001
                    pass
            finally:
                os._exit(code)
        for fd in fds:
            os.close(fd)
        memory_mb = int(config.get("limits", {}).get("memory_mb", 0))
        self.children[pid] = Child(pid, uid, lock_fd, workdir, client, cgroup, oom_fd, memory_mb)
        self.children[pid].cpu_cgroup = cpu_cgroup
        return pid

    def kill_all(self) -> None:
        for pid in list(self.children):
            try:
                self.finish(pid, 0.0)
            except Exception:  # noqa: BLE001
                pass

    # -- loop -------------------------------------------------------------
    def reply(self, obj: dict, conn: socket.socket | None = None) -> None:
        try:
            (conn or self.ctl).send(json.dumps(obj).encode())
        except OSError:
            pass  # the client is gone; its EOF is handled by the loop

    def _drop_client(self, conn: socket.socket) -> None:
        fd = conn.fileno()
        for pid in [p for p, c in self.children.items() if c.client == fd]:
            try:
                self.finish(pid, 0.0)
            except Exception:  # noqa: BLE001
                pass
        self.clients.pop(fd, None)
        conn.close()

    def _handle(self, conn: socket.socket, msg: bytes, fds: list[int]) -> bool:
        """One command from ``conn``; returns False when the server must stop."""
        try:
            req = json.loads(msg)
            cmd = req.get("cmd")
            if cmd == "spawn":
                self.reply({"pid": self.spawn(req["config"], fds, conn.fileno())}, conn)
                fds = []
            elif cmd == "finish":
                pid = int(req["pid"])
                child = self.children.get(pid)
                if child is not None and child.client != conn.fileno():
                    raise PermissionError(f"process {pid} belongs to another grader")
                self.reply({"status": self.finish(pid, float(req.get("grace_s", 0.0)))}, conn)
            elif cmd == "ping":
                mine = sum(1 for c in self.children.values() if c.client == conn.fileno())
                self.reply({"pong": True, "children": mine, "clients": len(self.clients)}, conn)
            elif cmd == "exit" and conn is self.ctl:
                self.reply({"bye": True}, conn)
                return False
            else:
                self.reply({"error": f"unknown command {cmd!r}"}, conn)
        except Exception as exc:  # noqa: BLE001 - keep serving; tell the client
            self.reply({"error": f"{type(exc).__name__}: {exc}"}, conn)
        finally:
            for fd in fds:
                try:
                    os.close(fd)
                except OSError:
                    pass
        return True

    def serve(self) -> None:
        hello = {"hello": True, "pid": os.getpid(), "root": self.is_root, "fixed_root": fixed_root.active(),
                 "probe": dict(probe(memory=False), memory_cgroup=self.memcg is not None)}
        self.reply(hello)
        running = True
        while running:
            oom_fds = [c.oom_fd for c in self.children.values() if c.oom_fd is not None]
            waiting = list(self.clients.values()) + ([self.listener] if self.listener else []) + oom_fds
            ready, _, _ = select.select(waiting, [], [], 1.0)
            reaper.reap(self.children)
            if os.getppid() != self.parent_pid:
                break
            for fd in [r for r in ready if isinstance(r, int)]:
                self.on_oom(fd)
            for conn in [r for r in ready if not isinstance(r, int)]:
                if conn is self.listener:
                    try:
                        new, _ = self.listener.accept()
                    except OSError:
                        continue
                    new.setblocking(True)
                    self.clients[new.fileno()] = new
                    self.reply(hello, new)
                    continue
                if conn.fileno() not in self.clients:
                    continue  # dropped earlier in this round
                try:
                    msg, fds, _, _ = socket.recv_fds(conn, 1 << 20, 8)
                except OSError:
                    msg, fds = b"", []
                if not msg:
                    if conn is self.ctl:
                        running = False  # the owner is gone: everything goes
                        break
                    self._drop_client(conn)
                    continue
                if not self._handle(conn, msg, fds):
                    running = False
                    break
        self.kill_all()
        if self.memcg is not None:
            self.memcg.close()
        if self.cpucg is not None:
            self.cpucg.close()
        if self.listener is not None:
            path = self.listener.getsockname()
            self.listener.close()
            try:
                os.unlink(path)
            except OSError:
                pass


def probe(memory: bool = True) -> dict:
    """Which isolation features this machine grants (tried in a throwaway child).

    ``memory``: also try a memory cgroup (``memory_cgroup``; needs root), in a throwaway child too.
    """
    result = {}
    if memory:
        pid = os.fork()
        if pid == 0:
            try:
                os._exit(0 if os.geteuid() == 0 and memcg.probe() else 1)
            except BaseException:  # noqa: BLE001
                os._exit(1)
        _, status = os.waitpid(pid, 0)
        result["memory_cgroup"] = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    for name, flags in (("network_namespace", linux.CLONE_NEWNET), ("mount_namespace", linux.CLONE_NEWNS),
                        ("pid_namespace", linux.CLONE_NEWPID)):
        pid = os.fork()
        if pid == 0:
            try:
                if os.geteuid() != 0:
                    linux.unshare(linux.CLONE_NEWUSER)
                linux.unshare(flags)
                os._exit(0)
            except BaseException:  # noqa: BLE001
                os._exit(1)
        _, status = os.waitpid(pid, 0)
        result[name] = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    return result


def _child_main(config: dict, fds: list[int], server_pid: int) -> None:
    """Runs in the forked child: a pid namespace (``pidns``), then confine and serve the protocol (never returns normally)."""
    os.setsid()
    linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != server_pid:  # the server died between fork and prctl
        os._exit(1)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    sock_fd = isolate.reset_descriptors(*fds)

    def body(private: bool, parent_pid: int) -> None:
        from sandbox_child import worker  # seeds the global RNGs before the import and every call (seeding.py)

        worker.run_child(sock_fd, dict(config, server_pid=parent_pid, pid_namespace=private))

    pidns.run(body)  # the worker runs as pid 2 of a pid namespace of its own, where the kernel allows one


def main(argv: list[str] | None = None) -> None:
    """Entry point: ``CTL_FD PARENT_PID [warm|cold] [LISTEN_PATH]``.

    The server notices the grader's death by EOF on the control socket (the
    kernel closes a dead process's descriptors) or, at the latest a second
    later, by its parent pid changing; it then kills every child and exits.
    (No PR_SET_PDEATHSIG here: it fires when the *thread* that started the
    server exits, which would kill a shared server started from a worker thread.)
    """
    argv = sys.argv[1:] if argv is None else argv
    ctl_fd, parent_pid = int(argv[0]), int(argv[1])
    warm = len(argv) < 3 or argv[2] != "cold"
    listen_path = argv[3] if len(argv) > 3 and argv[3] else None
    try:
        linux.prctl(linux.PR_SET_CHILD_SUBREAPER, 1)
    except OSError as exc:
        isolate.warn(f"prctl(PR_SET_CHILD_SUBREAPER) failed ({exc}); orphans of a child may escape the kill")
    if os.getppid() != parent_pid:
        sys.exit(1)
    ctl = socket.socket(fileno=ctl_fd)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when we stop
    if warm:
        warm_up.warm_up()
    else:
        from ppo_course.sandbox import harness  # noqa: F401
        from sandbox_child import proxies, worker
    # Served (children reaped, cgroups and socket gone): a fast exit skips torch's teardown (~0.5 CPU-s).
    run_and_exit(ForkServer(ctl, parent_pid, listen_path).serve)


if __name__ == "__main__":  # pragma: no cover
    main()
