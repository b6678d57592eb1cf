"""The child's seccomp filter: system calls no exercise needs fail with EPERM.

Installed by ``isolate.confine`` as the last step before student code can
run (after the mounts, the uid drop and ``PR_SET_NO_NEW_PRIVS``), through
libseccomp's own Python API (the ``pyseccomp`` binding, a ctypes wrapper of
``libseccomp.so.2``; no hand-written BPF). The default action is ALLOW; every
call below gets ``EPERM`` (an ``OSError`` the student can read), not a kill.
``clone3`` gets ``ENOSYS`` instead, so that glibc falls back to ``clone``,
whose flags a filter can inspect (clone3 passes them in memory it cannot).

Why each group is denied (docs/threat_model.md "Kernel objects a child could
create"):

* kernel keyrings (``add_key``, ``request_key``, ``keyctl``): no namespace
  covers them, so a key outlives the child and a later grading reads it back;
* SysV IPC (``shmget``, ``semget``, ``msgget``) and POSIX message queues
  (``mq_open``): the child's IPC namespace already isolates them; the filter
  keeps them closed where that namespace could not be made;
* other processes' memory and descriptors (``ptrace``, ``process_vm_*``,
  ``kcmp``, ``pidfd_getfd``);
* kernel surfaces (``bpf``, ``perf_event_open``, ``userfaultfd``,
  ``io_uring_*``, which also bypasses seccomp for the calls it queues);
* mounts and namespaces (``mount`` ... ``setns``, and ``clone`` with any
  namespace flag): the covers of instructor files must stay in place;
* administration (modules, kexec, reboot, swap, acct, quotas, clock, syslog,
  ``open_by_handle_at``/``name_to_handle_at``, fanotify, ``personality``
  beyond a query);
* state the kernel keeps per *inode*, which every child shares through its
  read-only binds of the same interpreter files, so that one child sets it
  and a sibling graded at the same time reads it across uids and mount
  namespaces: advisory locks (``flock``; ``fcntl`` with ``F_GETLK``,
  ``F_SETLK``, ``F_SETLKW`` and their ``F_OFD_*`` forms, which ``lockf``
  uses too), leases (``F_SETLEASE``/``F_GETLEASE``), directory notifications
  (``F_NOTIFY``) and inotify watches (``inotify_init``, ``inotify_init1``,
  ``inotify_add_watch``: a sibling's read of a shared file is an
  ``IN_ACCESS`` event). Every other ``fcntl`` command stays allowed;
* the page cache of those shared files, another piece of per-inode state: one
  child evicted a file's pages (``fadvise64`` ``POSIX_FADV_DONTNEED``,
  ``madvise`` ``MADV_COLD``/``MADV_PAGEOUT``) or read them in, and a sibling, or
  the next student's child, read back whether they were cached without
  changing it (``preadv2`` with ``RWF_NOWAIT``, Linux AIO's ``RWF_NOWAIT``,
  ``cachestat``, ``mincore``): a bit per file, both ways. Those calls fail
  (``preadv2``/``pwritev2`` only with ``RWF_NOWAIT``, ``madvise`` only with the
  two eviction advices). Not covered: a first read of a file no one has read
  yet is still slower than a second, and counts a major page fault, so a
  file's first reader can still tell whether an earlier child read it
  (docs/ARCHITECTURE.md, "The sandbox").

With ``self_only`` (a child that runs under the grader's own uid: a grader that is not root,
``isolate.confine``), the calls that act on another process by its pid (``SELF_ONLY_CALLS``:
signals, resource limits, priorities, scheduling, CPU affinity, page migration) fail unless they
name the child itself, and those that name it by a descriptor or any id (``tkill``,
``pidfd_send_signal``, ``ioprio_set``, ``process_madvise``, ``process_mrelease``, and a descriptor's SIGIO
owner through ``F_SETOWN_EX``, ``FIOSETOWN``, ``SIOCSPGRP``) fail always (``F_SETOWN`` only names itself): the
kernel lets a process act on every process of its uid, the trusted worker, the fork server and a
classmate's child graded at the same time included. A child with a uid of its own (the grader as
root) is refused those by the kernel already.

Raises ``OSError`` when the filter cannot be installed: the child then
refuses to run (fail closed).
"""

from __future__ import annotations

import errno

try:  # imported in the fork server before any fork, so children do not read site-packages for it
    import pyseccomp as _seccomp
    _IMPORT_ERROR: str | None = None
except Exception as exc:  # noqa: BLE001 - missing module or missing libseccomp.so.2
    _seccomp = None  # type: ignore[assignment]
    _IMPORT_ERROR = f"{type(exc).__name__}: {exc}"

#: System calls that fail with EPERM in a child (names absent on this architecture are skipped).
DENIED_SYSCALLS: tuple[str, ...] = (
    # keyrings: not namespaced, they outlive the child
    "add_key", "request_key", "keyctl",
    # SysV IPC and POSIX message queues (also isolated by the IPC namespace where it exists)
    "shmget", "semget", "msgget", "mq_open",
    # other processes
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    # kernel attack surface and seccomp bypasses
    "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
    # mounts and namespaces
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "open_tree", "move_mount",
    "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
    # administration
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot",
    "swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "syslog", "lookup_dcookie",
    "open_by_handle_at", "name_to_handle_at", "fanotify_init", "settimeofday", "clock_settime",
    "clock_adjtime", "iopl", "ioperm", "vhangup", "uselib", "nfsservctl", "_sysctl",
    # per-inode state shared with siblings through the same read-only files: locks, notifications
    "flock", "inotify_init", "inotify_init1", "inotify_add_watch",
    # ... and their page cache: eviction and residency probes (see PAGE_CACHE_* below for the flag rules)
    "fadvise64", "fadvise64_64", "arm_fadvise64_64", "cachestat", "mincore", "io_setup", "io_submit",
)

#: ``madvise`` advices that evict a file's pages from the shared page cache (MADV_COLD, MADV_PAGEOUT).
PAGE_CACHE_MADVISE_DENIED: tuple[int, ...] = (20, 21)
#: ``preadv2``/``pwritev2``'s ``RWF_NOWAIT`` (linux/fs.h): the call fails instead of reading a page that is not
#: cached, which tells whether a sibling read it. Its flags are the sixth argument (index 5).
RWF_NOWAIT = 0x00000008

#: ``fcntl`` commands (asm-generic/fcntl.h, linux/fcntl.h) that read or set per-inode state a sibling
#: shares: POSIX and open-file-description locks, leases, directory notifications. They get EPERM.
FCNTL_DENIED_COMMANDS: tuple[int, ...] = (
    5, 6, 7,  # F_GETLK, F_SETLK, F_SETLKW
    36, 37, 38,  # F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW
    1024, 1025, 1026,  # F_SETLEASE, F_GETLEASE, F_NOTIFY
)

#: ``clone`` flags that create a namespace (linux/sched.h): a clone with any of them gets EPERM.
CLONE_NAMESPACE_FLAGS: tuple[int, ...] = (
    0x00000080,  # CLONE_NEWTIME
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
)

#: Without a memory cgroup (``single_process``): no new process (each would get its own RLIMIT_AS) and
#: no memfd (its pages count against no process), so one address space is the child's whole memory.
SINGLE_PROCESS_DENIED: tuple[str, ...] = ("fork", "vfork", "memfd_create", "memfd_secret")
CLONE_THREAD = 0x00010000

#: Calls that act on a process named by a pid argument: ``{name: (argument index, also allowed)}``. With
#: ``self_only`` they fail (EPERM) unless that argument is the child's own pid or one of the values allowed
#: (0: the calling process itself, or for ``kill`` its own process group, which ``setsid`` made its own).
SELF_ONLY_CALLS: dict[str, tuple[int, tuple[int, ...]]] = {
    "kill": (0, (0,)), "tgkill": (0, ()), "rt_sigqueueinfo": (0, ()), "rt_tgsigqueueinfo": (0, ()),
    "pidfd_open": (0, ()), "prlimit64": (0, (0,)), "setpriority": (1, (0,)),
    "sched_setaffinity": (0, (0,)), "sched_setscheduler": (0, (0,)), "sched_setparam": (0, (0,)),
    "sched_setattr": (0, (0,)), "migrate_pages": (0, (0,)), "move_pages": (0, (0,)),
}
#: Calls that name another process by a descriptor or an id a filter cannot tie to the child: refused with
#: ``self_only``.
SELF_ONLY_DENIED: tuple[str, ...] = ("tkill", "pidfd_send_signal", "ioprio_set", "process_madvise", "process_mrelease")
#: ``fcntl(fd, F_SETOWN, pid)`` makes ``pid`` the owner of a descriptor's SIGIO/SIGURG (sent with the setter's
#: rights; SIGIO terminates by default): with ``self_only``, only the child itself or 0 (no owner).
F_SETOWN = 8
#: Owners given through memory a filter cannot read, refused with ``self_only``: ``fcntl`` ``F_SETOWN_EX``, and
#: ``ioctl`` ``FIOSETOWN`` / ``SIOCSPGRP``.
SELF_ONLY_FCNTL_DENIED: tuple[int, ...] = (15,)
SELF_ONLY_IOCTL_DENIED: tuple[int, ...] = (0x8901, 0x8902)
#: ``setpriority``'s ``which`` other than ``PRIO_PROCESS`` (a process group, a whole uid) is refused with ``self_only``.
_PRIO_PROCESS = 0
_U64 = 2**64 - 1

#: ``personality(0xffffffff)`` only reads the persona; any other argument is refused.
_PERSONALITY_QUERY = 0xFFFFFFFF


def available() -> str | None:
    """None when the filter can be built here, else why not (the missing binding or library)."""
    return _IMPORT_ERROR


def build(single_process: bool = False, self_only: int | None = None):  # -> pyseccomp.SyscallFilter
    """The filter described in the module docstring (not loaded yet).

    Args:
        single_process: also refuse ``SINGLE_PROCESS_DENIED`` and any ``clone`` without
            ``CLONE_THREAD`` (threads stay allowed: they share the one address space).
        self_only: the child's pid, for a child under the grader's own uid: ``SELF_ONLY_CALLS`` may then
            name only that pid (or their allowed values), ``SELF_ONLY_DENIED`` are refused; None: neither.

    Raises:
        OSError: the binding or libseccomp is missing, or a rule is refused.
    """
    if _seccomp is None:
        raise OSError(errno.ENOSYS, f"seccomp is unavailable ({_IMPORT_ERROR}); install libseccomp2 and pyseccomp")
    try:
        flt = _seccomp.SyscallFilter(_seccomp.ALLOW)
        deny = _seccomp.ERRNO(errno.EPERM)
        for name in DENIED_SYSCALLS + (SINGLE_PROCESS_DENIED if single_process else ()):
            try:
                number = _seccomp.resolve_syscall(_seccomp.Arch.NATIVE, name)
            except Exception:  # noqa: BLE001 - not a system call of this architecture
                continue
            if number < 0:
                continue
            flt.add_rule(deny, number)
        for flag in CLONE_NAMESPACE_FLAGS:
            flt.add_rule(deny, "clone", _seccomp.Arg(0, _seccomp.MASKED_EQ, flag, flag))
        for command in FCNTL_DENIED_COMMANDS:
            flt.add_rule(deny, "fcntl", _seccomp.Arg(1, _seccomp.EQ, command))
        if single_process:
            flt.add_rule(deny, "clone", _seccomp.Arg(0, _seccomp.MASKED_EQ, CLONE_THREAD, 0))
        for advice in PAGE_CACHE_MADVISE_DENIED:
            flt.add_rule(deny, "madvise", _seccomp.Arg(2, _seccomp.EQ, advice))
        for name in ("preadv2", "pwritev2"):
            flt.add_rule(deny, name, _seccomp.Arg(5, _seccomp.MASKED_EQ, RWF_NOWAIT, RWF_NOWAIT))
        flt.add_rule(_seccomp.ERRNO(errno.ENOSYS), "clone3")
        flt.add_rule(deny, "personality", _seccomp.Arg(0, _seccomp.NE, _PERSONALITY_QUERY))
        if self_only is not None:
            _add_self_only_rules(flt, deny, int(self_only))
    except OSError:
        raise
    except Exception as exc:  # noqa: BLE001 - libseccomp's errors come as RuntimeError/ValueError
        raise OSError(errno.EINVAL, f"building the seccomp filter failed: {type(exc).__name__}: {exc}") from None
    return flt


def install(single_process: bool = False, self_only: bool = False) -> None:
    """Build and load the filter into this process (and every process it will start).

    ``single_process``: see ``build``; ``self_only``: this process's pid is ``build``'s ``self_only``.

    Sets ``PR_SET_NO_NEW_PRIVS`` (libseccomp's default), which the kernel
    requires of an unprivileged process; irreversible.

    Raises:
        OSError: the filter could not be built or loaded (the caller must not run student code).
    """
    import os

    flt = build(single_process, os.getpid() if self_only else None)
    try:
        flt.load()
    except Exception as exc:  # noqa: BLE001
        raise OSError(errno.EPERM, f"loading the seccomp filter failed: {type(exc).__name__}: {exc}") from None


def _add_self_only_rules(flt, deny, pid: int) -> None:
    """``build``'s ``self_only`` rules for the child whose pid is ``pid``.

    libseccomp compares one argument once per rule, so "anything but these values" is several rules: one
    for the values above the largest allowed one, and one per aligned block (a masked comparison) of each
    gap between allowed values. Arguments are compared as 64-bit values: a negative pid (a process group,
    or -1 for every process) is a large one, refused with the rest.
    """
    for name in SELF_ONLY_DENIED:
        _add_if_known(flt, deny, name)
    flt.add_rule(deny, "setpriority", _seccomp.Arg(0, _seccomp.NE, _PRIO_PROCESS))
    for command in SELF_ONLY_FCNTL_DENIED:
        flt.add_rule(deny, "fcntl", _seccomp.Arg(1, _seccomp.EQ, command))
    for request in SELF_ONLY_IOCTL_DENIED:
        flt.add_rule(deny, "ioctl", _seccomp.Arg(1, _seccomp.MASKED_EQ, 0xFFFFFFFF, request))
    for name, (index, also) in SELF_ONLY_CALLS.items():
        _deny_other_pids(flt, deny, name, index, sorted({pid, *also}))
    _deny_other_pids(flt, deny, "fcntl", 2, sorted({pid, 0}), _seccomp.Arg(1, _seccomp.EQ, F_SETOWN))


def _deny_other_pids(flt, deny, name: str, index: int, allowed: list[int], *also_if) -> None:
    """Rules refusing ``name`` when its argument ``index`` is none of ``allowed`` (sorted), and ``also_if`` holds."""
    flt.add_rule(deny, name, _seccomp.Arg(index, _seccomp.GT, allowed[-1]), *also_if)
    for low, high in zip([-1, *allowed], allowed):
        for mask, value in aligned_blocks(low + 1, high - 1):
            flt.add_rule(deny, name, _seccomp.Arg(index, _seccomp.MASKED_EQ, mask, value), *also_if)


def _add_if_known(flt, action, name: str) -> None:
    """Add ``action`` for every call of ``name``, when ``name`` is a system call of this architecture."""
    try:
        number = _seccomp.resolve_syscall(_seccomp.Arch.NATIVE, name)
    except Exception:  # noqa: BLE001 - not a system call of this architecture
        return
    if number >= 0:
        flt.add_rule(action, number)


def aligned_blocks(low: int, high: int) -> list[tuple[int, int]]:
    """The fewest ``(mask, value)`` pairs whose blocks ``{x : x & mask == value}`` cover exactly ``low..high``
    (64-bit unsigned ints; empty when ``high < low``), for masked comparisons of a filter rule."""
    blocks: list[tuple[int, int]] = []
    while low <= high:
        size = low & -low if low else 1 << 64
        while size > high - low + 1:
            size >>= 1
        blocks.append((_U64 & ~(size - 1), low))
        low += size
    return blocks
