"""The Linux calls the sandbox makes through libc (ctypes): ``prctl``, ``unshare``, ``mount``, ``capset``.

Thin, exact wrappers (each raises ``OSError`` with errno and what failed) and the kernel's constants
(``<linux/sched.h>``, ``<sys/mount.h>``, ``<linux/prctl.h>``), used by ``isolate.confine``, the fork
server (``zygote``) and ``fixed_root``. Runs on the untrusted side, before any student code.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REC = 16384
MS_BIND = 4096
MS_PRIVATE = 1 << 18
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
PR_SET_CHILD_SUBREAPER = 36


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def prctl(option: int, arg: int) -> None:
    """``prctl(option, arg, 0, 0, 0)``; raises OSError on failure."""
    _check(_libc.prctl(option, ctypes.c_ulong(arg), 0, 0, 0), f"prctl({option})")


def unshare(flags: int) -> None:
    """``unshare(flags)``; raises OSError on failure."""
    _check(_libc.unshare(flags), f"unshare({flags:#x})")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    """``mount(2)``; raises OSError naming the target on failure."""
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    _check(_libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)), f"mount {target}")


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_capabilities() -> None:
    """Clear every capability of this process (effective, permitted, inheritable).

    Needed after an unprivileged user namespace: ``unshare(CLONE_NEWUSER)``
    grants full capabilities inside it, which would let student code unmount
    the covers. (As root the uid drop already clears them.)

    Raises:
        OSError: if ``capset`` fails.
    """
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (_CapData * 2)()
    _check(_libc.capset(ctypes.byref(header), data), "capset")
