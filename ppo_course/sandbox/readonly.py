"""Read-only binds of the interpreter's paths inside a child's private mount namespace.

A child that runs as the grader's own uid (a non-root grader) could otherwise
write into the venv it imports from: a ``.pth`` or ``sitecustomize.py`` left
there runs in every later grading. ``isolate.confine``
calls :func:`make_read_only` on the outermost needed paths after the covers.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import re

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)

MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_BIND = 4096
MS_REC = 16384


def _mount(source: str | None, target: str, flags: int) -> None:
    enc = lambda x: x.encode() if x is not None else None  # noqa: E731
    if _libc.mount(enc(source), enc(target), None, ctypes.c_ulong(flags), None) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {target}: {os.strerror(err)}")


MS_RDONLY = 1
MS_REMOUNT = 32
#: statvfs f_flag bits -> the mount flags a remount must keep (the kernel locks them in a user namespace).
_LOCKED_FLAGS = ((os.ST_NOSUID, MS_NOSUID), (os.ST_NODEV, MS_NODEV), (os.ST_NOEXEC, MS_NOEXEC),
                 (os.ST_NOATIME, 1024), (os.ST_NODIRATIME, 2048), (os.ST_RELATIME, 1 << 21))


_ATIME_FLAGS = 1024 | 2048 | (1 << 21)


#: Octal escapes in /proc/self/mountinfo (compiled once in the fork server, not in every child).
_OCTAL = re.compile(r"\\([0-7]{3})")


def _mount_points_under(path: str) -> list[str]:
    """Mount points at or below ``path`` in this mount namespace (from /proc/self/mountinfo)."""
    points = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as fh:
        for line in fh:
            point = _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), line.split()[4])
            if (point == path or point.startswith(path.rstrip('/') + '/')) and point not in points:
                points.append(point)
    return points


def make_read_only(paths: list[str], extra_flags: int = 0, bound: bool = False) -> None:
    """Bind each of ``paths`` onto itself and remount it (and every mount below it) read-only.

    Must run in a private mount namespace. Keeps the flags the kernel locks
    (nosuid, nodev, noexec, atime) so that it also works in a user namespace.

    Args:
        paths: folders or files.
        extra_flags: mount flags to add (e.g. ``MS_NOATIME|MS_NOSUID|MS_NODEV``
            for the minimal root, ``rootfs``); where the kernel refuses them on a
            locked mount (a user namespace), the remount is retried with the
            locked flags alone: read-only still holds, and a read-only mount
            never updates access times.
        bound: the paths are already bind mounts of their own (skip the self-bind).

    Raises:
        OSError: a bind or remount failed (the caller fails closed).
    """
    for path in paths:
        if not os.path.isdir(path) and not os.path.isfile(path):
            continue
        if not bound:
            _mount(path, path, MS_BIND | MS_REC)
        for point in _mount_points_under(path):
            try:
                flags = os.statvfs(point).f_flag
            except OSError:
                continue
            keep = 0
            for st_bit, ms_bit in _LOCKED_FLAGS:
                if flags & st_bit:
                    keep |= ms_bit
            if extra_flags:
                try:
                    _mount(None, point, MS_BIND | MS_REMOUNT | MS_RDONLY | (keep & ~_ATIME_FLAGS) | extra_flags)
                    continue
                except OSError as exc:
                    if exc.errno != 1:  # EPERM: a locked flag; anything else fails closed
                        raise
            _mount(None, point, MS_BIND | MS_REMOUNT | MS_RDONLY | keep)
