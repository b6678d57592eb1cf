"""The child's minimal root (issue 19, class 1): reading what it sees leaves no trace for the next child.

A child walks every file it can see, reads a byte of each, takes an ``flock``
on it, and tries to change its times; afterwards the machine's files have the
times they had (access times set old enough beforehand that ``relatime`` would
have updated them on a read-write mount), and ``/proc/locks`` is as it was.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
import time
from pathlib import Path

import pytest
import torch

from sandbox_helpers import FAST, in_child

WALKER = {
    "walker.py": '''
        import fcntl, os

        PRIVATE = ("/tmp", "/dev/shm", "/var/tmp")  # sandbox_child/rootfs.py: private to the child, gone with it

        def root_entries(path="/"):
            return sorted(os.listdir(path))

        def _touch(path):
            """Read a byte, flock and lockf it, try utime; returns (read, locked, changed)."""
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
            except OSError:
                return 0, 0, 0
            read = locked = changed = 0
            try:
                read = 1 if os.read(fd, 1) else 0
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    locked = 1
                except OSError:
                    pass
                try:
                    fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                except OSError:
                    pass
                try:
                    os.utime(path, (0, 0))
                    changed = 1
                except OSError:
                    pass
            except OSError:
                pass
            finally:
                os.close(fd)
            return read, locked, changed

        def walk_and_touch(folders, stride):
            """Walk the whole visible tree; touch every file in ``folders`` and every stride-th file elsewhere."""
            seen = read = locked = changed = 0
            for dirpath, dirnames, filenames in os.walk("/"):
                if dirpath == "/":
                    dirnames[:] = [d for d in dirnames if d not in ("proc", "sys")]
                if dirpath.startswith(PRIVATE):  # the child's own writable tmpfs (its module is there)
                    continue
                for name in filenames:
                    seen += 1
                    if dirpath in folders or seen % stride == 0:
                        r, l, c = _touch(os.path.join(dirpath, name))
                        read, locked, changed = read + r, locked + l, changed + c
            return seen, read, locked, changed

        def hold_locks(paths):
            """Take and keep (until the child dies) a lock on each path."""
            global _held
            _held = []
            refused = 0
            for p in paths:
                fd = os.open(p, os.O_RDONLY)
                _held.append(fd)
                for lock in (lambda: fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB),
                             lambda: fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)):
                    try:
                        lock()
                    except PermissionError:
                        refused += 1
            return refused
    ''',
}


SAMPLE_DIRS = ("torch", "stdlib")


def _sample_root(where: str) -> Path:
    base = Path(torch.__file__).parent if where == "torch" else Path(sysconfig.get_paths()["stdlib"])
    return base / "_ppo_atime_sample"


def _sample_files() -> list[Path]:
    """Host files a child can see (beside torch's own files and in the stdlib) that nothing else on the
    machine reads: a test run in parallel reads torch's and the stdlib's .py files for its tracebacks
    (linecache), so their access times would move for reasons of their own. Made here, removed after."""
    picks = []
    for where in SAMPLE_DIRS:
        folder = _sample_root(where)
        folder.mkdir(exist_ok=True)
        for i in range(8):
            path = folder / f"s{i}.py"
            if not path.exists():
                path.write_text(f"SAMPLE = {i}\n")
            picks.append(path)
    return picks


def _times(paths: list[Path]) -> dict[str, tuple[int, int, int]]:
    out = {}
    for p in paths:
        st = os.stat(p)
        out[str(p)] = (st.st_atime_ns, st.st_mtime_ns, st.st_ctime_ns)
    return out


def _inode_key(path) -> str:
    """How /proc/locks names a file: ``MAJOR:MINOR:INODE`` (hex device numbers, decimal inode)."""
    st = os.stat(path)
    return f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"


def _locks(keys: set[str]) -> list[str]:
    """The /proc/locks entries on the files named by ``keys`` (the machine's other locks come and go)."""
    with open("/proc/locks") as fh:
        rows = [line.split() for line in fh]
    return sorted(" ".join(r[1:]) for r in rows if any(k in r for k in keys))


@pytest.fixture
def old_atimes():
    """Set the sample's access times a day before their mtime (so relatime would update them); restored after."""
    paths = _sample_files()
    saved = {p: os.stat(p) for p in paths}
    for p, st in saved.items():
        os.utime(p, ns=(st.st_mtime_ns - 2 * 86400 * 10**9, st.st_mtime_ns))
    yield paths
    for where in SAMPLE_DIRS:
        shutil.rmtree(_sample_root(where), ignore_errors=True)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")
def test_a_child_reading_everything_it_sees_leaves_no_trace(load, server, old_atimes):
    """atime/mtime/ctime of a sample of host files and /proc/locks unchanged after a child touched every file."""
    if not server.probe.get("mount_namespace"):
        pytest.skip("needs a mount namespace (the minimal root); without one the grader says so at start")
    before_times = _times(old_atimes)
    folders = sorted({str(p.parent) for p in old_atimes})
    keys = {_inode_key(p) for f in folders for p in Path(f).iterdir() if p.is_file() and not p.is_symlink()}
    before_locks = _locks(keys)
    child = load(WALKER, "walker", limits=FAST.model_copy(update={"call_timeout_s": 300.0, "cpu_time_s": 300}))
    # Every file of the sample's folders, and every 20th file elsewhere (the whole tree is ~165,000
    # files here: all of them would cost minutes on a loaded 2-core machine).
    seen, read, locked, changed = child.walk_and_touch([in_child(server, f) for f in folders], 20)
    assert seen > 10000 and read > seen // 40, (seen, read)  # it did walk and read the interpreter's files
    assert changed == 0, "the child could change a file's times"
    child.close()
    time.sleep(0.05)
    assert locked == 0, "a child could lock a file its siblings see (the lock calls are refused)"
    assert _times(old_atimes) == before_times, "reading in the child changed a host file's times"
    assert _locks(keys) == before_locks


def test_the_minimal_root_shows_only_what_the_interpreter_needs(load, server):
    """No machine folder beyond the binds: no /home, /srv, /opt, /var/lib, /usr/bin, /etc/passwd."""
    if not server.probe.get("mount_namespace"):
        pytest.skip("needs a mount namespace")
    child = load(WALKER, "walker")
    top = set(child.root_entries())
    needed_tops = {Path(in_child(server, p)).parts[1] for p in server_needed_paths()}
    assert top <= {"usr", "lib", "lib64", "lib32", "libx32", "etc", "dev", "proc", "tmp", "var"} | needed_tops, top
    assert not top & {"bin", "sbin", "boot", "sys", "run", "mnt", "srv"} - needed_tops
    assert set(child.root_entries("/etc")) <= {"ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime"}
    assert set(child.root_entries("/dev")) <= {"null", "zero", "full", "random", "urandom", "shm"}
    assert set(child.root_entries("/var")) == {"tmp"}


def server_needed_paths() -> list[str]:
    from grader.sandbox.sandbox import needed_paths

    return needed_paths()


def test_a_child_cannot_lock_what_its_siblings_see(load, server):
    """``flock`` and ``lockf`` on a file every child sees fail with EPERM: nothing enters the lock table."""
    if not server.probe.get("mount_namespace"):
        pytest.skip("needs a mount namespace")
    keys = {_inode_key(torch.__file__)}
    before = _locks(keys)
    child = load(WALKER, "walker")
    assert child.hold_locks([in_child(server, torch.__file__)]) == 2
    assert _locks(keys) == before  # (before issue 31: one more entry, a live channel to a sibling)
    child.close()
    deadline = time.monotonic() + 5
    while _locks(keys) != before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _locks(keys) == before
