"""Resource limits of one sandboxed child process (one per exercise)."""

from __future__ import annotations

import pydantic


class Limits(pydantic.BaseModel):
    """Limits applied to each child (wall clock in the parent, the rest as rlimits/tmpfs in the child).

    Defaults suit one exercise of ppo-course on a 2-core machine; the graders
    may raise ``call_timeout_s`` for exercise 7.
    """

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    call_timeout_s: float = pydantic.Field(10.0, gt=0, description="wall-clock seconds per call, callbacks to known-good pieces included")
    import_timeout_s: float = pydantic.Field(10.0, gt=0, description="wall-clock seconds for the child's set-up and the module's import")
    memory_mb: int = pydantic.Field(2048, gt=0, description=(
        "memory student code may add on top of the interpreter + torch, MiB: per process as address space "
        "(RLIMIT_AS), and for all the child's processes, memfds and tmpfs pages together as its memory cgroup's "
        "limit (+ memcg.HEADROOM_MB for the interpreter's own copy-on-write pages); without a cgroup, one "
        "process whose address space is this less tmp_size_mb and 1 MiB"))
    cpu_time_s: int = pydantic.Field(120, gt=0, description="CPU seconds for the child's whole life (RLIMIT_CPU; SIGXCPU then SIGKILL)")
    cpu_cores: float = pydantic.Field(1.0, gt=0, le=64, description=(
        "CPUs the child's processes may use together at any moment (a CPU cgroup's CFS quota, sandbox_child."
        "cpucg), so that a busy child cannot starve a sibling graded at the same time; without a cgroup, "
        "RLIMIT_CPU and max_processes only"))
    max_processes: int = pydantic.Field(16, gt=0, description="tasks (processes + threads) of the child's private uid (RLIMIT_NPROC)")
    max_file_bytes: int = pydantic.Field(16 * 2**20, gt=0, description="largest file the child may write (RLIMIT_FSIZE), bytes")
    max_open_files: int = pydantic.Field(256, ge=16, description="RLIMIT_NOFILE")
    tmp_size_mb: int = pydantic.Field(64, gt=0, description="size of the child's private /tmp (tmpfs), MiB")
    max_output_bytes: int = pydantic.Field(64 * 1024, ge=0, description="printed bytes kept for captured_output()")
    max_output_kill_bytes: int = pydantic.Field(32 * 2**20, gt=0, description="printed bytes after which the child is stopped (StudentCrash)")
    max_message_bytes: int = pydantic.Field(512 * 2**20, gt=0, description="largest protocol message either way, bytes")
    max_submission_bytes: int = pydantic.Field(20 * 2**20, gt=0, description="largest submission folder copied into the child, bytes")
    # Known-good callbacks (exercise 7) run in the grader: an honest ex7 child makes ~720 of them,
    # moving ~25 MiB and costing ~0.7 CPU s (measured on solutions/, profile full); the budgets are
    # 10-70x that. The bytes budget bounds what one live child can make the grader hold (bytes in ≥
    # what is kept; released when the child ends), plus one message in flight (max_message_bytes).
    max_callbacks: int = pydantic.Field(50_000, gt=0, description="known-good callbacks a child may make in its life (exercise 7)")
    max_callback_bytes: int = pydantic.Field(256 * 2**20, gt=0, description="bytes a child's known-good callbacks may pass in and out, summed over its life")
    max_callback_cpu_s: float = pydantic.Field(30.0, gt=0, description="CPU seconds the grader may spend on one child's known-good callbacks (thread time)")
    max_respawns: int = pydantic.Field(5, ge=0, description="fresh children per module after crashes/time-outs before giving up")

    def child_dict(self) -> dict:
        """The subset the child applies itself (sent in the spawn request)."""
        return self.model_dump()


class CallbackBudget:
    """What one child's known-good callbacks have cost so far, against its ``Limits`` (``grader.sandbox.process``).

    Args:
        limits: the child's limits (``max_callbacks``, ``max_callback_bytes``, ``max_callback_cpu_s``).
    """

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.count = 0
        self.nbytes = 0
        self.cpu_s = 0.0

    def charge(self, nbytes: int, cpu_s: float) -> str | None:
        """Add one callback (``nbytes`` in or out, ``cpu_s`` of this thread); returns the first budget exceeded, in
        the grader's words, or None."""
        self.count += 1
        self.nbytes += nbytes
        self.cpu_s += cpu_s
        lim = self.limits
        if self.count > lim.max_callbacks:
            return (f"the submission made more than {lim.max_callbacks} calls to the known-good exercise 1-6 "
                    "pieces (the grader's budget for one child)")
        if self.nbytes > lim.max_callback_bytes:
            return (f"the submission passed more than {lim.max_callback_bytes // 2**20} MiB to and from the "
                    "known-good exercise 1-6 pieces (the grader's budget for one child)")
        if self.cpu_s > lim.max_callback_cpu_s:
            return (f"the known-good exercise 1-6 pieces used more than {lim.max_callback_cpu_s:g} CPU s on the "
                    "submission's behalf (the grader's budget for one child)")
        return None
