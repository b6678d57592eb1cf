"""The guards of the hostile-submissions suite: every trace an attack could leave on the machine, before and after.

``Guards`` looks at changed canary folders (an instructor-side folder in the
repository and an "other student" folder beside the submission), marker-bearing
or sentinel-dated files in the instructor folders, marker files in the
machine's world-writable folders, kernel objects (``kernel_objects``),
connections to a listener on 127.0.0.1, and processes left behind
(``leftover_processes``); ``guarded_batch`` runs a whole batch under them.
Attacks put ``hostile_helpers.MARKER`` in every file name and command line
they create, so that the checks stay exact while teammates edit the
repository concurrently.
"""

from __future__ import annotations

import contextlib

import hashlib
import os
import shutil
import signal
import socket
import stat
import sysconfig
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from hostile_helpers import CANARY, MARKER, REPO, SENTINEL_MTIME

#: Instructor-side folders of the repository (anything an attack could hope to read or change).
INSTRUCTOR_DIRS = ("solutions", "ppo_reference", "grader", "quiz_bank", "ppo_course", "exercises", "tests/hostile/canary")
#: World-writable folders of the machine (a channel that would outlive a child).
SHARED_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")
#: uids the fork server hands to children (sandbox_child.reaper.UID_BASE/UID_COUNT).
SANDBOX_UIDS = range(61000, 62000)
FORKSERVER_MARK = b"sandbox_child.zygote"


def _tree_digest(root: Path) -> dict[str, tuple]:
    """``{relative path: (kind, mode, sha256 or None)}`` of everything under ``root`` (links not followed)."""
    out: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            st = os.lstat(path)
            digest = hashlib.sha256(path.read_bytes()).hexdigest() if stat.S_ISREG(st.st_mode) else None
            out[str(path.relative_to(root))] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), digest)
    st = os.lstat(root)
    out["."] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), None)
    return out


def _mtimes(roots: list[Path]) -> dict[str, int]:
    out: dict[str, int] = {}
    for root in roots:
        if root.is_file():
            out[str(root)] = os.lstat(root).st_mtime_ns
            continue
        for dirpath, _, filenames in os.walk(root):
            for name in filenames:
                path = os.path.join(dirpath, name)
                try:
                    out[path] = os.lstat(path).st_mtime_ns
                except OSError:  # removed by a teammate meanwhile
                    continue
    return out


def _site_packages_files() -> list[Path]:
    sp = Path(sysconfig.get_paths()["purelib"])
    return [p for p in sp.iterdir() if p.is_file()] if sp.is_dir() else []


def _shared_markers() -> set[str]:
    found = set()
    for d in SHARED_DIRS:
        try:
            found.update(os.path.join(d, n) for n in os.listdir(d) if MARKER in n)
        except OSError:
            continue
    return found


# --------------------------------------------------------------------------- kernel objects


def kernel_objects() -> set[str]:
    """Kernel objects that outlive a process, in words: keys per sandbox uid (/proc/key-users,
    which counts every user's keys whoever reads it), keys carrying the marker (/proc/keys), SysV
    IPC objects of this IPC namespace (/proc/sysvipc) and marker files in /dev/mqueue."""
    found: set[str] = set()
    try:
        with open("/proc/key-users") as fh:
            for line in fh:
                uid = int(line.split(":")[0])
                if uid in SANDBOX_UIDS:
                    found.add(f"keys of sandbox uid {uid}: {line.split()[2]}")
    except OSError:
        pass
    try:
        with open("/proc/keys") as fh:
            found.update(f"key {line.strip()}" for line in fh if MARKER in line)
    except OSError:
        pass
    # SysV objects made by a sandbox uid or by this process's uid (a child before its uid drop, or the grader):
    # other users' objects on a shared machine (a database, a browser) are not the attack's.
    ours = set(SANDBOX_UIDS) | {os.getuid()}
    for kind in ("shm", "sem", "msg"):
        try:
            with open(f"/proc/sysvipc/{kind}") as fh:
                header = next(fh, "").split()
                cuid = header.index("cuid") if "cuid" in header else None
                for line in fh:
                    cols = line.split()
                    if cols and (cuid is None or int(cols[cuid]) in ours):
                        found.add(f"SysV {kind} key {cols[0]} id {cols[1]}")
        except (OSError, ValueError, IndexError):
            pass
    try:
        found.update(f"/dev/mqueue/{n}" for n in os.listdir("/dev/mqueue") if MARKER in n)
    except OSError:
        pass
    return found


# --------------------------------------------------------------------------- processes


def proc_table() -> dict[int, tuple[int, int, str, bytes]]:
    """``{pid: (ppid, uid, state, cmdline + NUL + environment)}`` of every process."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                data = fh.read()
            rest = data[data.rindex(b")") + 2:].split()
            uid = os.stat(f"/proc/{entry}").st_uid
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmd = fh.read()
        except (OSError, ValueError):
            continue
        try:  # the environment too (readable as root): attacks mark theirs
            with open(f"/proc/{entry}/environ", "rb") as fh:
                cmd += b"\0" + fh.read()
        except OSError:
            pass
        table[int(entry)] = (int(rest[1]), uid, rest[0].decode(), cmd)
    return table


def leftover_processes(server_pid: int | None) -> list[str]:
    """Processes an attack left behind, in words (empty when none).

    * any descendant of our fork server (``server_pid``): the server kills a
      child with everything it started when the sandbox closes, so after
      grading it must have none;
    * any process whose command line or environment carries ``MARKER`` and that is not
      inside another fork server's tree (another test worker may be grading
      an attack right now);
    * any process of a sandbox uid with no fork server among its ancestors
      (it escaped the subreaper); children of other test workers' fork
      servers are legitimate and not counted.
    """
    table = proc_table()
    me = os.getpid()

    def ancestors(pid: int):
        seen = set()
        while pid in table and pid not in seen and pid > 1:
            seen.add(pid)
            pid = table[pid][0]
            yield pid

    found = []
    for pid, (ppid, uid, state, cmd) in table.items():
        if state == "Z" or pid == me:
            continue
        why = []
        up = list(ancestors(pid))
        ours = server_pid is not None and server_pid in up
        in_a_server = any(FORKSERVER_MARK in table.get(a, (0, 0, "", b""))[3] for a in up)
        if ours:
            why.append("a descendant of the fork server")
        if MARKER.encode() in cmd and (ours or not in_a_server):
            why.append("carries the attack's marker")
        if uid in SANDBOX_UIDS and not in_a_server:
            why.append(f"runs as sandbox uid {uid} outside any fork server")
        if why:
            text = cmd.replace(b"\0", b" ").decode(errors="replace")[:120]
            found.append(f"pid {pid} (uid {uid}, {' and '.join(why)}): {text}")
    return found


def settled_leftovers(server_pid: int | None, wait_s: float = 2.0) -> list[str]:
    """``leftover_processes`` after up to ``wait_s`` seconds for it to come back empty.

    One look can catch what is gone a moment later: a tree another xdist worker is killing (a process
    whose parent was reaped between two reads of /proc has no fork server among its ancestors) or
    another worker's abandoned sleeper before its sweep. What an attack left stays, and is reported.
    """
    deadline = time.monotonic() + wait_s
    while True:
        left = leftover_processes(server_pid)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def kill_leftovers(server_pid: int | None) -> None:
    """SIGKILL what ``leftover_processes`` found (clean-up after a failed check; never a broad sweep)."""
    for line in leftover_processes(server_pid):
        pid = int(line.split()[1])
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


# --------------------------------------------------------------------------- the guards


@dataclass
class Guards:
    """Before/after checks around one grading (see the module docstring).

    The watch holds the guards' lock (``guard_window``) from its first look to ``close()``: shared, so that
    attacks watched on several xdist workers run together, or exclusive for a test that makes deliberate
    marks (the guard self-tests), which no other worker's watch may then see.

    Args:
        canaries: folders that must stay byte-identical (files, modes, names).
        server_pid: the grading process's fork server.
        exclusive: hold the lock alone (a self-test that leaves marks on purpose).
    """

    canaries: list[Path]
    server_pid: int | None
    exclusive: bool = False
    tcp: socket.socket = field(init=False)
    udp: socket.socket = field(init=False)

    def __post_init__(self) -> None:
        self._window = guard_window(self.exclusive)
        self._window.__enter__()
        try:
            self._look()
        except BaseException:
            self._window.__exit__(None, None, None)
            raise

    def _look(self) -> None:
        """Open the listeners and take the "before" pictures."""
        self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.tcp.bind(("127.0.0.1", 0))
        self.tcp.listen(8)
        self.tcp.setblocking(False)
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.udp.setblocking(False)
        self._instructor_roots = [REPO / d for d in INSTRUCTOR_DIRS] + _site_packages_files()
        self._canary_before = {str(c): _tree_digest(c) for c in self.canaries}
        self._mtimes_before = _mtimes(self._instructor_roots)
        self._shared_before = _shared_markers()
        self._kernel_before = kernel_objects()
        self._canary_text = (CANARY / "instructor_canary.txt").read_bytes()

    def hints(self, **extra) -> dict:
        """What the attacks are told (a well-informed attacker knows the layout)."""
        return {"repo": str(REPO), "canary": str(CANARY), "tcp_port": self.tcp.getsockname()[1],
                "udp_port": self.udp.getsockname()[1], "grader_pid": os.getpid(), "sentinel": SENTINEL_MTIME,
                "marker": MARKER, **{k: str(v) for k, v in extra.items()}}

    def violations(self) -> list[str]:
        """Everything that changed outside the sandbox, in words (empty when nothing did)."""
        found = []
        for root, before in self._canary_before.items():
            after = _tree_digest(Path(root))
            for rel in sorted(set(before) | set(after)):
                if before.get(rel) != after.get(rel):
                    state = "added" if rel not in before else "removed" if rel not in after else "changed"
                    found.append(f"canary {root}/{rel} {state}")
        after_mtimes = _mtimes(self._instructor_roots)
        for path, mtime in after_mtimes.items():
            if mtime == SENTINEL_MTIME * 10**9:
                found.append(f"{path}: modification time set to the attack's sentinel")
            elif self._mtimes_before.get(path) != mtime:
                # Teammates edit these folders while the suite runs: only the attack's marker convicts.
                try:
                    content = Path(path).read_bytes()[: 1 << 20]
                except OSError:
                    content = b""
                if MARKER in path or MARKER.encode() in content:
                    found.append(f"{path}: written by the attack")
        for path in sorted(_shared_markers() - self._shared_before):
            found.append(f"{path}: left in a world-writable folder")
        for obj in sorted(kernel_objects() - self._kernel_before):
            found.append(f"a kernel object was left: {obj}")
        try:
            conn, peer = self.tcp.accept()
            conn.close()
            found.append(f"the listener on 127.0.0.1 accepted a connection from {peer}")
        except BlockingIOError:
            pass
        try:
            data, peer = self.udp.recvfrom(1024)
            found.append(f"a UDP datagram reached 127.0.0.1 from {peer}: {data[:40]!r}")
        except BlockingIOError:
            pass
        return found

    def leftovers(self, wait_s: float = 2.0) -> list[str]:
        """``settled_leftovers`` of this watch's fork server (exiting processes get ``wait_s`` to be reaped)."""
        return settled_leftovers(self.server_pid, wait_s)

    def restore(self) -> None:
        """Undo what a successful attack left (so that one failure does not leak into later tests)."""
        for path in _shared_markers() - self._shared_before:
            try:
                shutil.rmtree(path) if os.path.isdir(path) else os.unlink(path)
            except OSError:
                pass
        for path, mtime in _mtimes(self._instructor_roots).items():
            if mtime == SENTINEL_MTIME * 10**9 and path in self._mtimes_before:
                os.utime(path, ns=(self._mtimes_before[path], self._mtimes_before[path]))
            elif path not in self._mtimes_before and MARKER in path:
                os.unlink(path)
        canary_file = CANARY / "instructor_canary.txt"
        for p in CANARY.iterdir():
            if MARKER in p.name:
                p.unlink()
        os.chmod(CANARY, 0o755)
        if canary_file.read_bytes() != self._canary_text:
            canary_file.write_bytes(self._canary_text)
        kill_leftovers(self.server_pid)

    def close(self) -> None:
        """Close the listeners and release the guards' lock (call once, after ``restore``)."""
        try:
            self.tcp.close()
            self.udp.close()
        finally:
            self._window.__exit__(None, None, None)


def guarded_batch(subs: Path, out: Path, watched: list[Path], exercises: list[str]):
    """``run_batch(subs, out, jobs=1, profile="fast")`` (one warm worker for everyone) under the suite's guards.

    Makes the cohort readable by the sandbox's uid (755/644), watches ``watched`` (the honest students'
    folders) and the machine, and fails the test on any violation or leftover process.

    Returns:
        the batch's ``BatchSummary``.
    """
    from grader import batch

    for path in [subs, *subs.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    guards = Guards(watched, server_pid=None)
    try:
        summary = batch.run_batch(subs, out, jobs=1, profile="fast", exercises=exercises, progress=False,
                                  report=False, log=lambda m: None)
        violations, leftovers = guards.violations(), guards.leftovers()
    finally:
        guards.restore()
        guards.close()
    assert not violations, "\n".join(violations)
    assert not leftovers, "\n".join(leftovers)
    return summary


#: One lock file for every run on this machine: the guards watch machine-wide places (/run/lock, processes).
GUARD_LOCK = os.path.join(tempfile.gettempdir(), "ppo-course-hostile-guards.lock")


@contextlib.contextmanager
def guard_window(exclusive: bool):
    """Hold the guards' lock while a watch runs: shared for an attack's watch, exclusive for the guard self-test,
    whose deliberate marks (a canary's sentinel mtime, a marker file in /run/lock) an attack watched at the same
    time on another xdist worker would otherwise report as its own."""
    import fcntl

    with open(GUARD_LOCK, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
