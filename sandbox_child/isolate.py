"""Confinement of one child process before it runs any student code.

Runs in the child's worker (pid 2 of its own pid namespace where the fork server
is root, ``pidns``), as the fork server's user, in this order (first of all, when the fork
server made them, the child joins its memory cgroup, ``memcg``, and its CPU
cgroup, ``cpucg``, which holds all its processes to ``Limits.cpu_cores``):

1. a new session and process group (so that a time-out kills the whole group),
   and death with the fork server (``prctl(PR_SET_PDEATHSIG, SIGKILL)``);
2. fresh descriptors: stdin from /dev/null, stdout/stderr on the parent's
   capture pipes, the protocol socket, nothing else;
3. the submission's regular files read into memory (symlinks are skipped, so
   that root never follows a link to an instructor file);
4. where the kernel allows it: a private network namespace (no network) and a
   private mount namespace whose root is a minimal one (``rootfs``: only what
   the interpreter needs, read-only and noatime, after ``pivot_root``), with a
   private, size-limited /tmp, /var/tmp and /dev/shm; instructor paths inside
   a needed one are covered with empty tmpfs;
5. the submission written into the private working directory;
6. the memory cgroup's limit (what the child uses now + ``memory_mb``), or without
   one a single process without memfds; resource limits (address space, CPU
   time, processes, file size, open files, core);
7. when root: all privileges dropped to an unprivileged uid/gid chosen per child
   (so that RLIMIT_NPROC counts only this child's processes), and
   ``PR_SET_NO_NEW_PRIVS``;
8. a scrubbed environment;
9. a seccomp filter (``syscall_filter``): keyrings, ptrace, bpf, mounts,
   namespaces and other calls no exercise needs fail with EPERM. It must load:
   a child that cannot install it exits before any student code runs.

Every step that the machine refuses is reported as one log line on the fork
server's stderr (see ``warn``) and recorded in ``Isolation.notes``; grading
goes on with the defences that did work, except for the seccomp filter (step 9)
and the read-only binds of step 4, which fail closed. The threat model is in
``docs/threat_model.md``.
"""

from __future__ import annotations

import errno
import os
import resource
import signal
from dataclasses import dataclass, field

from sandbox_child import cpucg, memcg, rootfs, syscall_filter
from sandbox_child.covers import is_within, apply_covers, plan_covers
from sandbox_child.linux import (
    CLONE_NEWCGROUP,
    CLONE_NEWIPC,
    CLONE_NEWNET,
    CLONE_NEWNS,
    CLONE_NEWUSER,
    MS_PRIVATE,
    MS_REC,
    PR_SET_DUMPABLE,
    PR_SET_NO_NEW_PRIVS,
    PR_SET_PDEATHSIG,
    drop_capabilities,
    mount,
    prctl,
    unshare,
)
from sandbox_child.submission_files import SubmissionFile, write_submission

def scrubbed_env(home: str) -> dict[str, str]:
    """The complete environment of a child: no token, no path to instructor files.

    Args:
        home: the private working directory (also HOME and TMPDIR).
    """
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "TMPDIR": home,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "CUDA_VISIBLE_DEVICES": "",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONIOENCODING": "utf-8:backslashreplace",
    }


def warn(message: str) -> None:
    """One log line on stderr of the fork server (the grader's stderr)."""
    try:
        os.write(2, f"ppo-course sandbox: {message}\n".encode("utf-8", "backslashreplace"))
    except OSError:
        pass


@dataclass
class Isolation:
    """What ``confine`` managed to set up (for the ready message and the logs)."""

    workdir: str = ""
    uid: int | None = None
    network_isolated: bool = False
    mounts_private: bool = False
    seccomp: bool = False
    notes: list[str] = field(default_factory=list)


def _write_id_maps(uid: int, gid: int) -> None:
    with open("/proc/self/setgroups", "w") as fh:
        fh.write("deny")
    with open("/proc/self/uid_map", "w") as fh:
        fh.write(f"{uid} {uid} 1")
    with open("/proc/self/gid_map", "w") as fh:
        fh.write(f"{gid} {gid} 1")


def _unshare_or_note(iso: Isolation, flag: int, note: str) -> bool:
    """``unshare(flag)`` for a namespace grading can go on without; when the kernel refuses, ``note``
    (its ``{}`` filled with the reason) goes to ``iso.notes``. Returns whether the namespace was made."""
    try:
        unshare(flag)
    except OSError as exc:
        iso.notes.append(note.format(exc.strerror))
        return False
    return True


def confine(config: dict, files: list[SubmissionFile]) -> Isolation:
    """Steps 4-8 of the module docstring; returns what was achieved.

    Each step is one helper below, called here in run order.

    Args:
        config: the spawn configuration (see ``grader.sandbox.process``): keys
            ``uid`` (int or None), ``limits`` (dict), ``needed_paths``,
            ``hide_paths``, ``workdir`` (used when no private /tmp can be mounted).
        files: the submission read by ``read_submission``.

    Raises:
        OSError: when a step that must not fail (writing the submission,
            dropping privileges) fails; the child then exits before any
            student code runs.
    """
    iso = Isolation()
    limits = config["limits"]
    is_root = os.geteuid() == 0
    cgroup = config.get("memory_cgroup")
    budget = _join_memory_cgroup(cgroup, config)
    if config.get("cpu_cgroup"):
        cpucg.join(str(config["cpu_cgroup"]))  # all its processes share Limits.cpu_cores CPUs from here on
    uid = config.get("uid") if is_root else None
    # Counted before any user namespace: inside one, every unmapped uid shows as "nobody".
    tasks_before = 0 if is_root else _count_user_tasks(os.getuid())
    in_user_namespace = not is_root and _enter_user_namespace(iso)
    _unshare_namespaces(iso, bool(config.get("pid_namespace")))
    if _private_mount_namespace(iso):
        _build_minimal_root(iso, config, limits, uid)
    if not iso.mounts_private and not is_root:
        _refuse_writable_interpreter(config)
    home = _write_submission_dir(iso, config, files, uid)
    # RLIMIT_NPROC counts the tasks of the real uid: a private uid starts from 0, and
    # so does a user namespace on Linux >= 5.14 (per-namespace counts); otherwise the
    # grader's own tasks count too and the budget comes on top of them.
    private_count = uid is not None or (in_user_namespace and kernel_at_least(5, 14))
    _set_budget(iso, budget, limits, 0 if private_count else tasks_before, single_process=not cgroup)
    _drop_privileges(iso, config, uid, is_root)
    _scrub_and_filter(iso, home, single_process=not cgroup, self_only=iso.uid is None)
    return iso


def _join_memory_cgroup(cgroup: str | None, config: dict) -> memcg.Budget | None:
    """Move this child into the memory cgroup ``cgroup`` the fork server made, if any; returns its budget."""
    budget = memcg.Budget(cgroup, int(config["memory_cgroup_version"])) if cgroup else None
    if budget is not None:
        # First: every page this child and its processes fault in from here on counts.
        budget.join()
    return budget


def _enter_user_namespace(iso: Isolation) -> bool:
    """Not root: an unprivileged user namespace (with id maps) gives this process the rights to make
    its own mount and network namespaces (where the kernel allows it). Returns whether it was made;
    a refusal is noted in ``iso.notes``. Raises OSError when the id maps cannot be written."""
    my_uid, my_gid = os.getuid(), os.getgid()
    try:
        # A process that changed credentials is not dumpable, and then cannot
        # write its own uid_map: make it dumpable again first.
        prctl(PR_SET_DUMPABLE, 1)
        unshare(CLONE_NEWUSER)
    except OSError as exc:
        iso.notes.append(f"no user namespace ({exc.strerror}): no private mounts, network stays reachable")
        return False
    # Inside the namespace now: without id maps every file would look foreign
    # and nothing could be created; fail closed rather than run half set up.
    _write_id_maps(my_uid, my_gid)
    return True


def _unshare_namespaces(iso: Isolation, config_pid_namespace: bool) -> None:
    """Private network, cgroup and IPC namespaces, each where the kernel allows it (a refusal is noted);
    ``config_pid_namespace``: whether the fork server made this child a pid namespace (``pidns``; noted if not)."""
    if not config_pid_namespace:
        iso.notes.append("no pid namespace: the child sees the machine's pid counter (its new pids, /proc/self/stat)")
    iso.network_isolated = _unshare_or_note(iso, CLONE_NEWNET, "no network namespace ({}): student code can reach the network")
    # /proc/self/cgroup then reads "/" instead of the grader's memory cgroup path ".../ppo-sandbox-<pid>/c<n>",
    # whose c<n> counted the children made before this one: the order a submission is graded in.
    _unshare_or_note(iso, CLONE_NEWCGROUP, "no cgroup namespace ({}): the child sees its memory cgroup's path")
    _unshare_or_note(iso, CLONE_NEWIPC, "no IPC namespace ({})")  # no System V shared memory / semaphores shared with the grader


def _private_mount_namespace(iso: Isolation) -> bool:
    """A mount namespace whose mounts do not propagate back; returns whether it was made (a refusal is noted)."""
    try:
        unshare(CLONE_NEWNS)
        mount(None, "/", None, MS_REC | MS_PRIVATE, None)
    except OSError as exc:
        iso.notes.append(f"no mount namespace ({exc.strerror}): no minimal root, instructor files are not covered "
                         "and the machine's files (their access times too) stay visible")
        return False
    return True


def _build_minimal_root(iso: Isolation, config: dict, limits: dict, uid: int | None) -> None:
    """Step 4 in the private mount namespace: the minimal root (``rootfs``), instructor paths covered.
    Raises OSError when a step is refused (fail closed: no student code beside the machine's files)."""
    needed = sorted({q for p in config.get("needed_paths", []) if os.path.exists(p)
                     for q in (os.path.abspath(p), os.path.realpath(p))})
    try:
        # Only what the interpreter needs, read-only and noatime, and a
        # private writable /tmp, /dev/shm, /var/tmp (rootfs); the machine's root is detached.
        new_root = os.path.join(config["workdir"], "root")
        os.makedirs(new_root, mode=0o700, exist_ok=True)
        iso.notes.extend(rootfs.build(new_root, needed, int(limits["tmp_size_mb"]), fresh_proc=uid is not None))
        # An instructor path inside a needed one (results under the venv, say) is covered too.
        hide = [h for h in config.get("hide_paths", []) if any(is_within(os.path.realpath(h), n) and os.path.realpath(h) != n for n in needed)]
        covers, notes = plan_covers(needed, hide, unprivileged=uid is not None)
        iso.notes.extend(notes)
        apply_covers(covers)
        iso.mounts_private = True
        iso.workdir = "/tmp/submission"
    except OSError as exc:
        # The kernel granted a mount namespace but refused a step: fail closed rather
        # than run student code beside the machine's files.
        raise OSError(exc.errno, f"building the child's minimal root failed: {exc}") from None


def _refuse_writable_interpreter(config: dict) -> None:
    """Not root and no private mounts: raise OSError (EPERM) if the submission could write into a needed path."""
    writable = [p for p in config.get("needed_paths", []) if os.path.exists(p) and os.access(p, os.W_OK)]
    if writable:
        # Fail closed: without a mount namespace nothing can make these read-only, and a
        # child of the grader's own uid could plant code that every later grading runs.
        raise OSError(errno.EPERM, f"no private mounts, and the interpreter's paths {writable[:3]} are writable "
                      "by the submission; run the grader as root or where user namespaces are allowed")


def _write_submission_dir(iso: Isolation, config: dict, files: list[SubmissionFile], uid: int | None) -> str:
    """Step 5: the submission written into ``iso.workdir`` (owned by ``uid``, gid = uid); returns HOME, its parent."""
    if not iso.workdir:
        iso.workdir = os.path.join(config["workdir"], "submission")
    os.makedirs(iso.workdir, mode=0o755, exist_ok=True)
    write_submission(files, iso.workdir, uid, uid)
    home = os.path.dirname(iso.workdir)
    if uid is not None:
        os.chown(home, uid, uid)
    return home


def _set_budget(iso: Isolation, budget: memcg.Budget | None, limits: dict, nproc_base: int, single_process: bool) -> None:
    """Step 6: the memory cgroup's limit (without one: a note) and the resource limits (``set_limits``)."""
    if budget is not None:
        budget.set(int(limits["memory_mb"]))
    else:
        iso.notes.append("no memory cgroup: one process, no memfd, address space less the tmpfs sizes")
    set_limits(limits, nproc_base=nproc_base, single_process=single_process)


def _drop_privileges(iso: Isolation, config: dict, uid: int | None, is_root: bool) -> None:
    """Step 7: privileges dropped to ``uid`` (gid = uid), the parent-death signal re-armed, ``PR_SET_NO_NEW_PRIVS``.
    Raises OSError when the drop did not take effect; exits (1) if the fork server died meanwhile."""
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        if os.getuid() != uid or os.geteuid() != uid:
            raise OSError(errno.EPERM, "privilege drop did not take effect")
        iso.uid = uid
    elif is_root:
        iso.notes.append("running as root without a uid to drop to")
    else:
        drop_capabilities()  # the user namespace's capabilities must not reach student code
    # The kernel clears the parent-death signal when the credentials change: set it
    # again, and leave if the fork server died meanwhile.
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != config.get("server_pid", os.getppid()):
        os._exit(1)
    try:
        prctl(PR_SET_NO_NEW_PRIVS, 1)
    except OSError:
        pass


def _scrub_and_filter(iso: Isolation, home: str, single_process: bool, self_only: bool) -> None:
    """Steps 8-9: the scrubbed environment, the working directory, the seccomp filter (``self_only``: a child under
    the grader's uid may signal, limit or reschedule only itself). Raises OSError when the filter cannot load."""
    os.environ.clear()
    os.environ.update(scrubbed_env(home))
    os.chdir(iso.workdir)
    # Last: system calls no exercise needs (keyrings, ptrace, bpf, mounts, ...) fail with
    # EPERM from here on. A machine that cannot load the filter runs no student code.
    try:
        syscall_filter.install(single_process=single_process, self_only=self_only)
    except OSError as exc:
        raise OSError(exc.errno, f"the seccomp filter could not be installed, so no student code runs: {exc.strerror}") from None
    iso.seccomp = True


def vm_size_bytes() -> int:
    """This process's current virtual memory size (VmSize), in bytes."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def kernel_at_least(major: int, minor: int) -> bool:
    """Whether the running Linux kernel is at least ``major.minor``."""
    try:
        got = tuple(int(x) for x in os.uname().release.split("-")[0].split(".")[:2])
    except ValueError:
        return False
    return got >= (major, minor)


def set_limits(limits: dict, nproc_base: int = 0, single_process: bool = False) -> None:
    """Apply the rlimits of ``grader.sandbox.Limits`` (a dict) to this process.

    RLIMIT_AS is the current virtual size (torch already mapped) plus
    ``memory_mb``, so that the budget is what student code may add;
    RLIMIT_NPROC is ``nproc_base + max_processes`` (``nproc_base``: tasks of
    this uid that the kernel counts but that are not the child's).
    ``single_process`` (no memory cgroup): the seccomp filter
    refuses new processes and memfds, so this one address space, less the
    private /tmp and /dev/shm tmpfs sizes, is the whole budget.
    """
    def lim(res: int, soft: int, hard: int | None = None) -> None:
        hard = soft if hard is None else hard
        try:
            resource.setrlimit(res, (soft, hard))
        except (ValueError, OSError) as exc:
            warn(f"could not set rlimit {res}: {exc}")

    lim(resource.RLIMIT_CORE, 0)
    lim(resource.RLIMIT_CPU, int(limits["cpu_time_s"]), int(limits["cpu_time_s"]) + 1)
    lim(resource.RLIMIT_FSIZE, int(limits["max_file_bytes"]))
    lim(resource.RLIMIT_NOFILE, int(limits["max_open_files"]))
    lim(resource.RLIMIT_NPROC, nproc_base + int(limits["max_processes"]))
    budget_mb = int(limits["memory_mb"])
    if single_process:
        budget_mb = max(64, budget_mb - int(limits["tmp_size_mb"]) - 1)  # 1 MiB: /dev/shm and the like
    lim(resource.RLIMIT_AS, vm_size_bytes() + budget_mb * 1024 * 1024)
    # A write past RLIMIT_FSIZE then fails with EFBIG (an exception for the
    # student) instead of killing the process with SIGXFSZ.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def _count_user_tasks(uid: int) -> int:
    count = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            st = os.stat(f"/proc/{entry}")
            if st.st_uid == uid:
                count += len(os.listdir(f"/proc/{entry}/task"))
        except OSError:
            continue
    return count


def reset_descriptors(sock_fd: int, stdout_fd: int, stderr_fd: int) -> int:
    """Leave the child with exactly stdin=/dev/null, stdout, stderr and the protocol socket.

    Returns:
        The protocol socket's new descriptor (3).
    """
    import fcntl

    # Move the three descriptors out of the way first, so that dup2 onto 0-3
    # can never clobber one of them.
    sock_fd, stdout_fd, stderr_fd = (fcntl.fcntl(fd, fcntl.F_DUPFD, 100) for fd in (sock_fd, stdout_fd, stderr_fd))
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(stdout_fd, 1)
    os.dup2(stderr_fd, 2)
    os.dup2(sock_fd, 3)
    os.closerange(4, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    for fd in (0, 1, 2, 3):
        os.set_inheritable(fd, fd != 3)
    return 3
