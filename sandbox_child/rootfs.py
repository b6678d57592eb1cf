"""A minimal root for one child: only what the interpreter needs, read-only and unchanged by reading.

Why: with the machine's own root file system visible (read-write,
``relatime``), reading a world-readable file set its access time, which a
later child read back with ``stat()``: one bit per file, kept for a day, seen
by every later grading. So ``isolate.confine`` builds, inside the child's
private mount namespace and before any student code:

* a fresh, small tmpfs as the new root (read-only once built);
* bind mounts, at their own absolute paths, of only what the interpreter and
  torch read: the paths the parent sends (python prefix, stdlib,
  site-packages, the public package), the system libraries (``/usr/lib``,
  ``/lib*``, ``/usr/local/lib``), a minimal ``/etc`` (the dynamic linker's
  cache and config, the time zone), each remounted
  ``MS_RDONLY|MS_NOATIME|MS_NOSUID|MS_NODEV`` (read-only: the kernel never
  updates the access time of a file on a read-only mount; noatime as well
  where the kernel lets us set it);
* ``/dev/null``, ``/dev/zero``, ``/dev/full``, ``/dev/random``,
  ``/dev/urandom`` (binds of the nodes, noatime, nosuid, noexec) and a fresh
  ``/proc`` (of the child's own pid namespace, ``pidns``; where none can be mounted, the
  machine's, bound read-only) whose machine-wide
  tables and counts (``PROC_MASKED``: the lock table ``/proc/locks``, the task
  counts of ``/proc/loadavg`` and ``/proc/stat``) read empty: ``/dev/null`` is
  bound over them;
* everything writable private to the child and gone with its mount
  namespace: ``/tmp`` (``Limits.tmp_size_mb``, the working folder inside),
  ``/dev/shm`` and ``/var/tmp`` (small tmpfs);

then ``pivot_root`` into it and detaches the old root, so that no path leads
back to the machine's files. Symbolic links on the way to a needed path
(``/lib -> usr/lib``, a venv's ``lib64``) are recreated as links.

Any failure raises ``OSError``: the child then runs no student code (fail closed).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

from sandbox_child.covers import is_within
from sandbox_child.readonly import make_read_only, mount_points_under

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_NOATIME = 1024
MS_BIND = 4096
MS_REC = 16384
MNT_DETACH = 2
_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41}

#: System folders every child gets (read-only), where they exist.
SYSTEM_PATHS = ("/usr/lib", "/usr/lib64", "/usr/lib32", "/lib", "/lib64", "/lib32", "/libx32", "/usr/local/lib")
#: The minimal /etc: the dynamic linker's cache and config (dlopen by name), the time zone.
ETC_PATHS = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime")
#: Device nodes every child gets (binds of the machine's nodes).
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
#: Files of /proc that list kernel objects or counts of the whole machine which no namespace covers, so
#: that a child would see what its siblings (and the grader) hold or do: read as empty (``/dev/null``
#: bound over them). The lock table; the load averages with the machine's running and total task
#: counts; the forks since boot and running tasks (``processes``, ``procs_running``); pressure stalls.
PROC_MASKED = ("/proc/locks", "/proc/loadavg", "/proc/stat", "/proc/pressure/cpu", "/proc/pressure/memory",
               "/proc/pressure/io")


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    _check(_libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)), f"mount {target}")


class _Builder:
    """Places host paths into the new root under the same absolute paths (see ``place``)."""

    def __init__(self, new_root: str) -> None:
        self.new_root = new_root
        self.bound: list[str] = []  # host paths bound so far (real paths)
        self.host_mounts = mount_points_under("/")  # read once: most binds have no mount below them

    def inside(self, path: str) -> str:
        return self.new_root + path

    def place(self, path: str, depth: int = 0) -> None:
        """Make ``path`` (absolute) visible in the new root: symlinks recreated, the real target bound."""
        if depth > 16:
            raise OSError(40, f"too many symbolic links on the way to {path}")
        cur = "/"
        parts = [p for p in os.path.normpath(path).split("/") if p]
        for i, part in enumerate(parts):
            host = os.path.join(cur, part)
            if any(is_within(host, b) for b in self.bound):
                return  # already visible through an earlier bind
            rest = "/".join(parts[i + 1:])
            if os.path.islink(host):
                link = os.readlink(host)
                if not os.path.lexists(self.inside(host)):
                    os.symlink(link, self.inside(host))
                target = os.path.normpath(link if link.startswith("/") else os.path.join(cur, link))
                self.place(os.path.join(target, rest) if rest else target, depth + 1)
                return
            if not os.path.lexists(host):
                return
            if not rest:
                self._bind(host)
                return
            os.makedirs(self.inside(host), mode=0o755, exist_ok=True)
            os.chmod(self.inside(host), 0o755)
            cur = host

    def _bind(self, host: str) -> None:
        target = self.inside(host)
        if os.path.isdir(host):
            os.makedirs(target, mode=0o755, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
            if not os.path.exists(target):
                os.close(os.open(target, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o644))
        _mount(host, target, None, MS_BIND | MS_REC)
        flags = MS_NOATIME | MS_NOSUID | MS_NODEV
        if any(p != host and is_within(p, host) for p in self.host_mounts):
            make_read_only([target], extra_flags=flags, bound=True)  # each mount below it too
        else:
            try:
                _mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | flags)
            except OSError as exc:
                if exc.errno != 1:
                    raise
                make_read_only([target], bound=True)  # a user namespace: keep the locked flags
        self.bound.append(host)

    def device(self, node: str) -> None:
        if not os.path.exists(node):
            return
        target = self.inside(node)
        os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
        os.close(os.open(target, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o644))
        _mount(node, target, None, MS_BIND)
        try:
            _mount(None, target, None, MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NOEXEC | MS_NOATIME)
        except OSError:
            # In a user namespace the node's mount flags are locked: keep them (writes to a
            # device node do not land in any file).
            pass


def _mask(target: str) -> None:
    """Bind ``/dev/null`` over ``target`` (a file of the new /proc), read-only: it reads as empty.

    Raises:
        OSError: the kernel refused (the caller runs no student code).
    """
    if not os.path.exists(target):
        return
    _mount("/dev/null", target, None, MS_BIND)
    try:
        _mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC)
    except OSError:
        pass  # a user namespace locks the node's flags; /dev/null stays empty to read and drops every write


def pivot_root(new_root: str) -> None:
    """Make ``new_root`` (a mount point) this namespace's root and detach the old one.

    Raises:
        OSError: the kernel refused.
    """
    number = _PIVOT_ROOT.get(os.uname().machine)
    if number is None:
        raise OSError(38, f"pivot_root: unknown system call number on {os.uname().machine}")
    os.chdir(new_root)
    _check(_libc.syscall(ctypes.c_long(number), b".", b"."), "pivot_root")
    # The old root is now stacked on "/": detach it, so that nothing leads back to it.
    _check(_libc.umount2(b".", ctypes.c_int(MNT_DETACH)), "umount old root")
    os.chdir("/")


def build(new_root: str, needed: list[str], tmp_size_mb: int, fresh_proc: bool) -> list[str]:
    """Build the minimal root at ``new_root`` (an empty folder) and ``pivot_root`` into it.

    Must run in a private mount namespace (``unshare(CLONE_NEWNS)``, ``/``
    made private), as root or as root of a user namespace.

    Args:
        new_root: an empty folder to mount the new root's tmpfs on.
        needed: host paths the interpreter reads (``grader.sandbox.sandbox.needed_paths``).
        tmp_size_mb: size of the private /tmp, MiB.
        fresh_proc: try a new proc with ``hidepid=2`` (root dropping to a
            private uid); else, or when refused, the machine's /proc is bound
            (a user namespace may not mount a new one).

    Returns:
        notes on what could not be done (for ``Isolation.notes``).

    Raises:
        OSError: any other step failed (the caller runs no student code).
    """
    notes: list[str] = []
    _mount("tmpfs", new_root, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
    b = _Builder(new_root)
    # The private, writable folders first: a needed path under /tmp (a CI clone) is bound inside them.
    for folder, size in (("/tmp", f"{int(tmp_size_mb)}m"), ("/dev/shm", "1m"), ("/var/tmp", "1m")):
        os.makedirs(b.inside(folder), mode=0o755, exist_ok=True)
        _mount("tmpfs", b.inside(folder), "tmpfs", MS_NOSUID | MS_NODEV, f"size={size},mode=1777")
    wanted = [os.path.abspath(p) for p in needed] + list(SYSTEM_PATHS) + list(ETC_PATHS)
    # Shallowest first, so that a folder is bound before what lies inside it.
    for path in sorted({p for p in wanted if os.path.lexists(p)}, key=lambda p: (p.count("/"), p)):
        b.place(path)
    for node in DEVICES:
        b.device(node)
    os.makedirs(b.inside("/proc"), mode=0o555, exist_ok=True)
    try:
        if not fresh_proc:
            raise OSError(1, "not root")
        _mount("proc", b.inside("/proc"), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2")
    except OSError as exc:
        if fresh_proc:
            notes.append(f"could not mount /proc with hidepid ({exc.strerror}): other processes stay visible")
        _mount("/proc", b.inside("/proc"), None, MS_BIND | MS_REC)
        # Read-only: the machine's /proc lists the grader's processes, and a child under the grader's uid could
        # write their files (``oom_score_adj``: the OOM killer's first pick would be the grader).
        make_read_only([b.inside("/proc")], bound=True)
    for path in PROC_MASKED:
        _mask(b.inside(path))
    pivot_root(new_root)
    # Nothing more is created in the root itself: the skeleton becomes read-only.
    _mount(None, "/", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
    return notes
