"""The child's minimal root (issue 19, class 1): reading what it sees leaves no trace for the next child.

A child walks every file it can see, reads a byte of each, takes an ``flock``
on it, and tries to change its times; afterwards the machine's files have the
times they had (access times set old enough beforehand that ``relatime`` would
have updated them on a read-write mount), and ``/proc/locks`` is as it was.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import time
from pathlib import Path

import pytest
import torch

from sandbox_helpers import FAST

WALKER = {
    "walker.py": '''
        import fcntl, os

        def root_entries(path="/"):
            return sorted(os.listdir(path))

        def walk_and_touch(limit=200000):
            seen = read = locked = changed = 0
            for dirpath, dirnames, filenames in os.walk("/"):
                if dirpath == "/" :
                    dirnames[:] = [d for d in dirnames if d not in ("proc", "sys")]
                for name in filenames:
                    path = os.path.join(dirpath, name)
                    seen += 1
                    if seen > limit:
                        return seen, read, locked, changed
                    try:
                        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
                    except OSError:
                        continue
                    try:
                        if os.read(fd, 1):
                            read += 1
                        try:
                            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                            locked += 1
                        except OSError:
                            pass
                        try:
                            fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                        except OSError:
                            pass
                        try:
                            os.utime(path, (0, 0))
                            changed += 1
                        except OSError:
                            pass
                    except OSError:
                        pass
                    finally:
                        os.close(fd)
            return seen, read, locked, changed

        def hold_locks(paths):
            """Take and keep (until the child dies) a lock on each path."""
            global _held
            _held = []
            for p in paths:
                fd = os.open(p, os.O_RDONLY)
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                _held.append(fd)
            return len(_held)
    ''',
}


def _sample_files() -> list[Path]:
    """Host files every child reads or can see: stdlib, torch, the public package, system libraries, /etc."""
    import ppo_course

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    picks = [stdlib / "os.py", stdlib / "json" / "__init__.py", Path(torch.__file__), Path(ppo_course.__file__),
             Path("/etc/ld.so.cache")]
    picks += sorted(Path(torch.__file__).parent.glob("*.py"))[:10]
    picks += sorted(p for p in Path("/usr/lib").rglob("*.so*") if p.is_file() and not p.is_symlink())[:10]
    return [p for p in picks if p.is_file()]


def _times(paths: list[Path]) -> dict[str, tuple[int, int, int]]:
    out = {}
    for p in paths:
        st = os.stat(p)
        out[str(p)] = (st.st_atime_ns, st.st_mtime_ns, st.st_ctime_ns)
    return out


def _locks() -> list[str]:
    # The first column numbers the entries; the rest names the lock and inode.
    with open("/proc/locks") as fh:
        return sorted(" ".join(line.split()[1:]) for line in fh)


@pytest.fixture
def old_atimes():
    """Set the sample's access times a day before their mtime (so relatime would update them); restored after."""
    paths = _sample_files()
    saved = {p: os.stat(p) for p in paths}
    for p, st in saved.items():
        os.utime(p, ns=(st.st_mtime_ns - 2 * 86400 * 10**9, st.st_mtime_ns))
    yield paths
    for p, st in saved.items():
        try:
            os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
        except OSError:
            pass


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")
def test_a_child_reading_everything_it_sees_leaves_no_trace(load, server, old_atimes):
    """atime/mtime/ctime of a sample of host files and /proc/locks unchanged after a child touched every file."""
    if not server.probe.get("mount_namespace"):
        pytest.skip("needs a mount namespace (the minimal root); without one the grader says so at start")
    before_times = _times(old_atimes)
    before_locks = _locks()
    child = load(WALKER, "walker", limits=FAST.model_copy(update={"call_timeout_s": 60.0}))
    seen, read, locked, changed = child.walk_and_touch()
    assert seen > 1000 and read > 1000, (seen, read)  # it did see and read the interpreter's files
    assert changed == 0, "the child could change a file's times"
    child.close()
    time.sleep(0.05)
    assert _times(old_atimes) == before_times, "reading in the child changed a host file's times"
    assert _locks() == before_locks


def test_the_minimal_root_shows_only_what_the_interpreter_needs(load, server):
    """No machine folder beyond the binds: no /home, /srv, /opt, /var/lib, /usr/bin, /etc/passwd."""
    if not server.probe.get("mount_namespace"):
        pytest.skip("needs a mount namespace")
    child = load(WALKER, "walker")
    top = set(child.root_entries())
    needed_tops = {Path(p).parts[1] for p in server_needed_paths()}
    assert top <= {"usr", "lib", "lib64", "lib32", "libx32", "etc", "dev", "proc", "tmp", "var"} | needed_tops, top
    assert not top & {"bin", "sbin", "boot", "sys", "run", "mnt", "srv"} - needed_tops
    assert set(child.root_entries("/etc")) <= {"ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime"}
    assert set(child.root_entries("/dev")) <= {"null", "zero", "full", "random", "urandom", "shm"}
    assert set(child.root_entries("/var")) == {"tmp"}


def server_needed_paths() -> list[str]:
    from grader.sandbox.sandbox import needed_paths

    return needed_paths()


def test_locks_a_child_holds_go_with_it(load, server):
    """A child's flock on a file it can see is in /proc/locks while it lives, and gone after it."""
    if not server.probe.get("mount_namespace"):
        pytest.skip("needs a mount namespace")
    before = _locks()
    child = load(WALKER, "walker")
    assert child.hold_locks([torch.__file__]) == 1
    assert len(_locks()) == len(before) + 1  # a live channel to a sibling (docs/threat_model.md), bounded by its life
    child.close()
    deadline = time.monotonic() + 5
    while _locks() != before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _locks() == before
