"""Red team 11: the graders' store on disk (`grader.hidden.disk_cache`) against the TA's own files and a changed
runtime; a child under the grader's own uid against the other processes of that uid.

- Its root may be any folder the TA names (``$PPO_COURSE_GRADER_CACHE_DIR``): pruning old grader versions
  must remove only the store's own version folders, never the TA's folders beside them (an earlier store
  removed every sub-folder of the root past the four most recently used: ``~/.cache`` lost pip's, torch's ...).
- The grader's fingerprint hashes sources only: a value computed under another torch, numpy, hypothesis or
  interpreter (an upgrade, or a store shared by machines of another kind) must be computed again, never read.
"""

from __future__ import annotations

import errno
import os
import re
import resource
import signal
from pathlib import Path

import pytest
import torch

from grader.hidden import cache, disk_cache


@pytest.fixture()
def store(tmp_path, monkeypatch):
    """A switched-on store in a fresh private root, and empty memory caches."""
    root = tmp_path / "store"
    root.mkdir(mode=0o700)
    monkeypatch.delenv("PPO_COURSE_NO_GRADER_CACHE", raising=False)
    monkeypatch.setenv(disk_cache.CACHE_DIR_ENV, str(root))
    cache.clear()
    disk_cache.switch_off()
    disk_cache.switch_on()
    yield root
    disk_cache.switch_off()
    disk_cache.runtime_identity.cache_clear()
    cache.clear()


def _old(folder: Path, stamp: int) -> Path:
    folder.mkdir(mode=0o700)
    (folder / "file").write_text("the TA's own")
    os.utime(folder, (stamp, stamp))
    return folder


def test_pruning_spares_the_folders_a_ta_keeps_beside_the_store(store):
    ta_folders = [_old(store / name, 1000 + i) for i, name in
                  enumerate(["pip", "huggingface", "torch", "thesis", "submissions_2025"])]
    # Named like a version folder, but holding a file the store never writes: not the store's either.
    lookalike = _old(store / ("ab" * 16), 999)
    for i in range(5):  # the store's own old versions: only these may go
        version = store / f"{i:032x}"
        version.mkdir(mode=0o700)
        (version / ("0" * 64)).write_bytes(b"x")
        os.utime(version, (2000 + i, 2000 + i))
    cache.cached("reference_call", ("f", 1), lambda: torch.zeros(2), persist=True)
    for folder in [*ta_folders, lookalike]:
        assert (folder / "file").read_text() == "the TA's own", f"{folder.name} was removed by the store's pruning"
    versions = [p for p in store.iterdir() if re.fullmatch(r"[0-9a-f]{32}", p.name) and p != lookalike]
    assert len(versions) == disk_cache.KEEP_VERSIONS  # the current one and the three most recent old ones


@pytest.mark.parametrize("module", ["torch", "numpy", "hypothesis"])
def test_a_value_from_another_runtime_is_computed_again(store, monkeypatch, module):
    cache.cached("reference_call", ("f", torch.ones(3)), lambda: torch.full((3,), 7.0), persist=True)
    cache.clear()  # a fresh process
    upgraded = __import__(module)
    monkeypatch.setattr(upgraded, "__version__", "999.0.0-upgraded")
    disk_cache.runtime_identity.cache_clear()
    calls = []
    got = cache.cached("reference_call", ("f", torch.ones(3)),
                       lambda: calls.append(1) or torch.full((3,), 8.0), persist=True)
    assert calls == [1], f"a value computed under another {module} was read from the store"
    assert torch.equal(got, torch.full((3,), 8.0))
    # Back on the first runtime, its own value is read again (bit for bit), not the other runtime's.
    monkeypatch.undo()
    monkeypatch.delenv("PPO_COURSE_NO_GRADER_CACHE", raising=False)
    monkeypatch.setenv(disk_cache.CACHE_DIR_ENV, str(store))
    disk_cache.runtime_identity.cache_clear()
    cache.clear()
    again = cache.cached("reference_call", ("f", torch.ones(3)), lambda: pytest.fail("computed again"), persist=True)
    assert torch.equal(again, torch.full((3,), 7.0))


# -- a child under the grader's own uid (the grader is not root) acting on other processes -------------------------
#
# Confirmed as nobody (/work/attack11/a03_nonroot_kill_siblings): a module's import listed /proc, found the
# children forked by its own fork server (a classmate's module graded at the same time) and SIGKILLed them, or set
# their RLIMIT_CPU to 0 (killed on their next CPU second: "timeout"), pinned them to one CPU, reniced them and every
# process of the uid. The kernel allows all of it between processes of one uid; the filter now refuses it.

def _in_filtered_child(probe) -> list[str]:
    """Run ``probe(sibling_pid)`` in a fork that loaded the child's filter with ``self_only`` (as
    `sandbox_child.isolate.confine` does for a child under the grader's uid); returns its lines."""
    from sandbox_child import syscall_filter

    if syscall_filter.available() is not None:
        pytest.skip(f"no seccomp here: {syscall_filter.available()}")  # the sandbox refuses to grade there too
    sibling = os.fork()
    if sibling == 0:  # a classmate's child: it only waits
        signal.pause()
        os._exit(0)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            syscall_filter.install(single_process=True, self_only=True)
            lines = probe(sibling)
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            lines = [f"probe failed: {exc!r}"]
        os.write(write_end, "\n".join(lines).encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as fh:
        out = fh.read().splitlines()
    os.waitpid(pid, 0)
    alive = os.waitpid(sibling, os.WNOHANG) == (0, 0)
    os.kill(sibling, signal.SIGKILL)
    os.waitpid(sibling, 0)
    return out + [f"sibling alive: {alive}"]


def _sigio_owner(pid: int, send: bool = True) -> None:
    """Make ``pid`` the SIGIO owner of a pipe (``F_SETOWN``), then (``send``) make the pipe readable with O_ASYNC
    on: the kernel sends SIGIO, which terminates by default (confirmed as nobody: a06_nonroot_sigio_owner)."""
    import fcntl

    read_end, write_end = os.pipe()
    try:
        fcntl.fcntl(read_end, fcntl.F_SETOWN, pid)
        if send:
            fcntl.fcntl(read_end, fcntl.F_SETFL, fcntl.fcntl(read_end, fcntl.F_GETFL) | os.O_ASYNC)
            os.write(write_end, b"x")
    finally:
        os.close(read_end)
        os.close(write_end)


def _sigio_owner_ioctl(pid: int) -> None:
    """``FIOSETOWN`` on a socket: the same owner, through memory the filter cannot read."""
    import fcntl
    import socket
    import struct

    left, right = socket.socketpair()
    with left, right:
        fcntl.ioctl(left.fileno(), 0x8901, struct.pack("i", pid))


def _outcome(call) -> str:
    try:
        call()
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))
    return "done"


def test_a_child_under_the_graders_uid_cannot_act_on_another_process():
    def probe(sibling: int) -> list[str]:
        return [
            f"kill sibling: {_outcome(lambda: os.kill(sibling, signal.SIGKILL))}",
            f"kill every process: {_outcome(lambda: os.kill(-1, 0))}",
            f"prlimit sibling: {_outcome(lambda: resource.prlimit(sibling, resource.RLIMIT_CPU, (0, 0)))}",
            f"affinity sibling: {_outcome(lambda: os.sched_setaffinity(sibling, {0}))}",
            f"nice sibling: {_outcome(lambda: os.setpriority(os.PRIO_PROCESS, sibling, 19))}",
            f"nice the uid: {_outcome(lambda: os.setpriority(os.PRIO_USER, 0, 19))}",
            f"pidfd sibling: {_outcome(lambda: os.close(os.pidfd_open(sibling)))}",
            f"SIGIO owner sibling: {_outcome(lambda: _sigio_owner(sibling))}",
            f"SIGIO owner by ioctl: {_outcome(lambda: _sigio_owner_ioctl(sibling))}",
        ]

    got = _in_filtered_child(probe)
    assert got == ["kill sibling: EPERM", "kill every process: EPERM", "prlimit sibling: EPERM",
                   "affinity sibling: EPERM", "nice sibling: EPERM", "nice the uid: EPERM", "pidfd sibling: EPERM",
                   "SIGIO owner sibling: EPERM", "SIGIO owner by ioctl: EPERM", "sibling alive: True"], got


def test_a_child_under_the_graders_uid_still_acts_on_itself():
    def probe(sibling: int) -> list[str]:
        me = os.getpid()
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        return [
            f"signal 0 to itself: {_outcome(lambda: os.kill(me, 0))}",
            f"signal its own group: {_outcome(lambda: os.kill(0, 0))}",
            f"raise a handled signal: {_outcome(lambda: signal.raise_signal(signal.SIGUSR1))}",
            f"lower its own limit: {_outcome(lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard)))}",
            f"prlimit itself: {_outcome(lambda: resource.prlimit(me, resource.RLIMIT_NOFILE))}",
            f"its own affinity: {_outcome(lambda: os.sched_setaffinity(0, os.sched_getaffinity(0)))}",
            f"nice itself: {_outcome(lambda: os.setpriority(os.PRIO_PROCESS, 0, os.getpriority(os.PRIO_PROCESS, 0)))}",
            f"SIGIO owner itself: {_outcome(lambda: _sigio_owner(me, send=False))}",
        ]

    signal.signal(signal.SIGUSR1, lambda *_: None)
    try:
        got = _in_filtered_child(probe)
    finally:
        signal.signal(signal.SIGUSR1, signal.SIG_DFL)
    assert all(line.endswith(": done") for line in got[:-1]), got


@pytest.mark.parametrize("low, high", [(1, 6), (0, 0), (7, 3), (1, 4194303), (5, 5), (2**63, 2**64 - 1)])
def test_aligned_blocks_cover_exactly_the_range(low, high):
    from sandbox_child.syscall_filter import aligned_blocks

    blocks = aligned_blocks(low, high)
    # The oracle is the range itself: sample its edges and neighbours (the blocks are disjoint by construction,
    # so their sizes must add up to the range's length).
    probes = {low - 1, low, low + 1, high - 1, high, high + 1, (low + high) // 2}
    for x in (p for p in probes if 0 <= p < 2**64):
        inside = any(x & mask == value for mask, value in blocks)
        assert inside == (low <= x <= high), (x, blocks)
    sizes = sum((~mask & (2**64 - 1)) + 1 for mask, _ in blocks)
    assert sizes == max(0, high - low + 1)
    if (low, high) == (1, 6):  # by hand: {1}, {2, 3}, {4, 5}, {6}
        assert [value for _, value in blocks] == [1, 2, 4, 6]


def test_the_machines_proc_is_bound_read_only_where_no_fresh_one_is_mounted(tmp_path):
    """A child that cannot mount a /proc of its own (a grader that is not root) gets the machine's, which lists the
    grader's processes: writable, a child under the grader's uid raised their ``oom_score_adj`` to 1000 (confirmed
    as nobody: /work/attack11/a05_nonroot_proc_writes). Built here as root with ``fresh_proc=False``."""
    from grader.sandbox.sandbox import needed_paths
    from sandbox_child import linux, rootfs

    if os.geteuid() != 0:
        pytest.skip("building a minimal root outside the sandbox needs root")
    parent = os.getpid()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            linux.unshare(linux.CLONE_NEWNS)
            linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE, None)
            new_root = tmp_path / "root"
            new_root.mkdir(mode=0o700)
            rootfs.build(str(new_root), needed_paths(), 8, fresh_proc=False)
            try:
                with open(f"/proc/{parent}/oom_score_adj", "w") as fh:
                    fh.write("1000")
                said = "written"
            except OSError as exc:
                said = errno.errorcode.get(exc.errno, str(exc.errno))
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            said = f"set-up failed: {exc!r}"
        os.write(write_end, said.encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as fh:
        said = fh.read()
    os.waitpid(pid, 0)
    with open(f"/proc/{parent}/oom_score_adj") as fh:
        score = fh.read().strip()
    assert said == "EROFS" and score != "1000", (said, score)
