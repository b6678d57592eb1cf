"""Killing everything one sandboxed child started (the fork server's side; untrusted side).

A child runs under a private sandbox uid when the fork server is root (one of
``UID_COUNT`` uids from ``UID_BASE``, held by an flock on a file in
``LOCK_DIR`` so that two fork servers of one machine never share one), and
every process it starts keeps that uid: killing the child means killing the
uid's processes until none is left. Without root there is no private uid,
and the child's descendants (and the fork server's orphans, which it adopts
as a child subreaper) are found through the process table instead.

Used by ``sandbox_child.zygote``, which owns the table of its children
(``{pid: Child}``) and passes it in.
"""

from __future__ import annotations

import fcntl
import os
import signal
import tempfile
import time

from sandbox_child import isolate

UID_BASE = 61000
UID_COUNT = 1000
LOCK_DIR = os.path.join(tempfile.gettempdir(), ".ppo-course-sandbox-uids")


class Child:
    """One child of the fork server: its pid, private uid (or None), temp folder, memory and CPU cgroups."""

    def __init__(self, pid: int, uid: int | None, lock_fd: int | None, workdir: str, client: int = -1,
                 cgroup: str | None = None, oom_fd: int | None = None, memory_mb: int = 0) -> None:
        self.client = client  # descriptor of the control connection that spawned it
        self.pid = pid
        self.uid = uid
        self.lock_fd = lock_fd
        self.workdir = workdir
        self.cgroup = cgroup  # its memory cgroup's folder (memcg), or None
        self.oom_fd = oom_fd  # eventfd readable at an OOM in that cgroup (cgroup v1), or None
        self.memory_mb = memory_mb
        self.out_of_memory = False  # its cgroup hit the limit (set by the OOM watch)
        self.cpu_cgroup: str | None = None  # its CPU cgroup's folder (cpucg, cgroup v1), or None
        self.status: int | None = None


def _leftovers_of(uid: int) -> Child:
    """A stand-in child for the processes a crashed grader left under ``uid`` (already reaped)."""
    leftovers = Child(-1, uid, None, "")
    leftovers.status = 0
    return leftovers


def kill_abandoned(children: dict[int, Child]) -> list[int]:
    """Kill the processes of sandbox uids that no live fork server holds; returns those uids.

    A fork server killed outright takes its children along (PDEATHSIG) but
    not what they started; those keep their sandbox uid and are found here
    at the next start (and again whenever the uid is allocated).
    """
    uids = sorted({uid for _, uid, state in process_table().values()
                   if UID_BASE <= uid < UID_BASE + UID_COUNT and state != "Z"})
    abandoned = []
    for uid in uids:
        fd = os.open(os.path.join(LOCK_DIR, str(uid)), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)  # a live server holds it: not ours to touch
            continue
        try:
            kill_tree(_leftovers_of(uid), children)
            abandoned.append(uid)
        finally:
            os.close(fd)
    if abandoned:
        isolate.warn(f"killed processes left by a crashed grader under sandbox uids {abandoned}")
    return abandoned


def allocate_uid(children: dict[int, Child]) -> tuple[int, int]:
    """A uid no other live child on this machine holds, and the descriptor of its flock: ``(uid, lock_fd)``.

    Raises:
        RuntimeError: when all ``UID_COUNT`` uids are held.
    """
    start = (os.getpid() * 7) % UID_COUNT
    for i in range(UID_COUNT):
        uid = UID_BASE + (start + i) % UID_COUNT
        fd = os.open(os.path.join(LOCK_DIR, str(uid)), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        # Whatever a crashed grader left running under this uid goes first.
        leftovers = _leftovers_of(uid)
        if live_pids(leftovers, children):
            kill_tree(leftovers, children)
        return uid, fd
    raise RuntimeError("no free sandbox uid")


def kill_uid(uid: int) -> None:
    """Kill every process of ``uid``: a helper becomes ``uid`` and calls kill(-1, SIGKILL).

    kill(-1) is the kernel's own walk over the uid's processes, so a fork
    bomb cannot outrun it the way it can outrun a /proc scan. Some kernels
    (gVisor) report success even when nothing was signalled, so the
    caller checks with ``live_pids`` instead of trusting ESRCH.
    """
    pid = os.fork()
    if pid == 0:
        try:
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            for _ in range(3):
                try:
                    os.kill(-1, signal.SIGKILL)
                except OSError:
                    break
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def process_table(only_uid: int | None = None) -> dict[int, tuple[int, int, str]]:
    """``{pid: (ppid, uid, state)}`` from /proc; with ``only_uid``, only the processes of that uid (the others'
    ``stat`` files are not read: one ``stat`` call per process instead of three calls)."""
    table: dict[int, tuple[int, int, str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            uid = os.stat(f"/proc/{entry}").st_uid
            if only_uid is not None and uid != only_uid:
                continue
            with open(f"/proc/{entry}/stat", "rb") as fh:
                data = fh.read()
            rest = data[data.rindex(b")") + 2 :].split()
            table[int(entry)] = (int(rest[1]), uid, rest[0].decode())
        except (OSError, ValueError, IndexError):
            continue
    return table


def live_pids(child: Child, children: dict[int, Child]) -> list[int]:
    """Processes (not zombies) that belong to ``child``: its uid's, or its descendants and our orphans.

    ``children``: every child of this fork server (their pids are not orphans).
    """
    table = process_table(child.uid)
    me = os.getpid()
    if child.uid is not None:
        return [p for p, (_, uid, state) in table.items() if uid == child.uid and state != "Z" and p != me]
    found: list[int] = []
    roots = [child.pid] + [p for p, (pp, _, _) in table.items() if pp == me and p not in children]
    frontier = list(roots)
    seen = set()
    while frontier:
        p = frontier.pop()
        if p in seen:
            continue
        seen.add(p)
        if p in table and table[p][2] != "Z" and p != child.pid:
            found.append(p)
        frontier.extend(c for c, (pp, _, _) in table.items() if pp == p)
    return [p for p in found if p != me] + ([child.pid] if child.status is None and child.pid in table and table[child.pid][2] != "Z" else [])


def reap(children: dict[int, Child]) -> None:
    """Collect every exited process of this fork server (no waiting); record the status of those in ``children``."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        child = children.get(pid)
        if child is not None:
            child.status = status


def kill_tree(child: Child, children: dict[int, Child]) -> None:
    """SIGKILL the child, its process group and every process it started, then reap."""
    if child.pid > 1:  # never killpg/kill with -1, 0 or 1: that would reach every process
        for sig_target in (lambda: os.killpg(child.pid, signal.SIGKILL), lambda: os.kill(child.pid, signal.SIGKILL)):
            try:
                sig_target()
            except OSError:
                pass
    for round_ in range(100):
        if child.status is None and child.pid > 1:
            try:
                _, status = os.waitpid(child.pid, 0)
                child.status = status
            except ChildProcessError:
                child.status = 0
        reap(children)
        victims = live_pids(child, children)
        if not victims:
            return
        for p in victims:
            if p <= 1 or p == os.getpid():
                continue
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        if child.uid is not None:
            kill_uid(child.uid)
        time.sleep(0.001 * min(round_, 10))
    isolate.warn(f"processes of child {child.pid} survived 100 rounds of SIGKILL")
