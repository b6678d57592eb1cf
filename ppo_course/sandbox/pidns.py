"""A private pid namespace per sandboxed child, with a reaper as its pid 1 (the fork server's side).

Without one, every child shares the machine's pid counter: the pid its own
next ``fork`` or thread gets, ``/proc/self/stat``'s numbers and
``/proc/sys/kernel/ns_last_pid`` move whenever a sibling graded at the same
time starts processes, a channel of about one bit per interval between two
children of one batch. In a namespace of its own a child sees only its own
pids (1, 2, 3, ... of its namespace); the machine-wide counts that no
namespace covers (``/proc/loadavg``, ``/proc/stat``) are masked by ``rootfs``.

Process tree of one child (``run``), all forked from the fork server:

* the **holder** (the fork server's child, whose pid the grader knows): it
  unshares ``CLONE_NEWPID``, forks the reaper, waits for it and then ends the
  way the worker ended (same exit code, or killed by the same signal), so
  that ``zygote.describe_status`` reads the worker's status unchanged;
* the **reaper**, pid 1 of the new namespace: it forks the worker, reaps every
  orphan of the namespace and, when the worker ends, passes the worker's
  ``waitpid`` status to the holder on a pipe and exits; the kernel then kills
  whatever the worker left running in the namespace. It stays root and never
  runs student code, so a signal from the student's uid cannot reach it;
* the **worker**, pid 2, which confines itself (``isolate.confine``) and runs
  the student's code; a signal it sends to itself acts as on any process.

All three share the holder's process group, so the fork server's ``killpg``
(time-out, OOM, EOF) reaches them at once; killing the reaper alone also ends
the namespace. Each dies with its parent (``PR_SET_PDEATHSIG``).

Where the kernel refuses the namespace (not root: ``unshare(CLONE_NEWPID)``
needs ``CAP_SYS_ADMIN``), the holder runs the worker itself, as before, and
the child's notes say so.
"""

from __future__ import annotations

import os
import select
import signal
from typing import Callable, NoReturn

from ppo_course.sandbox.linux import CLONE_NEWPID, PR_SET_DUMPABLE, PR_SET_PDEATHSIG, prctl, unshare

#: The status length on the reaper's pipe (``waitpid``'s status, little-endian int32).
_STATUS_BYTES = 4


def run(body: Callable[[bool, int], None]) -> NoReturn:
    """Run ``body`` as pid 2 of a new pid namespace (or here, if the kernel refuses one); never returns.

    Args:
        body: the worker; called as ``body(private, parent_pid)``: ``private`` whether it runs in a
            pid namespace of its own, ``parent_pid`` the pid its parent has as seen from it (it
            exits at once when ``os.getppid()`` differs later: its parent died). ``body`` should
            not return; if it does, the process exits with code 0 (70 if it raised).

    Raises:
        nothing: every failure ends the process (exit code 70, or the worker's status).
    """
    if os.geteuid() != 0:
        _run_body(body, False, os.getppid())
    try:
        unshare(CLONE_NEWPID)
    except OSError:
        _run_body(body, False, os.getppid())
    alive_r, alive_w = os.pipe()  # the reaper sees EOF on alive_r once the holder is gone
    status_r, status_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(alive_w)
        os.close(status_r)
        _reaper(body, alive_r, status_w)
    os.close(alive_r)
    os.close(status_w)
    _holder(pid, status_r)


def _run_body(body: Callable[[bool, int], None], private: bool, parent_pid: int) -> NoReturn:
    code = 70
    try:
        body(private, parent_pid)
        code = 0
    finally:
        os._exit(code)


def _reaper(body: Callable[[bool, int], None], alive_r: int, status_w: int) -> NoReturn:
    """Pid 1 of the namespace: fork the worker, reap everything, report the worker's status, exit."""
    try:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if select.select([alive_r], [], [], 0)[0]:  # the holder died before the prctl
            os._exit(1)
        worker = os.fork()
        if worker == 0:
            os.close(status_w)
            os.close(alive_r)
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != 1:
                os._exit(1)
            _run_body(body, True, 1)
        while True:
            try:
                pid, status = os.waitpid(-1, 0)
            except ChildProcessError:
                os._exit(70)
            except InterruptedError:
                continue
            if pid == worker:
                os.write(status_w, status.to_bytes(_STATUS_BYTES, "little", signed=True))
                os._exit(0)  # the kernel kills the rest of the namespace
    finally:
        os._exit(70)


def _holder(reaper: int, status_r: int) -> NoReturn:
    """The fork server's child: wait for the reaper, then end with the worker's status."""
    while True:
        try:
            _, status = os.waitpid(reaper, 0)
            break
        except InterruptedError:
            continue
    data = b""
    while len(data) < _STATUS_BYTES:
        chunk = os.read(status_r, _STATUS_BYTES - len(data))
        if not chunk:
            break
        data += chunk
    if len(data) == _STATUS_BYTES:
        status = int.from_bytes(data, "little", signed=True)
    end_like(status)


def end_like(status: int) -> NoReturn:
    """End this process the way ``status`` (a ``waitpid`` status) says another one ended.

    An exit code is reproduced by ``_exit``; a signal by sending it to this process with its default
    action (no core file: the process is made non-dumpable first); anything else exits with 70.
    """
    if os.WIFEXITED(status):
        os._exit(os.WEXITSTATUS(status))
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            prctl(PR_SET_DUMPABLE, 0)
            signal.signal(sig, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
            os.kill(os.getpid(), sig)
        except (OSError, ValueError):
            pass
        os._exit(128 + sig)
    os._exit(70)
