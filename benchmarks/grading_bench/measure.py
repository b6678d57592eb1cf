"""CPU-seconds, wall and peak memory of one command and its whole process tree.

CPU-seconds are ``resource.getrusage(RUSAGE_CHILDREN)`` deltas (user + system)
around the command: the kernel adds a process's CPU time to its parent's
children totals when the parent reaps it, so a command that waits for its own
children (a batch for its workers, a fork server for its sandboxed children,
nbgrader for its kernel) is charged for all of them. A process orphaned on
the way would escape that sum: this process makes itself a child subreaper
(Linux ``PR_SET_CHILD_SUBREAPER``), so orphans are re-parented here and
reaped (and counted) after the command ends. CPU-seconds, unlike wall time,
hardly depend on how loaded a shared machine is.

Peak memory is sampled over every descendant of this process: every 100 ms
the sum of resident set sizes (RSS, pages shared between forked processes
counted once per process: an upper bound) and the largest single RSS; every
500 ms the sum of proportional set sizes (PSS, each shared page split among
its users: what the tree really holds). PSS is sampled less often because
reading ``smaps_rollup`` of a process that imported torch costs a few
milliseconds, CPU taken from the run being measured on a small machine.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux); False where that is not possible."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _pss_bytes(pid: int) -> int:
    """Proportional set size of one process, from /proc/PID/smaps_rollup (0 when unreadable)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class PeakMemory:
    """Peak memory of this process's descendants (not this process), sampled as the module docstring says.

    Args:
        interval: seconds between RSS samples.
        pss_every: sample PSS on every n-th RSS sample (0: never).

    Attributes:
        peak_rss: bytes, the largest sum of RSS over the descendants seen.
        peak_pss: bytes, the largest sum of PSS over the descendants seen.
        peak_one_rss: bytes, the largest RSS of a single descendant seen.
    """

    def __init__(self, interval: float = 0.1, pss_every: int = 5) -> None:
        import psutil

        self._psutil = psutil
        self._interval = interval
        self._pss_every = pss_every
        self.peak_rss = 0
        self.peak_pss = 0
        self.peak_one_rss = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        me = self._psutil.Process()
        tick = 0
        while not self._stop.is_set():
            with_pss = self._pss_every > 0 and tick % self._pss_every == 0
            tick += 1
            rss = pss = 0
            try:
                procs = me.children(recursive=True)
            except self._psutil.Error:
                procs = []
            for p in procs:
                try:
                    one = p.memory_info().rss
                except self._psutil.Error:
                    continue
                rss += one
                self.peak_one_rss = max(self.peak_one_rss, one)
                if with_pss:
                    pss += _pss_bytes(p.pid)
            self.peak_rss = max(self.peak_rss, rss)
            self.peak_pss = max(self.peak_pss, pss)
            self._stop.wait(self._interval)

    def __enter__(self) -> "PeakMemory":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


@dataclass
class Measured:
    """One command's cost.

    Attributes:
        cpu_s: CPU-seconds (user + system) of the command and every descendant.
        wall_s: seconds from start to exit.
        peak_rss, peak_pss, peak_one_rss: bytes, as ``PeakMemory``'s (0 when memory was not sampled).
        returncode: the command's exit status.
        stdout, stderr: its output (text).
        strays: descendants still alive 10 s after it exited (then killed, reaped and counted).
        timed_out: it ran past its time-out and was killed.
    """

    cpu_s: float
    wall_s: float
    returncode: int
    stdout: str = ""
    stderr: str = ""
    peak_rss: int = 0
    peak_pss: int = 0
    peak_one_rss: int = 0
    strays: int = 0
    timed_out: bool = False


# Descendants that outlived their command by the grace period, killed so far (reported by the benchmark).
STRAYS_KILLED = 0


def _reap_orphans(grace_s: float = 10.0) -> int:
    """Reap re-parented orphans; after `grace_s` kill those still running. Returns how many had to be killed."""
    import psutil

    deadline = time.monotonic() + grace_s
    killed = 0
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return killed
        if pid:
            continue
        if time.monotonic() > deadline:
            for p in psutil.Process().children():
                try:
                    os.kill(p.pid, signal.SIGKILL)
                    killed += 1
                except ProcessLookupError:
                    pass
            deadline = float("inf")
        time.sleep(0.05)


def measure(cmd: list[str], *, cwd: Path | None = None, env: dict | None = None, memory: bool = False,
            timeout: float | None = None, preexec_fn=None) -> Measured:
    """Run `cmd` to completion and return its `Measured` cost (children included, see the module docstring).

    Args:
        cmd: the command (argv list).
        cwd, env: as for ``subprocess.run``.
        memory: sample the peak memory of the process tree while it runs.
        timeout: wall-clock seconds before the command's process group is killed (then ``timed_out``
            is True and ``returncode`` 124).
        preexec_fn: run in the child before exec (e.g. a resource limit).
    """
    cpu0 = _cpu_children()
    t0 = time.monotonic()
    mem = PeakMemory() if memory else None
    if mem is not None:
        mem.__enter__()
    # Its own session (process group): on a time-out the whole group is killed, not only the command.
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=preexec_fn, start_new_session=True)
    timed_out = False
    try:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
    finally:
        if mem is not None:
            mem.__exit__(None, None, None)
    wall = time.monotonic() - t0
    strays = _reap_orphans()
    global STRAYS_KILLED
    STRAYS_KILLED += strays
    return Measured(cpu_s=_cpu_children() - cpu0, wall_s=wall, returncode=124 if timed_out else proc.returncode,
                    stdout=out, stderr=err, peak_rss=mem.peak_rss if mem else 0,
                    peak_pss=mem.peak_pss if mem else 0,
                    peak_one_rss=mem.peak_one_rss if mem else 0, strays=strays, timed_out=timed_out)


def load_average() -> str:
    """``os.getloadavg()`` and the CPU count, as ``uptime`` shows them."""
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "load average unavailable"
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} CPUs"
