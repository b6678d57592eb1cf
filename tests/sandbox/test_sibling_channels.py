"""Two children graded at the same time cannot move one bit from one to the other (issue 31, class 2).

Siblings share the inodes of the interpreter's files (read-only binds of the same
venv and torch), the machine's lock table and, without namespaces, IPC keys, abstract
socket names and ``/dev/shm``. For every such channel, one child (the sender) sets
the bit 0 or 1 and holds it, while a second child, alive at the same time, reads it;
the receiver must read the same thing for both bits. On main the lock channels
carried the bit (a classmate's answers were relayed through byte-range locks far past
the end of a torch file); the CPU budget test checks that a child whose processes
spin cannot take a sibling's CPU.

The pid counter has its own test: a sender starting processes or not, a receiver reading
its next pid, ``ns_last_pid``, ``/proc/loadavg`` and ``/proc/stat`` (on main every one of
them carried the bit; now each child has a pid namespace and the machine-wide counts read
empty). Not covered here (docs/threat_model.md, "Live channels"): ``sysinfo(2)``'s task
count and timing (load, page cache).
"""

from __future__ import annotations

import glob
import time
from pathlib import Path

import pytest
import torch

from grader.sandbox import Limits
from sandbox_helpers import in_child

RELAY = {
    "relay.py": r'''
        import ctypes, errno, fcntl, os, socket, struct

        _libc = ctypes.CDLL(None, use_errno=True)
        _held = []
        _watch = {}
        F_OFD_GETLK, F_OFD_SETLK = 36, 37
        FAR = 2**40  # a byte range far past the end of the file: nothing else ever locks it

        def _flock_struct(kind):
            return struct.pack("hh4xqqi4x", kind, 0, FAR, 1, 0)

        def _err(exc):
            return errno.errorcode.get(exc.errno, str(exc.errno))

        def _check(ret):
            if ret < 0:
                raise OSError(ctypes.get_errno(), "call failed")
            return ret

        def send(channel, path, bit):
            """Set the channel's bit (and hold it until release()); returns what the attempt did."""
            if not bit:
                return "idle"
            try:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
                _held.append(fd)
                if channel == "flock":
                    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                elif channel in ("posix", "proc_locks"):
                    fcntl.fcntl(fd, fcntl.F_SETLK, _flock_struct(fcntl.F_RDLCK))
                elif channel == "ofd":
                    fcntl.fcntl(fd, F_OFD_SETLK, _flock_struct(fcntl.F_RDLCK))
                elif channel == "inotify":
                    for _ in range(20):
                        os.pread(fd, 16, 0)
                elif channel == "sysv_sem":
                    _check(_libc.semget(0x5050, 1, 0o1666))
                elif channel == "sysv_shm":
                    _check(_libc.shmget(0x5051, 4096, 0o1666))
                elif channel == "posix_shm":
                    with open("/dev/shm/ppo-sibling", "w") as fh:
                        fh.write("1")
                elif channel == "abstract_socket":
                    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    sock.bind("\0ppo-sibling")
                    _held.append(sock)
                return "set"
            except OSError as exc:
                return _err(exc)

        def release():
            while _held:
                item = _held.pop()
                item.close() if hasattr(item, "close") else os.close(item)

        def prepare(channel, path):
            """What the receiver must do before the sender acts (an inotify watch)."""
            if channel != "inotify":
                return "none"
            try:
                fd = _check(_libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC))
                _check(_libc.inotify_add_watch(fd, path.encode(), 0x1 | 0x20))  # IN_ACCESS | IN_OPEN
                _watch[path] = fd
                return "watching"
            except OSError as exc:
                return _err(exc)

        def receive(channel, path):
            """What the receiver reads on the channel (must not depend on the sender's bit)."""
            try:
                if channel == "inotify":
                    fd = _watch.pop(path, None)
                    if fd is None:
                        return "no watch"
                    try:
                        return "events" if os.read(fd, 4096) else "none"
                    except BlockingIOError:
                        return "none"
                    finally:
                        os.close(fd)
                if channel == "proc_locks":
                    with open("/proc/locks") as fh:
                        return "FAR" if str(FAR) in fh.read() else "clear"
                if channel == "sysv_sem":
                    return _check(_libc.semget(0x5050, 1, 0)) >= 0 and "exists"
                if channel == "sysv_shm":
                    return _check(_libc.shmget(0x5051, 4096, 0)) >= 0 and "exists"
                if channel == "posix_shm":
                    return os.path.exists("/dev/shm/ppo-sibling")
                if channel == "abstract_socket":
                    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    try:
                        sock.bind("\0ppo-sibling")
                        return "free"
                    finally:
                        sock.close()
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
                try:
                    if channel == "flock":
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        return "free"
                    command = fcntl.F_GETLK if channel == "posix" else F_OFD_GETLK
                    got = fcntl.fcntl(fd, command, _flock_struct(fcntl.F_WRLCK))
                    return struct.unpack("hh4xqqi4x", got)[0]
                finally:
                    os.close(fd)
            except OSError as exc:
                return _err(exc)
    ''',
}

#: Every channel of the test, and the shared file (a torch module both children see) it uses.
CHANNELS = ("flock", "posix", "ofd", "proc_locks", "inotify", "sysv_sem", "sysv_shm", "posix_shm", "abstract_socket")
_FILES = ("functional.py", "serialization.py", "overrides.py", "hub.py", "random.py", "storage.py",
          "quasirandom.py", "return_types.py", "types.py")


def test_two_children_alive_together_cannot_move_a_bit(load, server):
    """For each channel: the receiver reads the same for the sender's 0 and 1; the lock calls are refused."""
    limits = Limits(call_timeout_s=30.0, import_timeout_s=30.0)
    sender = load(RELAY, "relay", limits=limits)
    receiver = load(RELAY, "relay", limits=limits)
    torch_dir = torch.__file__.rsplit("/", 1)[0]
    readings, attempts = {}, {}
    for channel, name in zip(CHANNELS, _FILES):
        path = in_child(server, f"{torch_dir}/{name}")
        seen = []
        for bit in (0, 1, 0, 1):
            receiver.prepare(channel, path)
            attempts[(channel, bit)] = sender.send(channel, path, bit)
            seen.append(receiver.receive(channel, path))
            sender.release()
        readings[channel] = seen
    carried = {ch: seen for ch, seen in readings.items() if len(set(map(repr, seen))) > 1}
    assert not carried, f"a bit moved between siblings: {carried} (sender: {attempts})"
    # The sender really tried: each lock and notification call is refused, not silently a no-op.
    for channel in ("flock", "posix", "ofd", "proc_locks"):
        assert attempts[(channel, 1)] == "EPERM", (channel, attempts[(channel, 1)])
    assert readings["inotify"] == ["EPERM"] * 4 or set(readings["inotify"]) == {"no watch"}
    assert set(readings["proc_locks"]) == {"clear"}


def test_a_child_uses_at_most_its_cpu_quota(load, server):
    """A child whose 4 processes spin for 2 s gets at most ``Limits.cpu_cores`` (1) CPU: its sibling keeps the other.

    Unbounded, the 4 processes take both cores of an idle 2-core machine (~2 CPU s per wall second).
    """
    if not server.probe.get("memory_cgroup"):
        pytest.skip("needs root and cgroups (the CPU quota is made beside the memory cgroup)")
    spinner = load({"spin.py": '''
        import os, time

        def spin(seconds, processes):
            """CPU seconds per wall second that ``processes`` busy processes got together for ``seconds``."""
            start, before = time.monotonic(), os.times()
            pids = []
            for _ in range(processes):
                pid = os.fork()
                if pid == 0:
                    end = time.monotonic() + seconds
                    while time.monotonic() < end:
                        pass
                    os._exit(0)
                pids.append(pid)
            for pid in pids:
                os.waitpid(pid, 0)
            after = os.times()
            used = (after.children_user - before.children_user) + (after.children_system - before.children_system)
            return used / (time.monotonic() - start)
    '''}, "spin", limits=Limits(call_timeout_s=30.0, import_timeout_s=30.0, cpu_time_s=60))
    rate = spinner.spin(2.0, 4)
    # On a loaded machine the processes may get less than their quota: the bound is from above.
    assert 0.0 < rate <= 1.15, f"the child's processes got {rate:.2f} CPU s per second together (quota: 1 CPU)"
    leaves = [Path(p) for p in glob.glob(f"/sys/fs/cgroup/cpu/ppo-sandbox-{server.pid}/c[0-9]*")]
    if Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").exists():
        # cgroup v1 (this machine): the live child's leaf holds the quota and counted its processes' time
        assert leaves, "no CPU cgroup for the fork server's children"
        live = [leaf for leaf in leaves if (leaf / "cgroup.procs").read_text().split()]
        assert live, "the live child is in no CPU cgroup"
        for leaf in live:  # every child of these tests has the default quota of 1 CPU
            assert int((leaf / "cpu.cfs_quota_us").read_text()) == 100_000
            assert int((leaf / "cpu.cfs_period_us").read_text()) == 100_000
        periods = [(leaf / "cpu.stat").read_text().split() for leaf in live]
        assert any(int(p[p.index("nr_periods") + 1]) > 0 for p in periods)


PID_RELAY = {
    "pids.py": r'''
        import os, signal, time

        _held = []
        _mark = {}

        def _fork_pid():
            """The pid a fresh process gets now (it exits at once and is reaped)."""
            pid = os.fork()
            if pid == 0:
                os._exit(0)
            os.waitpid(pid, 0)
            return pid

        def _read(path):
            try:
                with open(path) as fh:
                    return fh.read()
            except OSError as exc:
                return f"error {exc.errno}"

        def _processes(stat):
            for line in stat.splitlines():
                if line.startswith("processes "):
                    return int(line.split()[1])
            return None

        def send(bit, count=8):
            """Bit 1: start ``count`` processes (pids taken) that stay busy until release(); bit 0: nothing."""
            for _ in range(count if bit else 0):
                pid = os.fork()
                if pid == 0:
                    while True:
                        pass
                _held.append(pid)
            return len(_held)

        def release():
            while _held:
                pid = _held.pop()
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)

        def mark():
            """Before the sender acts: the pid counter as this child sees it."""
            _mark["pid"] = _fork_pid()
            _mark["processes"] = _processes(_read("/proc/stat"))

        def receive():
            """What this child reads of the machine's pid counter and task counts since mark()."""
            time.sleep(0.05)  # the sender's processes are scheduled
            processes = _processes(_read("/proc/stat"))
            last = _read("/proc/sys/kernel/ns_last_pid").strip()
            return {
                "ns_last_pid_delta": int(last) - _mark["pid"] if last.isdigit() else last,
                "new_pid_delta": _fork_pid() - _mark["pid"],
                "loadavg": _read("/proc/loadavg"),
                "stat_processes_delta": None if processes is None else processes - _mark["processes"],
                "stat_running": [l for l in _read("/proc/stat").splitlines() if l.startswith("procs_")],
            }

        def my_pid():
            return os.getpid(), os.getppid()
    ''',
}


def test_two_children_alive_together_cannot_move_a_bit_through_the_pid_counter(load, server):
    """The sender starts 8 busy processes (1) or none (0) while the receiver, alive too, reads every pid
    count it can reach: its next pid, ``/proc/loadavg``, ``/proc/stat``, ``ns_last_pid``.

    With the machine's one pid counter (no pid namespace) bit 1 moves the receiver's next pid by at least
    8 and ``/proc/loadavg``'s task count by 8, and the machine's other processes move them too; in a pid
    namespace of its own the receiver's next pid is its previous one + 1 whatever happens outside, and the
    machine-wide counts read empty.
    """
    if not server.probe.get("pid_namespace"):
        pytest.skip("the kernel grants no pid namespace here (docs/threat_model.md: what remains)")
    limits = Limits(call_timeout_s=30.0, import_timeout_s=30.0)
    sender = load(PID_RELAY, "pids", limits=limits)
    receiver = load(PID_RELAY, "pids", limits=limits)
    # The worker is pid 2 of its own namespace; its parent (pid 1) is the reaper.
    assert receiver.my_pid() == [2, 1] or receiver.my_pid() == (2, 1)
    seen, sent = [], []
    for bit in (0, 1, 0, 1):
        receiver.mark()
        sent.append(sender.send(bit))
        seen.append(receiver.receive())
        sender.release()
    assert sent == [0, 8, 0, 8], f"the sender did not start its processes: {sent}"
    carried = {key: [s[key] for s in seen] for key in seen[0] if len({repr(s[key]) for s in seen}) > 1}
    assert not carried, f"a bit moved between siblings through the pid counter: {carried}"
    assert seen[0]["new_pid_delta"] == 1  # only its own fork in between, counted in its own namespace
    assert seen[0]["loadavg"] == "" and seen[0]["stat_running"] == [] and seen[0]["stat_processes_delta"] is None


ZOMBIES = {
    "zombies.py": r'''
        import os, signal, time

        def orphans(count=3):
            """Start ``count`` grandchildren whose parent exits first; returns the zombies left after they end."""
            for _ in range(count):
                pid = os.fork()
                if pid == 0:
                    if os.fork() == 0:
                        time.sleep(0.05)
                        os._exit(0)
                    os._exit(0)
                os.waitpid(pid, 0)
            time.sleep(0.5)
            states = []
            for entry in os.listdir("/proc"):
                if entry.isdigit():
                    with open(f"/proc/{entry}/stat", "rb") as fh:
                        data = fh.read()
                    states.append(data[data.rindex(b")") + 2 :].split()[0].decode())
            return states.count("Z")

        def kill_myself(sig):
            os.kill(os.getpid(), sig)
            time.sleep(5)
    ''',
}


def test_orphans_are_reaped_and_a_signal_to_itself_ends_the_child(load, server):
    """Pid 1 of the child's namespace is a reaper: orphaned grandchildren leave no zombies; the worker is
    not pid 1, so ``kill(getpid(), SIGTERM)`` ends it and the grader reads "killed by SIGTERM"."""
    from grader.sandbox import StudentCrash

    if not server.probe.get("pid_namespace"):
        pytest.skip("the kernel grants no pid namespace here")
    child = load(ZOMBIES, "zombies", limits=Limits(call_timeout_s=10.0, import_timeout_s=30.0))
    assert child.orphans() == 0
    with pytest.raises(StudentCrash, match="killed by SIGTERM"):
        child.kill_myself(15)
