"""The worker processes of a batch (parent side): one grading of one staged submission per request.

TA side, trusted. A worker is ``python -I`` in its own session and an empty
working folder with an allow-listed environment; it runs
``grader.grade.grade_submission``, whose sandbox forks the student's
children (the student's code never runs in a worker). :func:`run_worker` is the
one step a local batch, the Gradescope runner and a cluster node share.
"""

from __future__ import annotations

import argparse
import errno
import os
import signal
import subprocess
import tempfile
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from grader.records.results import GradeResult
from ppo_course.atomic_files import atomic_write_text
from grader.runners.request import GradeRequest

class BatchAborted(RuntimeError):
    """The batch cannot go on (its grading back end is gone, e.g. a Dask scheduler); ``str(exc)`` says why.

    Raised out of :func:`run_batch` after the gradebook of what was written; rerunning resumes.
    """


def default_jobs() -> int:
    """The default worker count: the CPU cores this process may use (at least 1)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


def disk_full(exc: BaseException) -> bool:
    """True for "no space left" / "quota exceeded": the batch must stop, not mark students crashed."""
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)


_BATCH_FORKSERVER = None
_BATCH_FORKSERVER_LOCK = threading.Lock()

#: Set to 1 to give every worker a fork server of its own (slower; for debugging).
OWN_FORKSERVER_ENV = "PPO_COURSE_BATCH_OWN_FORKSERVER"


def _shared_forkserver_env() -> dict[str, str]:
    """The variables that make workers fork students' children from one server of this batch.

    Starting a fork server costs about 4 s of CPU (``import torch`` and a warm-up
    step of the toy model); one per batch instead of one per student saves that
    on every submission. The server never runs student code itself; each worker's
    connection owns its children, which die with that connection, and the server
    dies with this process. Started lazily (a resumed batch with nothing to grade
    never pays for it); on any failure the workers start their own, as before.
    """
    global _BATCH_FORKSERVER
    if os.environ.get(OWN_FORKSERVER_ENV) == "1":
        return {}
    with _BATCH_FORKSERVER_LOCK:
        try:
            from grader.sandbox.forkserver_client import ForkServerClient

            if _BATCH_FORKSERVER is None or not _BATCH_FORKSERVER.alive():
                _BATCH_FORKSERVER = ForkServerClient(share=True)
            return _BATCH_FORKSERVER.share_env()
        except Exception as exc:  # the workers fall back to a server of their own
            print(f"ppo-course grade-batch: no shared fork server ({exc}); each worker starts its own",
                  file=sys.stderr)
            _BATCH_FORKSERVER = None
            return {}


#: The operator's variables a worker keeps (everything else, PYTHONPATH and tokens included, is dropped).
_WORKER_ENV_KEEP = ("PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "LC_CTYPE", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                    "OPENBLAS_NUM_THREADS", OWN_FORKSERVER_ENV)


def _worker_env(shared_server: bool = True) -> dict[str, str]:
    """A worker's whole environment: a short allow-list of the operator's, never PYTHON* or tokens, and the
    path of the course's secret file as this process resolved it (``grader.course_secret.worker_env``; the
    worker reads the file, never makes one; its sandboxed children get neither)."""
    from grader.course_secret import worker_env

    env = {k: os.environ[k] for k in _WORKER_ENV_KEEP if k in os.environ}
    env.update(worker_env())
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    # N workers on N cores: intra-op threads would only oversubscribe.
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env.setdefault(var, "1")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if shared_server:
        env.update(_shared_forkserver_env())
    return env


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


#: What a worker run ends with (a subset of ``grader.records.gradebook.Status``; the batch adds empty and rejected).
WorkerStatus = Literal["graded", "timed-out", "crashed"]


@dataclass
class WorkerOutcome:
    """What one worker run produced.

    Attributes:
        status: ``graded``, ``timed-out`` or ``crashed``.
        result: the typed :class:`grader.records.results.GradeResult` when graded (validated back from the
            worker's ``result.json`` with pydantic), else None (``grader.records.outcome`` then builds the zeros).
        message: why, for anything but ``graded`` ("" otherwise).
        seconds: wall-clock seconds of the run.
    """

    status: WorkerStatus
    result: GradeResult | None
    message: str
    seconds: float


#: The typed result a worker writes in its scratch folder (the only file the batch reads back).
RESULT_FILE = "result.json"


def read_result(scratch: Path, seconds: float) -> WorkerOutcome:
    """The ``graded`` outcome of the worker's ``scratch/result.json`` (pydantic-validated), or ``crashed``.

    Raises nothing: a missing or invalid file is a grader fault, reported as ``crashed`` with why.
    """
    try:
        result = GradeResult.model_validate_json((scratch / RESULT_FILE).read_bytes())
    except (OSError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        return WorkerOutcome("crashed", None, f"the grader wrote unreadable results ({_first_line(exc)})", seconds)
    return WorkerOutcome("graded", result, "", seconds)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


class _Workers:
    """The live worker processes, so that Ctrl-C can kill every process group at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._procs: set[subprocess.Popen] = set()
        self.stopping = False

    def add(self, proc: subprocess.Popen) -> None:
        with self._lock:
            self._procs.add(proc)
        if self.stopping:
            _kill_group(proc)

    def discard(self, proc: subprocess.Popen) -> None:
        with self._lock:
            self._procs.discard(proc)

    def kill_all(self) -> None:
        self.stopping = True
        with self._lock:
            for proc in list(self._procs):
                _kill_group(proc)


def run_worker(request: GradeRequest, scratch: Path, *, workers: _Workers | None = None) -> WorkerOutcome:
    """Grade one staged submission in a fresh, isolated worker process (``python -I``, see ``_WORKER_BOOT``).

    The worker runs in a new session (its own process group) so that the
    time-out kills it and everything it started, in an empty working folder
    with an allow-listed environment (``_worker_env``). Its stdout/stderr go
    to ``scratch/worker.log``. The request travels as one ``--request JSON``
    argument, its clock started (:meth:`GradeRequest.started`): the worker's
    sandboxed calls stop at the same absolute deadline, less a margin to write
    results.

    Returns:
        a :class:`WorkerOutcome`; ``timed-out`` after ``request.timeout_s`` seconds of
        wall clock, ``crashed`` when the worker exits without results.
    """
    scratch.mkdir(parents=True, exist_ok=True)
    cwd = scratch / "cwd"  # an empty working folder: nothing of the operator's (or a submission's) is found there
    cwd.mkdir(exist_ok=True)
    timeout_s = request.timeout_s
    t0 = time.monotonic()
    # Absolute: the worker runs in its own empty folder.
    request = request.started(t0).model_copy(update={"submission": Path(request.submission).resolve()})
    # `python -I`: no cwd, PYTHONPATH or user site on sys.path, so a student folder named `grader/`
    # or `torch/` in the operator's working folder can never be imported by the worker.
    cmd = [*worker_command("worker"), "--request", request.model_dump_json(), "--out", str(scratch.resolve()),
           "--parent-pid", str(os.getpid())]
    log_path = scratch / "worker.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=_worker_env(),
            cwd=cwd,
            start_new_session=True,
        )
        if workers is not None:
            workers.add(proc)
        try:
            rc = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            proc.wait()
            return WorkerOutcome("timed-out", None, time_out_message(timeout_s), time.monotonic() - t0)
        finally:
            # Whatever happened, nothing the worker started may outlive it.
            _kill_group(proc)
            if workers is not None:
                workers.discard(proc)
    seconds = time.monotonic() - t0
    if rc == 0 and (scratch / RESULT_FILE).is_file():
        return read_result(scratch, seconds)
    tail = log_path.read_bytes()[-2000:].decode("utf-8", "replace").strip().splitlines()
    last = tail[-1] if tail else ""
    why = f"killed by signal {-rc}" if rc < 0 else f"exit status {rc}"
    return WorkerOutcome(
        "crashed", None, f"the grader process died ({why}){': ' + last if last else ''}", seconds
    )


#: What ``python -I -c`` runs in a worker: the grader's own folders (argv before ``--``) are appended to
#: sys.path only when the grader is not installed, then ``main`` gets the arguments after ``--``.
_WORKER_BOOT = (
    "import sys, importlib.util\n"
    "i = sys.argv.index('--')\n"
    "for p in sys.argv[1:i]:\n"
    "    name, _, folder = p.partition('=')\n"
    "    if importlib.util.find_spec(name) is None: sys.path.append(folder)\n"
    "from grader.runners.worker_process import main\n"
    "sys.exit(main(sys.argv[i + 1:]))\n"
)


class GraderMismatch(RuntimeError):
    """The batch's process and its workers would import different graders: the batch does not start."""


def check_one_grader(timeout_s: float = 120.0) -> str:
    """The grader fingerprint of this process, once a worker (``python -I``, :func:`worker_command`) confirms it
    imports the same grader; the one check that a batch's records name the grader that graded them.

    Raises:
        GraderMismatch: the worker's fingerprint differs (a checkout on ``PYTHONPATH`` beside an installed
            grader), or the worker could not say (both named, with where each grader is).
    """
    from grader.fingerprint import grader_fingerprint, package_root

    mine = grader_fingerprint()
    try:
        proc = subprocess.run(worker_command("fingerprint"), capture_output=True, text=True, timeout=timeout_s,
                              env=_worker_env(shared_server=False), cwd=tempfile.gettempdir())
        theirs, _, where = proc.stdout.strip().partition(" ")
    except (OSError, subprocess.TimeoutExpired) as exc:
        proc, theirs, where = None, "", f"({exc})"
    if proc is None or proc.returncode != 0 or theirs != mine:
        why = (proc.stderr.strip().splitlines() or [""])[-1] if proc is not None and proc.returncode else ""
        raise GraderMismatch(
            f"this process imports the grader from {package_root('grader')} (fingerprint {mine}), but its workers "
            f"(python -I, as every grading runs) import {where or 'no grader'} (fingerprint {theirs or 'unknown'}"
            f"{'; ' + why if why else ''}): the batch would record one grader and grade with another. Install the "
            "grader you mean to grade with (pip install -e .) or remove the other from PYTHONPATH, then rerun.")
    return mine


def time_out_message(timeout_s: float) -> str:
    """The one wording of a submission that ran out of its grading time (gradebook, results.json, feedback)."""
    return (f"grading took longer than the limit of {timeout_s:g} s and was stopped "
            "(look for an infinite loop or very slow code)")


def worker_command(mode: str) -> list[str]:
    """The command line that starts a worker process: ``python -I -c BOOT name=folder ... -- MODE``.

    ``mode`` is ``worker`` (grade one submission, :func:`worker_main`) or ``serve`` (a warm worker,
    ``grader.runners.warm.serve_main``); the caller appends that mode's arguments. The one place a worker's
    interpreter and boot code are chosen (fresh, warm and cluster workers alike).
    """
    return [sys.executable, "-I", "-c", _WORKER_BOOT, *_boot_paths(), "--", mode]


def _boot_paths() -> list[str]:
    """``name=folder`` for the grader: where this process found it."""
    import importlib.util

    out = []
    for name in ["grader"]:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.origin:
            continue
        origin = Path(spec.origin).resolve()
        folder = origin.parent.parent if spec.submodule_search_locations else origin.parent
        out.append(f"{name}={folder}")
    return out


def _watch_parent(parent_pid: int) -> None:
    """Kill this worker's whole process group as soon as the batch that started it is gone (kill -9)."""

    def loop() -> None:
        while True:
            if os.getppid() != parent_pid:
                os.killpg(os.getpgrp(), signal.SIGKILL)
            time.sleep(0.2)

    threading.Thread(target=loop, daemon=True, name="watch-parent").start()


def grading_function() -> Callable:
    """The function a worker grades with: ``grader.grade.grade_submission`` (imported on first use)."""
    from grader.grade import grade_submission

    return grade_submission


def grade_request(request: GradeRequest, out: Path) -> None:
    """Grade one staged submission in this (worker) process; write the typed ``result.json`` (``GradeResult``).

    The one grading step of a fresh worker (:func:`worker_main`) and a warm one
    (``grader.runners.warm``). With ``request.deadline`` (an absolute ``time.monotonic()``), the
    limits' ``timeout_s`` becomes what is left of the batch's clock for this student.

    Raises:
        whatever the grader raises (a grader fault: the batch reports ``crashed``).
    """
    grade = grading_function()
    kwargs = {}
    if request.limits is not None:
        limits = request.limits
        if request.deadline is not None:  # what is left of the batch's clock for this student
            limits = limits.model_copy(update={"timeout_s": max(request.deadline - time.monotonic(), 0.001)})
        kwargs["submission_limits"] = limits
    if request.staged:  # the parent's staged copy, graded where it is (staged once, by the parent)
        kwargs["staged"] = True
    result = grade(request.submission, exercises=request.exercises, profile=request.profile, **kwargs)
    # The typed result only: the batch (and a cluster node's client, grader/runners/cluster_worker.py) validates
    # it back into GradeResult and writes results.json and feedback.md from it, in one place.
    atomic_write_text(out / RESULT_FILE, result.model_dump_json())


def worker_main(argv: list[str]) -> int:
    """Entry of ``python -m grader.runners.worker_process worker``: grade one request, write its typed ``result.json``.

    Trusted side: imports the grader, which runs the student's code in its
    sandbox. Exit 0 after writing the file; any exception propagates
    (non-zero exit, traceback in the log) and the batch reports ``crashed``.
    """
    parser = argparse.ArgumentParser(prog="python -m grader.runners.worker_process worker")
    parser.add_argument("--request", required=True, help="the GradeRequest as JSON")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--parent-pid", type=int, default=None)
    args = parser.parse_args(argv)
    if args.parent_pid is not None:
        # Passed explicitly: had the batch died before this line, getppid() would already be 1.
        _watch_parent(args.parent_pid)
    grade_request(GradeRequest.model_validate_json(args.request), args.out)
    return 0
