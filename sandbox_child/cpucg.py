"""One CPU budget per child: a CPU cgroup quota, so that one child cannot starve a sibling into time-outs.

``RLIMIT_CPU`` bounds each process's CPU seconds over its life, not its share
of the machine while it runs: a child with 16 busy processes took 16/17 of
the CPU from a sibling graded at the same time (``grade-batch --jobs 2``), whose
wall-clock limits then ran out. A CPU cgroup holds all of a child's processes
to ``Limits.cpu_cores`` CPUs together (the CFS bandwidth quota: that many
periods of CPU time per period), whatever they fork.

Life of one child's CPU cgroup, as for its memory cgroup (``memcg``), all on the
trusted side before student code:

1. the fork server (root) makes ``<its own cpu cgroup>/ppo-sandbox-<server pid>/c<n>``
   with the quota before the fork (``CpuController.create``);
2. the child, still root and before any student code, moves itself in (``join``);
3. the fork server removes the leaf after the child's processes are gone (``remove``).

cgroup v1's ``cpu`` hierarchy (``/sys/fs/cgroup/cpu``, or ``cpu,cpuacct``) is
used here. With cgroup v2 one leaf holds every controller, so the quota is
written on the child's memory leaf instead (``memcg.Controller.create``).
Where neither can be made, ``CpuController.open`` returns why and the child is
bounded by ``RLIMIT_CPU`` and ``Limits.max_processes`` only (noted at start).
"""

from __future__ import annotations

import os

#: The CFS period, microseconds (the kernel's default); the quota is ``cores`` periods of it.
PERIOD_US = 100_000
_V1_ROOTS = ("/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct")


def quota_us(cores: float) -> int:
    """CPU microseconds per ``PERIOD_US`` for ``cores`` CPUs (at least 1 ms, the kernel's minimum).

    Raises:
        ValueError: ``cores`` is not a positive number.
    """
    if not cores > 0:
        raise ValueError(f"cpu_cores must be a positive number, got {cores!r}")
    return max(1000, int(round(float(cores) * PERIOD_US)))


def _write(path: str, value: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, value.encode("ascii"))
    finally:
        os.close(fd)


def _own_v1_path() -> str:
    """This process's path in the v1 ``cpu`` hierarchy (``/`` for the root)."""
    with open("/proc/self/cgroup", encoding="ascii") as fh:
        for line in fh.read().splitlines():
            _, controllers, path = line.split(":", 2)
            if "cpu" in controllers.split(","):
                return path
    raise OSError(2, "no cgroup v1 cpu line in /proc/self/cgroup")


class CpuController:
    """The fork server's CPU-cgroup sub-tree (``ppo-sandbox-<pid>`` in the v1 ``cpu`` hierarchy), one leaf per child.

    Args:
        base: the sub-tree's folder (absolute, under the cgroup mount).
    """

    def __init__(self, base: str) -> None:
        self.base = base
        self._next = 0

    @classmethod
    def open(cls, pid: int) -> "tuple[CpuController | None, str]":
        """Make this server's sub-tree; returns ``(controller, "")`` or ``(None, why not)``."""
        root = next((r for r in _V1_ROOTS if os.path.isfile(os.path.join(r, "cpu.cfs_quota_us"))), None)
        if root is None:
            return None, "no cgroup v1 cpu hierarchy with CFS quotas"
        try:
            base = os.path.join(root, _own_v1_path().lstrip("/"), f"ppo-sandbox-{pid}")
            os.makedirs(base, mode=0o755, exist_ok=True)
            ctl = cls(base)
            ctl.remove(ctl.create(1.0))  # fail here, at start, rather than in the first child
            return ctl, ""
        except (OSError, ValueError) as exc:
            return None, str(getattr(exc, "strerror", None) or exc)

    def create(self, cores: float) -> str:
        """A fresh leaf holding its processes to ``cores`` CPUs together; returns its folder.

        Raises:
            OSError: the kernel refused; ValueError: ``cores`` is not positive.
        """
        quota = quota_us(cores)
        self._next += 1
        path = os.path.join(self.base, f"c{self._next}")
        os.mkdir(path, 0o755)
        _write(os.path.join(path, "cpu.cfs_period_us"), str(PERIOD_US))
        _write(os.path.join(path, "cpu.cfs_quota_us"), str(quota))
        return path

    def remove(self, path: str) -> bool:
        """Remove a leaf whose processes are gone; False while it is still busy."""
        try:
            os.rmdir(path)
            return True
        except FileNotFoundError:
            return True
        except OSError:
            return False

    def close(self) -> None:
        """Remove the sub-tree (its empty leaves first)."""
        try:
            names = os.listdir(self.base)
        except OSError:
            return
        for name in names:
            self.remove(os.path.join(self.base, name))
        self.remove(self.base)


def join(path: str) -> None:
    """Move the calling process into the CPU leaf ``path`` (the child, as root, before any student code).

    Raises:
        OSError: the kernel refused (the child then runs no student code).
    """
    _write(os.path.join(path, "cgroup.procs"), str(os.getpid()))
