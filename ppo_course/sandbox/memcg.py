"""One memory budget per child: a memory cgroup made by the fork server before the child runs student code.

``RLIMIT_AS`` is per process, and pages of memory-backed files (``memfd``,
tmpfs, ``/dev/shm``) count against no process at all: a child with 16
processes could hold 16 budgets and more in memfds. A
memory cgroup counts every page the child's processes fault in, shared memory
and tmpfs included (the kernel charges shmem pages to the cgroup of the task
that faulted them), so one limit holds the whole sandbox.

Life of one child's cgroup (all on the trusted side, before student code):

1. the fork server (root) makes ``<its own memory cgroup>/ppo-sandbox-<server pid>/c<n>``
   before the fork (``Controller.create``);
2. the child, still root and before any student code, moves itself in
   (``Budget.join``) and, once its set-up is done, sets the limit to what it uses
   now plus ``Limits.memory_mb`` plus ``HEADROOM_MB`` for the interpreter's
   own copy-on-write pages (``Budget.set``), the same "on top of the
   interpreter + torch" meaning as ``RLIMIT_AS``; swap is not allowed to
   stretch it (``memsw`` / ``memory.swap.max``);
3. an OOM in the cgroup kills the whole child (cgroup v2 ``memory.oom.group``;
   on v1 the fork server watches ``memory.oom_control`` through an eventfd and
   kills the child's processes) and is reported as out of memory
   (``oom_kills``);
4. the fork server removes the cgroup after the child's processes are gone
   (``remove``).

cgroup v2 is used where its memory controller can be delegated to a new
sub-tree; else v1 (``/sys/fs/cgroup/memory``, writable by root on the
machines this project is built on). Where neither can be made,
``Controller.open`` returns why, the fork server says so at start, and the
child is bounded without a cgroup (see ``isolate.confine``: one process, no
memfd, address space minus the tmpfs sizes).
"""

from __future__ import annotations

import os

from ppo_course.sandbox import cpucg

#: MiB above ``memory_mb`` for pages the interpreter itself copies after the fork (refcounts, GC).
HEADROOM_MB = 64
_V1_ROOT = "/sys/fs/cgroup/memory"
_V2_ROOT = "/sys/fs/cgroup"


def _read(path: str) -> str:
    with open(path, encoding="ascii") as fh:
        return fh.read()


def _write(path: str, value: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, value.encode("ascii"))
    finally:
        os.close(fd)


def _own_path(version: int) -> str:
    """This process's cgroup path in the memory hierarchy (``/`` for the root)."""
    for line in _read("/proc/self/cgroup").splitlines():
        hid, controllers, path = line.split(":", 2)
        if (version == 2 and hid == "0" and controllers == "") or (version == 1 and "memory" in controllers.split(",")):
            return path
    raise OSError(2, f"no cgroup v{version} memory line in /proc/self/cgroup")


def _stat_counter(text: str, key: str) -> int:
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == key:
            return int(parts[1])
    return 0


class Controller:
    """The fork server's memory-cgroup sub-tree (``ppo-sandbox-<pid>``), one leaf per child.

    Args:
        version: 1 or 2.
        base: the sub-tree's folder (absolute, under the cgroup mount).
    """

    def __init__(self, version: int, base: str) -> None:
        self.version = version
        self.base = base
        self._next = 0
        #: v2 only: the cpu controller is enabled too, and each leaf gets ``cpu.max`` (``cpucg`` otherwise)
        self.cpu = False

    @classmethod
    def open(cls, pid: int) -> "tuple[Controller | None, str]":
        """Make this server's sub-tree; returns ``(controller, "")`` or ``(None, why not)``.

        Leftover sub-trees of dead fork servers (a crashed grader) are removed first.
        """
        reasons = []
        for version in (2, 1):
            try:
                return cls._open(version, pid), ""
            except (OSError, ValueError) as exc:
                reasons.append(f"v{version}: {getattr(exc, 'strerror', None) or exc}")
        return None, "; ".join(reasons)

    @classmethod
    def _open(cls, version: int, pid: int) -> "Controller":
        if version == 2:
            if "memory" not in _read(os.path.join(_V2_ROOT, "cgroup.controllers")).split():
                raise OSError(95, "no memory controller in the unified hierarchy")
            parent = os.path.join(_V2_ROOT, _own_path(2).lstrip("/"))
            # The "no internal processes" rule: this needs a delegated cgroup whose own processes
            # live in a leaf (systemd's Delegate=yes); EBUSY otherwise.
            _write(os.path.join(parent, "cgroup.subtree_control"), "+memory")
        else:
            if not os.path.isdir(_V1_ROOT):
                raise OSError(2, f"{_V1_ROOT} is not mounted")
            parent = os.path.join(_V1_ROOT, _own_path(1).lstrip("/"))
        _remove_abandoned(parent)
        base = os.path.join(parent, f"ppo-sandbox-{pid}")
        os.makedirs(base, mode=0o755, exist_ok=True)
        if version == 2:
            _write(os.path.join(base, "cgroup.subtree_control"), "+memory")
        ctl = cls(version, base)
        if version == 2:
            ctl.cpu = _enable_cpu(parent, base)
        probe = ctl.create()  # fail here, at start, rather than in the first child
        ctl.remove(probe)
        return ctl

    def create(self, cpu_cores: float = 1.0) -> str:
        """A fresh leaf for one child (mode 0755, owned by root); returns its folder.

        On v2 with the cpu controller enabled, the leaf also holds its processes to ``cpu_cores`` CPUs
        together (``cpu.max``, ``cpucg.quota_us`` per ``cpucg.PERIOD_US``).
        """
        self._next += 1
        path = os.path.join(self.base, f"c{self._next}")
        os.mkdir(path, 0o755)
        if self.version == 2:
            _write(os.path.join(path, "memory.oom.group"), "1")
            if self.cpu:
                _write(os.path.join(path, "cpu.max"), f"{cpucg.quota_us(cpu_cores)} {cpucg.PERIOD_US}")
        return path

    def oom_kills(self, path: str) -> int:
        """How many processes the kernel's OOM killer has killed in the leaf (0 when unreadable)."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            return _stat_counter(_read(os.path.join(path, name)), "oom_kill")
        except (OSError, ValueError):
            return 0

    def watch_oom(self, path: str) -> int | None:
        """A non-blocking eventfd that becomes readable at an OOM in the leaf (v1), or None (v2: oom.group)."""
        if self.version == 2:
            return None
        efd = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
        ofd = os.open(os.path.join(path, "memory.oom_control"), os.O_RDONLY | os.O_CLOEXEC)
        try:
            _write(os.path.join(path, "cgroup.event_control"), f"{efd} {ofd}")
        except OSError:
            os.close(efd)
            return None
        finally:
            os.close(ofd)
        return efd

    def remove(self, path: str) -> bool:
        """Remove a leaf whose processes are gone (its charges move to the parent); False if still busy."""
        try:
            os.rmdir(path)
            return True
        except FileNotFoundError:
            return True
        except OSError:
            return False

    def close(self) -> None:
        """Remove the sub-tree (its leaves first)."""
        _remove_tree(self.base)


class Budget:
    """The child's own handle on its leaf, opened as root before its root changes (``rootfs``).

    Args:
        path: the leaf's folder (``Controller.create``).
        version: 1 or 2.

    Raises:
        OSError: a control file could not be opened (the child then runs no student code).
    """

    def __init__(self, path: str, version: int) -> None:
        names = (("memory.current", "memory.max", "memory.swap.max") if version == 2 else
                 ("memory.usage_in_bytes", "memory.limit_in_bytes", "memory.memsw.limit_in_bytes"))
        self.path = path
        self.usage = os.open(os.path.join(path, names[0]), os.O_RDONLY | os.O_CLOEXEC)
        self.limit = os.open(os.path.join(path, names[1]), os.O_WRONLY | os.O_CLOEXEC)
        swap = os.path.join(path, names[2])
        self.swap = os.open(swap, os.O_WRONLY | os.O_CLOEXEC) if os.path.exists(swap) else None
        self.version = version

    def join(self) -> None:
        """Move the calling process into the leaf (root, in the child, before any student code).

        Raises:
            OSError: the kernel refused (the child then does not run student code).
        """
        _write(os.path.join(self.path, "cgroup.procs"), str(os.getpid()))

    def set(self, memory_mb: int) -> int:
        """Limit the leaf to what it uses now + ``memory_mb`` + ``HEADROOM_MB`` MiB, swap included; returns bytes.

        Closes the handle. Raises ``OSError`` when the limit could not be written.
        """
        try:
            os.lseek(self.usage, 0, os.SEEK_SET)
            usage = int(os.read(self.usage, 64).decode("ascii").strip())
            limit = usage + (int(memory_mb) + HEADROOM_MB) * 2**20
            os.write(self.limit, str(limit).encode("ascii"))
            if self.swap is not None:
                # v2: no swap at all; v1: memory + swap under the same limit (swapping does not stretch it).
                os.write(self.swap, (b"0" if self.version == 2 else str(limit).encode("ascii")))
            return limit
        finally:
            for fd in (self.usage, self.limit, self.swap):
                if fd is not None:
                    os.close(fd)


def _enable_cpu(parent: str, base: str) -> bool:
    """Enable v2's cpu controller for the sub-tree's leaves; False where the kernel or the parent refuses."""
    try:
        _write(os.path.join(parent, "cgroup.subtree_control"), "+cpu")
        _write(os.path.join(base, "cgroup.subtree_control"), "+cpu")
        return True
    except OSError:
        return False


def _remove_tree(path: str) -> None:
    try:
        entries = os.listdir(path)
    except OSError:
        return
    for name in entries:
        sub = os.path.join(path, name)
        if os.path.isdir(sub):
            _remove_tree(sub)
    try:
        os.rmdir(path)
    except OSError:
        pass


def _remove_abandoned(parent: str) -> None:
    """Remove ``ppo-sandbox-<pid>`` sub-trees whose fork server is dead (empty leaves only)."""
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        if name.startswith("ppo-sandbox-") and name[12:].isdigit() and not os.path.exists(f"/proc/{name[12:]}"):
            _remove_tree(os.path.join(parent, name))


def probe() -> bool:
    """Whether a memory cgroup can be made here (made and removed at once)."""
    ctl, _ = Controller.open(os.getpid())
    if ctl is None:
        return False
    ctl.close()
    return True
