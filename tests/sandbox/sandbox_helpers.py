"""Helpers shared by the sandbox tests (importable by name: tests/ has no packages)."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

from grader.sandbox import Limits

#: Tight limits so that failure tests stay fast.
FAST = Limits(call_timeout_s=5.0, import_timeout_s=5.0)


def write_submission(root: Path, files: dict[str, str]) -> Path:
    """Write ``{relative path: source}`` (dedented) under ``root``; returns ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    for rel, source in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
    return root


def sandbox_processes() -> list[tuple[int, int, str]]:
    """(pid, uid, state) of every process running under a sandbox uid (61000-61999)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            uid = os.stat(f"/proc/{entry}").st_uid
            with open(f"/proc/{entry}/stat", "rb") as fh:
                data = fh.read()
            state = data[data.rindex(b")") + 2 :].split()[0].decode()
        except (OSError, ValueError):
            continue
        if 61000 <= uid < 62000:
            out.append((int(entry), uid, state))
    return out


def left_under_free_uid(uid: int | None, wait_s: float = 60.0) -> list[tuple[int, int, str]]:
    """The live (not zombie) processes of sandbox uid ``uid``, looked at while this process holds the uid's lock.

    A fork server hands a uid out only under its lock (``sandbox_child.reaper.allocate_uid``), so while the test
    holds it no fork server on the machine (another xdist worker's) can start a child under ``uid`` and have
    it counted as a leftover. A uid another server holds right now is waited for (its children die before
    it lets go); after ``wait_s`` seconds that is an error, never a pass. ``uid`` None (a grader without
    root has no private uids): none.
    """
    import fcntl
    import time

    from sandbox_child.reaper import LOCK_DIR

    if uid is None:
        return []
    os.makedirs(LOCK_DIR, mode=0o700, exist_ok=True)
    fd = os.open(os.path.join(LOCK_DIR, str(uid)), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise AssertionError(f"sandbox uid {uid} stayed held by a fork server for {wait_s:.0f} s") from None
                time.sleep(0.05)
        return [p for p in sandbox_processes() if p[1] == uid and p[2] != "Z"]
    finally:
        os.close(fd)  # the lock goes with it


def in_child(server, path) -> str:
    """Where the child sees the host path ``path``: under /opt/ppo when the fork server runs there (a109)."""
    from sandbox_child import fixed_root

    return fixed_root.translate([str(path)], server.fixed_layout)[0]


def host_pid(pid: int, uid: int | None) -> int:
    """The machine's pid of the process that a child running as ``uid`` sees as ``pid``.

    A child in a pid namespace of its own (root fork server) sees its own pids (the worker is 2);
    ``/proc/<pid>/status``'s ``NSpid`` line ends with that number. Without a private uid there is no
    pid namespace either, and ``pid`` is returned as it is.

    Raises:
        LookupError: no live process of ``uid`` has that pid in its namespace.
    """
    if uid is None:
        return pid
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.stat(f"/proc/{entry}").st_uid != uid:
                continue
            with open(f"/proc/{entry}/status") as fh:
                nspid = next(line for line in fh if line.startswith("NSpid:")).split()[1:]
        except (OSError, StopIteration):
            continue
        if int(nspid[-1]) == pid:
            return int(entry)
    raise LookupError(f"no process of uid {uid} is pid {pid} in its namespace")


def parent_pid(pid: int) -> int:
    """The machine's parent pid of the machine's pid ``pid`` (from ``/proc/<pid>/stat``)."""
    with open(f"/proc/{pid}/stat", "rb") as fh:
        data = fh.read()
    return int(data[data.rindex(b")") + 2 :].split()[1])


def fork_server_pid(pid: int, uid: int | None) -> int:
    """The pid the fork server knows a child by (its ``spawn`` reply), from the worker's own ``pid``.

    In a pid namespace the worker (2) is a child of the namespace's reaper (1), a child of the holder
    that the fork server forked (``sandbox_child.pidns``); without one the worker is that child.
    """
    host = host_pid(pid, uid)
    if uid is None:
        return host
    with open(f"/proc/{host}/status") as fh:
        nested = len(next(line for line in fh if line.startswith("NSpid:")).split()) > 2
    return parent_pid(parent_pid(host)) if nested else host
