"""The one runner type: what carries a ``GradeRequest`` to a grading and brings one ``WorkerOutcome`` back.

TA side, trusted. Every runner is a :class:`Runner`: ``runner(request, scratch, workers=registry)``
returns a :class:`WorkerOutcome`, whichever way the grading ran:

- a fresh worker per student (``grader.runners.workers.run_worker``);
- a warm worker per job slot (``grader.runners.warm.WarmPool``);
- a Dask cluster node (``grader.runners.cluster.ClusterRunner``; the node sends the same model back as JSON);
- this process (``grader.runners.in_process.InProcessRunner``: ``ppo-course grade``, nbgrader's autograde).

The per-student step (``grader.student.grade_entry``) turns the outcome into a ``StudentOutcome``; the
time-out and fault rules live there, not in the runners. A worker process writes its typed result to
``scratch/result.json`` (:data:`RESULT_FILE`), which :func:`read_result` validates back.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict

from grader.records.results import GradeResult
from grader.intake.request import GradeRequest


class BatchAborted(RuntimeError):
    """The batch cannot go on (its grading back end is gone, e.g. a Dask scheduler); ``str(exc)`` says why.

    A runner raises it for no student's fault; ``grader.batch.run_batch`` re-raises it after writing the
    gradebook of what was written, and rerunning resumes.
    """


#: What a runner's grading ends with (a subset of ``grader.records.gradebook.Status``; the per-student step
#: adds empty, rejected and grader_fault).
WorkerStatus = Literal["graded", "timed-out", "crashed"]


class WorkerOutcome(BaseModel):
    """What one grading by a runner produced, the same model for every runner (JSON across a Dask cluster).

    Attributes:
        status: ``graded``, ``timed-out`` or ``crashed`` (the grader's process died or failed: a grader fault).
        result: the typed ``GradeResult`` when graded (pydantic-validated from the worker's ``result.json``
            or a node's reply), else None (the per-student step then builds the zeros).
        message: why, for anything but ``graded`` ("" otherwise).
        seconds: wall-clock seconds of the grading.
        worker: the Dask worker that graded it (``tcp://host:port``); "" for a local runner.
    """

    model_config = ConfigDict(extra="forbid")

    status: WorkerStatus
    result: GradeResult | None = None
    message: str = ""
    seconds: float = 0.0
    worker: str = ""


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the process group of ``proc`` (a worker in its own session); nothing when it is gone already."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class Workers:
    """The live worker processes of a batch, so that Ctrl-C kills every process group at once.

    ``stopping`` turns True at :meth:`kill_all`; a runner that sees it stops (a worker added then is killed
    at once; the cluster runner cancels its task).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._procs: set[subprocess.Popen] = set()
        self.stopping = False

    def add(self, proc: subprocess.Popen) -> None:
        """Register a started worker (killed at once when the batch is stopping)."""
        with self._lock:
            self._procs.add(proc)
        if self.stopping:
            kill_group(proc)

    def discard(self, proc: subprocess.Popen) -> None:
        """Forget a worker that ended."""
        with self._lock:
            self._procs.discard(proc)

    def kill_all(self) -> None:
        """Mark the batch as stopping and kill every registered worker's process group."""
        self.stopping = True
        with self._lock:
            for proc in list(self._procs):
                kill_group(proc)


class Runner(Protocol):
    """Grade one staged submission: the one signature of every runner (see the module docstring).

    Args:
        request: the ``GradeRequest`` (its clock is started by the runner, when the grading can begin).
        scratch: a folder of the runner's own for this student (logs, ``result.json``); may be unused.
        workers: the batch's registry of live processes (None outside a batch).

    Returns:
        a :class:`WorkerOutcome`: ``timed-out`` after ``request.timeout_s`` of wall clock, ``crashed`` when
        the grader's process died or failed.

    Raises:
        BatchAborted: the grading back end itself is gone (no student's fault).
        KeyboardInterrupt: the batch is stopping.
    """

    def __call__(self, request: GradeRequest, scratch: Path, *, workers: Workers | None = None) -> WorkerOutcome:
        ...


#: The typed result a worker process writes in its scratch folder (the only file the parent reads back).
RESULT_FILE = "result.json"


def read_result(scratch: Path, seconds: float) -> WorkerOutcome:
    """The ``graded`` outcome of a worker's ``scratch/result.json`` (pydantic-validated), or ``crashed``.

    Raises nothing: a missing or invalid file is a grader fault, reported as ``crashed`` with why.
    """
    try:
        result = GradeResult.model_validate_json((scratch / RESULT_FILE).read_bytes())
    except (OSError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        text = str(exc).strip().splitlines()
        first = text[0] if text else type(exc).__name__
        return WorkerOutcome(status="crashed", message=f"the grader wrote unreadable results ({first})",
                             seconds=seconds)
    return WorkerOutcome(status="graded", result=result, seconds=seconds)


def time_out_message(timeout_s: float) -> str:
    """The one wording of a submission that ran out of its grading time (gradebook, results.json, feedback)."""
    return (f"grading took longer than the limit of {timeout_s:g} s and was stopped "
            "(look for an infinite loop or very slow code)")


def died_message(log_path: Path, rc: int | None) -> str:
    """The one sentence for a worker that ended without a result: how it ended and its log's last line.

    ``rc``: the process's return code (negative: killed by that signal; None: still running). The log's last
    2000 bytes are read as UTF-8 (replacing what is not); a missing log gives no last line.
    """
    try:
        tail = log_path.read_bytes()[-2000:].decode("utf-8", "replace").strip().splitlines()
    except OSError:
        tail = []
    last = tail[-1] if tail else ""
    why = "still running" if rc is None else (f"killed by signal {-rc}" if rc < 0 else f"exit status {rc}")
    return f"the grader process died ({why}){': ' + last if last else ''}"
