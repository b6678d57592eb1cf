"""Batch grading for TAs: one student per sub-folder or .zip, graded in parallel.

``ppo-course grade-batch SUBMISSIONS_DIR --out OUT_DIR`` lands here
(:func:`run_batch`). The pieces, top to bottom:

1. :func:`discover` lists the students (a sub-folder or a ``.zip``; its name is
   the student id). Duplicated ids are rejected, stray files skipped.
2. :func:`stage_submission` (``grader.intake``, the one intake of every path) checks one submission *before* anything is
   unpacked (size from ``stat`` / the zip's headers, path traversal, symlinks
   out of the submission, zip bombs, non-UTF-8 names, NUL bytes) and copies
   the acceptable files into a clean staging folder. A bad submission raises
   :class:`Rejected` with a message a TA can act on.
3. Each staged submission is graded by ``grader.grade.grade_submission`` in
   its **own fresh worker process** (``python -I``, an empty working folder,
   an allow-listed environment, a new session/process group), with a hard
   per-submission time-out that its sandboxed calls share: a crash,
   hang or memory blow-up of one student's grading cannot touch another's.
   The worker itself is trusted; the student code runs further down, in the
   sandbox that ``grade_submission`` uses (ARCHITECTURE.md "The sandbox").
4. ``OUT_DIR/<student>/results.json`` and ``feedback.md`` are written
   atomically as each student finishes, then ``batch.json`` (a
   :class:`StudentRecord`) as the commit marker; ``OUT_DIR/gradebook.csv`` is
   rebuilt from the records after every student (atomically).

Resuming: a student whose ``batch.json`` carries the same submission hash,
grader fingerprint, profile and exercise selection is skipped. Since every
file is replaced atomically and the record is written last, a batch killed at
any moment (Ctrl-C or ``kill -9``) and rerun ends with the gradebook of an
uninterrupted run. Workers watch their parent and kill their own process
group when it dies, so a killed batch leaves nothing running.
"""

from __future__ import annotations

import argparse
import csv
import errno
import hashlib
import io
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from grader.intake import _JUNK_NAMES, BatchLimits, Entry, Rejected, StagedSubmission, SubmissionLimits  # noqa: F401
from grader.intake import _display_name, _stage_dir, _stage_zip, _walk_lstat, _zip_entry_name  # noqa: F401
from grader.intake import stage_submission, submission_hash  # noqa: F401 - one intake (grader/intake.py)
from grader.points import EXERCISES
from grader.results import atomic_write_text  # the shared atomic writer (tmp + fsync + os.replace)
from ppo_course.text_safety import csv_cell, md_inline

# The contract's exercise modules, in the gradebook's column order (one list: grader/points.py).
CONTRACT_STEMS: tuple[str, ...] = EXERCISES

Status = Literal["graded", "timed-out", "crashed", "empty", "rejected"]
STATUSES: tuple[str, ...] = ("graded", "timed-out", "crashed", "empty", "rejected")

GRADEBOOK = "gradebook.csv"
NBGRADER_CSV = "grades.csv"  # `nbgrader export`'s default file name
RECORD = "batch.json"
STATE_DIR = ".batch"  # staging, worker scratch and cached templates
# Names a student id may not take: they are the batch's own outputs.
RESERVED_IDS = frozenset({GRADEBOOK, NBGRADER_CSV, "report.md", "report.png", "report_tests.png",
                          "regrade.md", "regrade.csv", STATE_DIR})

# `nbgrader export` CSV columns (nbgrader/plugins/export.py, CsvExportPlugin).
NBGRADER_COLUMNS: tuple[str, ...] = (
    "assignment",
    "duedate",
    "timestamp",
    "student_id",
    "last_name",
    "first_name",
    "email",
    "raw_score",
    "late_submission_penalty",
    "score",
    "max_score",
)

class BatchAborted(RuntimeError):
    """The batch cannot go on (its grading back end is gone, e.g. a Dask scheduler); ``str(exc)`` says why.

    Raised out of :func:`run_batch` after the gradebook of what was written; rerunning resumes.
    """


class StudentRecord(BaseModel):
    """``OUT_DIR/<student>/batch.json``: the outcome of one student, written last (commit marker).

    The gradebook is rebuilt from these records alone; ``submission_hash``,
    ``grader_fingerprint``, ``profile`` and ``exercises`` decide whether a rerun
    may skip the student.
    """

    student_id: str
    status: Status
    message: str = ""
    submission_hash: str
    grader_fingerprint: str
    profile: str
    exercises: list[str] | None = None
    score: float = 0.0
    max_score: float = 0.0
    exercise_scores: dict[str, dict[str, float]] = Field(default_factory=dict)
    seconds: float = 0.0
    sources: list[str] = Field(default_factory=list)
    source_mtime: float | None = None


# --------------------------------------------------------------------------- io


def atomic_write_json(path: Path, data: object) -> None:
    """``grader.results.atomic_write_text`` of ``data`` as indented JSON (keys in insertion order)."""
    atomic_write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


# ---------------------------------------------------------------------- discover


def discover(submissions_dir: Path) -> tuple[list[Entry], list[str]]:
    """List the students of a submissions folder.

    Each sub-folder or ``*.zip`` file is one student; its name (without
    ``.zip``) is the student id. Hidden entries (``.x``) and ``__MACOSX`` are
    ignored; other files are stray and skipped with a warning. Two entries
    with the same id (``alice/`` and ``alice.zip``) give one entry with both
    sources and a ``problem``: the student is rejected, the batch carries on.
    A top-level symlink, a non-UTF-8 name or a reserved id is also a problem.

    Returns:
        (entries sorted by student id, warnings for the TA).

    Raises:
        NotADirectoryError / FileNotFoundError: if ``submissions_dir`` is not a folder.
    """
    submissions_dir = Path(submissions_dir)
    if not submissions_dir.is_dir():
        raise NotADirectoryError(f"submissions folder {submissions_dir} does not exist or is not a folder")
    warnings: list[str] = []
    by_id: dict[str, list[tuple[Path, str, str | None]]] = {}
    with os.scandir(os.fsencode(submissions_dir)) as it:
        raw_entries = sorted(it, key=lambda e: e.name)
    for de in raw_entries:
        name, valid_utf8 = _display_name(de.name)
        if name.startswith(".") or name in _JUNK_NAMES:
            continue
        path = Path(os.fsdecode(de.path))
        problem: str | None = None
        if de.is_symlink():
            kind = "zip" if name.lower().endswith(".zip") else "dir"
            problem = f"'{name}' is a symbolic link; submit the folder or zip itself"
        elif de.is_dir(follow_symlinks=False):
            kind = "dir"
        elif de.is_file(follow_symlinks=False) and name.lower().endswith(".zip"):
            kind = "zip"
        else:
            warnings.append(f"skipped stray file {name!r} in {submissions_dir} (not a folder or .zip)")
            continue
        student_id = name[: -len(".zip")] if kind == "zip" and name.lower().endswith(".zip") else name
        if not valid_utf8 and problem is None:
            problem = f"the name {name!r} is not valid UTF-8; rename it to the student id"
        if student_id in RESERVED_IDS and problem is None:
            problem = f"the student id {student_id!r} is reserved for the batch's own files"
        by_id.setdefault(student_id, []).append((path, kind, problem))
    entries: list[Entry] = []
    for student_id in sorted(by_id):
        found = by_id[student_id]
        if len(found) > 1:
            names = " and ".join(repr(p.name) for p, _, _ in found)
            entries.append(
                Entry(
                    student_id,
                    [p for p, _, _ in found],
                    found[0][1],  # type: ignore[arg-type]
                    problem=f"two submissions share the id {student_id!r} ({names}); keep one and regrade",
                )
            )
            warnings.append(f"rejected {student_id!r}: {names} share the same student id")
        else:
            path, kind, problem = found[0]
            entries.append(Entry(student_id, [path], kind, problem))  # type: ignore[arg-type]
    return entries, warnings


# ------------------------------------------------------------------ fingerprints


# TA-side layers that never change a score (batch, report and its analytics, regrade report,
# exports, similarity, the cluster transport): editing them must not regrade a class.
_SKIP_FROM_FINGERPRINT = {"batch.py", "report.py", "analytics.py", "regrade.py", "export.py", "similarity.py",
                          "cluster.py", "cluster_worker.py"}
_SKIP_DIRS_FROM_FINGERPRINT = {"commands", "gradescope", "__pycache__"}


def grader_fingerprint() -> str:
    """SHA-256 (hex, 16 chars) of everything that decides a grade: the grader, the reference and the student runtime.

    Hashes the source files of the ``grader`` package (minus this batch
    layer, the report and the CLI commands, which never change a score),
    ``ppo_reference`` and ``ppo_course`` (the sandbox, the model). A change to
    any of them makes a rerun regrade every student.
    """
    import importlib

    h = hashlib.sha256()
    for package in ("grader", "ppo_reference", "ppo_course"):
        try:
            mod = importlib.import_module(package)
        except ImportError:
            h.update(f"missing:{package}".encode())
            continue
        root = Path(mod.__file__).parent
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(root)
            if not path.is_file() or path.suffix in {".pyc", ".pyo"}:
                continue
            if any(part in _SKIP_DIRS_FROM_FINGERPRINT or part.startswith(".") for part in rel.parts[:-1]):
                continue
            if package == "grader" and len(rel.parts) == 1 and rel.name in _SKIP_FROM_FINGERPRINT:
                continue
            h.update(f"{package}/{rel.as_posix()}\0".encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


# ----------------------------------------------------------------------- staging


# ------------------------------------------------------------------------ worker


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
            from grader.sandbox.forkserver import ForkServerClient

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


def _worker_env(shared_server: bool = True, stand_in: bool = False) -> dict[str, str]:
    """A worker's whole environment: a short allow-list of the operator's, never PYTHON* or tokens.

    ``stand_in``: the worker runs a test's stand-in ``grade_fn`` (a hidden test hook), which may read
    its own variables: then the operator's environment is kept, still without any ``PYTHON*``.
    """
    if stand_in:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    else:
        env = {k: os.environ[k] for k in _WORKER_ENV_KEEP if k in os.environ}
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


@dataclass
class WorkerOutcome:
    """What one worker run produced: ``status`` is graded/timed-out/crashed; results when graded."""

    status: str
    results: dict | None
    feedback: str
    message: str
    seconds: float


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


def run_worker(
    submission: Path,
    scratch: Path,
    *,
    profile: str,
    exercises: list[str] | None,
    timeout_s: float,
    grade_fn: str | None = None,
    workers: _Workers | None = None,
    submission_limits: SubmissionLimits | None = None,
) -> WorkerOutcome:
    """Grade one staged submission in a fresh, isolated worker process (``python -I``, see ``_WORKER_BOOT``).

    The worker runs in a new session (its own process group) so that the
    time-out kills it and everything it started, in an empty working folder
    with an allow-listed environment (``_worker_env``). Its stdout/stderr go
    to ``scratch/worker.log``. With ``submission_limits`` the worker stages
    the submission with the same limits, and its sandboxed calls stop at the
    same absolute deadline (less a margin to write results).

    Returns:
        a :class:`WorkerOutcome`; ``timed-out`` after ``timeout_s`` seconds of
        wall clock, ``crashed`` when the worker exits without results.
    """
    scratch.mkdir(parents=True, exist_ok=True)
    cwd = scratch / "cwd"  # an empty working folder: nothing of the operator's (or a submission's) is found there
    cwd.mkdir(exist_ok=True)
    # `python -I`: no cwd, PYTHONPATH or user site on sys.path, so a student folder named `grader/`
    # or `torch/` in the operator's working folder can never be imported by the worker.
    cmd = [
        sys.executable,
        "-I",
        "-c",
        _WORKER_BOOT,
        *_boot_paths(grade_fn),
        "--",
        "worker",
        "--submission",
        str(Path(submission).resolve()),  # absolute: the worker runs in its own empty folder
        "--out",
        str(scratch.resolve()),
        "--profile",
        profile,
        "--parent-pid",
        str(os.getpid()),
    ]
    if exercises:
        cmd += ["--exercises", ",".join(exercises)]
    if grade_fn:
        cmd += ["--grade-fn", grade_fn]
    t0 = time.monotonic()
    if submission_limits is not None:
        # The worker's sandboxed calls stop at the same absolute moment the worker is killed, less a
        # margin to write its results (CLOCK_MONOTONIC is one clock for every process of the machine).
        margin = min(30.0, 0.1 * timeout_s)
        cmd += ["--limits", submission_limits.model_copy(update={"timeout_s": max(timeout_s - margin, 1.0)})
                .model_dump_json(), "--deadline", repr(t0 + timeout_s - margin)]
    log_path = scratch / "worker.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=_worker_env(shared_server=not grade_fn, stand_in=bool(grade_fn)),  # a stand-in needs no sandbox
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
            return WorkerOutcome(
                "timed-out",
                None,
                "",
                f"grading took longer than the limit of {timeout_s:g} s and was stopped "
                "(look for an infinite loop or very slow code)",
                time.monotonic() - t0,
            )
        finally:
            # Whatever happened, nothing the worker started may outlive it.
            _kill_group(proc)
            if workers is not None:
                workers.discard(proc)
    seconds = time.monotonic() - t0
    results_path = scratch / "results.json"
    if rc == 0 and results_path.is_file():
        try:
            results = json.loads(results_path.read_text(encoding="utf-8"))
            feedback_path = scratch / "feedback.md"
            feedback = feedback_path.read_text(encoding="utf-8") if feedback_path.is_file() else ""
            return WorkerOutcome("graded", results, feedback, "", seconds)
        except (OSError, ValueError) as exc:
            return WorkerOutcome("crashed", None, "", f"the grader wrote unreadable results ({exc})", seconds)
    tail = log_path.read_bytes()[-2000:].decode("utf-8", "replace").strip().splitlines()
    last = tail[-1] if tail else ""
    why = f"killed by signal {-rc}" if rc < 0 else f"exit status {rc}"
    return WorkerOutcome(
        "crashed", None, "", f"the grader process died ({why}){': ' + last if last else ''}", seconds
    )


#: What ``python -I -c`` runs in a worker: the grader's own folders (argv before ``--``) are appended to
#: sys.path only when the grader is not installed, then ``main`` gets the arguments after ``--``.
_WORKER_BOOT = (
    "import sys, importlib.util\n"
    "i = sys.argv.index('--')\n"
    "for p in sys.argv[1:i]:\n"
    "    name, _, folder = p.partition('=')\n"
    "    if importlib.util.find_spec(name) is None: sys.path.append(folder)\n"
    "from grader.batch import main\n"
    "sys.exit(main(sys.argv[i + 1:]))\n"
)


def _boot_paths(grade_fn: str | None) -> list[str]:
    """``name=folder`` for the grader (and a stand-in ``grade_fn``'s module): where this process found them."""
    import importlib.util

    out = []
    names = ["grader"] + ([grade_fn.partition(":")[0].split(".")[0]] if grade_fn else [])
    for name in names:
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


def _load_grade_fn(spec: str | None) -> Callable:
    if not spec:
        from grader.grade import grade_submission

        return grade_submission
    import importlib

    module_name, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module_name), attr)


def worker_main(argv: list[str]) -> int:
    """Entry of ``python -m grader.batch worker``: grade one submission, write results.json and feedback.md.

    Trusted side: imports the grader, which runs the student's code in its
    sandbox. Exit 0 after writing both files; any exception propagates
    (non-zero exit, traceback in the log) and the batch reports ``crashed``.
    """
    parser = argparse.ArgumentParser(prog="python -m grader.batch worker")
    parser.add_argument("--submission", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--profile", default="full")
    parser.add_argument("--exercises", default=None)
    parser.add_argument("--grade-fn", default=None)
    parser.add_argument("--parent-pid", type=int, default=None)
    parser.add_argument("--limits", default=None, help="the batch's SubmissionLimits as JSON")
    parser.add_argument("--deadline", type=float, default=None, help="absolute time.monotonic() deadline")
    args = parser.parse_args(argv)
    if args.parent_pid is not None:
        # Passed explicitly: had the batch died before this line, getppid() would already be 1.
        _watch_parent(args.parent_pid)
    grade = _load_grade_fn(args.grade_fn)
    exercises = args.exercises.split(",") if args.exercises else None
    kwargs = {}
    if args.limits:
        limits = SubmissionLimits.model_validate_json(args.limits)
        if args.deadline is not None:  # what is left of the batch's clock for this student
            limits = limits.model_copy(update={"timeout_s": max(args.deadline - time.monotonic(), 0.001)})
        kwargs["submission_limits"] = limits
    result = grade(args.submission, exercises=exercises, profile=args.profile, **kwargs)
    atomic_write_text(args.out / "feedback.md", result.feedback_markdown())
    atomic_write_json(args.out / "results.json", result.to_results_json())
    # The typed result itself, for a grader on a cluster node to send back (grader/cluster_worker.py).
    atomic_write_text(args.out / "result.json", result.model_dump_json())
    return 0


# ------------------------------------------------------------------ the batch


@dataclass
class GradedEntry:
    """One student's outcome: status, the message for the gradebook, results.json, feedback.md."""

    status: str
    message: str
    results: dict
    feedback: str
    notes: list[str]
    seconds: float


def grade_entry(
    entry: Entry,
    staging: Path,
    scratch: Path,
    *,
    limits: BatchLimits,
    profile: str,
    exercises: list[str] | None,
    zero_template: Callable[[], dict | None],
    grade_fn: str | None = None,
    workers: _Workers | None = None,
    runner: Callable[..., WorkerOutcome] | None = None,
) -> GradedEntry:
    """Check, stage and grade one submission in a worker process; never raises for a bad submission.

    ``zero_template()`` returns the results.json of an empty submission (for
    the max scores of a submission that could not be graded). Status:
    ``rejected`` (failed a check, or ``grade_submission`` could not read it),
    ``empty`` (no Python file), ``timed-out``, ``crashed`` (the worker died, or the grader
    reported ``grader_error`` on some test) or ``graded``. The
    staging and scratch folders are removed afterwards. ``runner`` replaces
    :func:`run_worker` (same signature; ``grader.cluster.ClusterRunner``).
    """
    notes: list[str] = []
    try:
        staged = stage_submission(entry, staging, limits)
        notes = staged.notes
    except Rejected as exc:
        message = str(exc)
        results = _zero_results(zero_template(), f"Submission rejected: {message}")
        status, seconds, feedback = "rejected", 0.0, ""
    else:
        outcome = (runner or run_worker)(
            staged.root,
            scratch,
            profile=profile,
            exercises=exercises,
            timeout_s=limits.timeout_s,
            grade_fn=grade_fn,
            workers=workers,
            submission_limits=None if grade_fn else limits,
        )
        status, message, seconds, feedback = outcome.status, outcome.message, outcome.seconds, outcome.feedback
        if outcome.results is None:
            results = _zero_results(zero_template(), message)
        else:
            results = outcome.results
            if staged.n_python_files == 0:
                status, message = "empty", "the submission holds no Python file"
            elif (results.get("extra_data") or {}).get("status") == "rejected":
                # grade_submission could not read it (GradeResult.status); its output says why.
                status = "rejected"
                message = str(results.get("output", "")) or "the grader could not read the submission"
            elif n_errors := _grader_errors(results):
                # Not the student's fault: a low score here would be silently wrong.
                status = "crashed"
                message = (f"the grader itself failed on {n_errors} test(s) (diagnosis grader_error); "
                           "fix the grader, then rerun the batch")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)
    if notes or status != "graded":
        head = f"Status: {status}. {message}".strip()
        for note in notes:
            head += f"\n- {note}"
        results["output"] = (head + ("\n\n" + results["output"] if results.get("output") else "")).strip()
    reasons = exercise_reasons(results) if status == "graded" else []
    full_message = "; ".join(filter(None, [message, *notes, *reasons]))
    return GradedEntry(
        status, full_message, results, _feedback_with_notes(entry.student_id, status, message, notes, feedback), notes, seconds
    )


def _short_import_error(stem: str, output: str) -> str:
    """ "SyntaxError line 12" (or "SyntaxError in ex4_gae.py line 12", "ImportError") from the last
    line of a module_broken test's output, e.g. "SyntaxError: expected ':' (ex4_gae.py, line 12)"."""
    last = (output.strip().splitlines() or [""])[-1]
    kind = re.match(r"\s*([A-Za-z_][\w.]*)\s*:", last)
    name = kind.group(1).rsplit(".", 1)[-1] if kind and kind.group(1) != "Diagnosis" else "does not import"
    where = re.search(r"\(([^(),]+\.py), line (\d+)\)\s*$", last)
    if not where:
        return name
    place = f"line {where.group(2)}" if where.group(1) == f"{stem}.py" else f"in {where.group(1)} line {where.group(2)}"
    return f"{name} {place}"


def exercise_reasons(results: dict) -> list[str]:
    """One short reason per exercise that was not really graded, for the gradebook's message column.

    From a results.json dict: "ex7_ppo_step: missing" (module absent), "ex4_gae: SyntaxError line 12"
    (import failed; the error's last line as the public tests report it), "ex5_rollout_buffer: not
    implemented" (every failed test says not_implemented and none passed). Graded exercises give nothing.
    """
    status = (results.get("extra_data") or {}).get("exercise_status") or {}
    tests = results.get("tests") or []
    reasons = []
    for stem, st in status.items():
        mine = [t for t in tests if (t.get("tags") or [None])[0] == stem]
        if st == "missing":
            reasons.append(f"{stem}: missing")
        elif st == "broken":
            broken = [t for t in mine if "diagnosis:module_broken" in (t.get("tags") or [])]
            shown = next((t for t in broken if t.get("visibility") != "hidden" and "public" in t.get("tags", [])),
                         broken[0] if broken else None)
            reasons.append(f"{stem}: " + (_short_import_error(stem, shown.get("output", "")) if shown
                                          else "does not import"))
        elif mine and all(t.get("status") != "passed" and "diagnosis:not_implemented" in (t.get("tags") or [])
                          for t in mine):
            reasons.append(f"{stem}: not implemented")
    return reasons


def _grader_errors(results: dict) -> int:
    """Number of tests whose failure the grader blames on itself (tag ``diagnosis:grader_error``)."""
    return sum("diagnosis:grader_error" in (t.get("tags") or []) for t in results.get("tests", []))


class ZeroTemplate:
    """The results.json of an empty submission, graded once per grader version (cached on disk).

    Supplies the exercises' max scores for the results of a submission that
    could not be graded (rejected, timed out, crashed). Thread-safe; calling
    the instance returns the dict, or None when even an empty submission
    could not be graded.
    """

    def __init__(self, cache: Path, *, profile: str, exercises: list[str] | None, timeout_s: float,
                 grade_fn: str | None = None, workers: _Workers | None = None,
                 runner: Callable[..., WorkerOutcome] | None = None) -> None:
        self.cache, self.profile, self.exercises = cache, profile, exercises
        self.runner = runner or run_worker
        self.timeout_s, self.grade_fn, self.workers = timeout_s, grade_fn, workers
        self._lock = threading.Lock()
        self._done = False
        self._value: dict | None = None

    def __call__(self) -> dict | None:
        with self._lock:
            if self._done:
                return self._value
            value = None
            if self.cache.is_file():
                try:
                    value = json.loads(self.cache.read_text(encoding="utf-8"))
                except ValueError:
                    value = None
            if value is None:
                self.cache.parent.mkdir(parents=True, exist_ok=True)
                empty = Path(tempfile.mkdtemp(prefix="empty-", dir=self.cache.parent))
                try:
                    (empty / "submission").mkdir()
                    outcome = self.runner(empty / "submission", empty / "out", profile=self.profile,
                                         exercises=self.exercises, timeout_s=self.timeout_s,
                                         grade_fn=self.grade_fn, workers=self.workers)
                finally:
                    shutil.rmtree(empty, ignore_errors=True)
                value = outcome.results
                if value is not None:
                    atomic_write_json(self.cache, value)
            self._value, self._done = value, True
            return value


@dataclass
class BatchSummary:
    """What :func:`run_batch` did: the records of the gradebook and what happened this run."""

    out_dir: Path
    records: list[StudentRecord]
    graded_now: list[str]
    skipped: list[str]
    warnings: list[str]
    seconds: float

    def count(self, status: str) -> int:
        """Number of students in the gradebook with this status."""
        return sum(r.status == status for r in self.records)


def _zero_results(template: dict | None, reason: str) -> dict:
    """A results.json scoring 0 everywhere, shaped like ``template`` (an empty submission's results)."""
    exercises = {}
    max_score = 0.0
    tests: list[dict] = []
    version = None
    if template:
        extra = template.get("extra_data", {})
        exercises = {k: {"score": 0.0, "max_score": float(v.get("max_score", 0.0))} for k, v in extra.get("exercises", {}).items()}
        max_score = float(extra.get("max_score", sum(v["max_score"] for v in exercises.values())))
        version = extra.get("grader_version")
        for t in template.get("tests", []):
            tests.append({**t, "score": 0.0, "status": "failed", "output": reason})
    return {
        "score": 0.0,
        "output": "",  # grade_entry puts the status and the reason here
        "tests": tests,
        "extra_data": {"max_score": max_score, "exercises": exercises, "grader_version": version},
    }


def _record_from(
    student_id: str,
    status: str,
    message: str,
    results: dict,
    key: dict,
    seconds: float,
    sources: list[Path],
) -> StudentRecord:
    extra = results.get("extra_data", {}) or {}
    exercises = {
        stem: {"score": float(v.get("score", 0.0)), "max_score": float(v.get("max_score", 0.0))}
        for stem, v in (extra.get("exercises") or {}).items()
    }
    mtime = None
    try:
        mtime = max(os.lstat(p).st_mtime for p in sources)
    except OSError:
        pass
    return StudentRecord(
        student_id=student_id,
        status=status,  # type: ignore[arg-type]
        message=message,
        score=float(results.get("score", 0.0)),
        max_score=float(extra.get("max_score", sum(v["max_score"] for v in exercises.values()))),
        exercise_scores=exercises,
        seconds=round(seconds, 3),
        sources=[p.name for p in sources],
        source_mtime=mtime,
        **key,
    )


def _feedback_with_notes(student_id: str, status: str, message: str, notes: list[str], feedback: str) -> str:
    head = []
    if status != "graded" or notes:
        # The id (a folder or zip name), the message and notes quote student-derived text: escaped, capped.
        head.append(f"# Batch grading: {md_inline(student_id)}\n")
        head.append(f"**Status: {status}.** {md_inline(message, 2000)}\n" if message else f"**Status: {status}.**\n")
        for note in notes:
            head.append(f"- {md_inline(note, 2000)}")
        head.append("")
    return "\n".join(head) + ("\n" + feedback if feedback else "")


def read_records(out_dir: Path, student_ids: Iterable[str]) -> list[StudentRecord]:
    """The :class:`StudentRecord` of each listed student that has one in ``out_dir`` (unreadable ones are skipped)."""
    records = []
    for sid in student_ids:
        path = out_dir / sid / RECORD
        try:
            records.append(StudentRecord.model_validate_json(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    return records


def gradebook_columns(records: Iterable[StudentRecord]) -> list[str]:
    """``student_id``, one column per module stem (contract order, then any other stem), ``total``, ``max_total``, ``status``, ``message``."""
    seen = {stem for r in records for stem in r.exercise_scores}
    stems = [s for s in CONTRACT_STEMS if s in seen] or list(CONTRACT_STEMS)
    stems += sorted(seen - set(CONTRACT_STEMS))
    return ["student_id", *stems, "total", "max_total", "status", "message"]


def _fmt(x: float) -> str:
    return f"{round(x, 4):g}"


def gradebook_csv(records: list[StudentRecord]) -> str:
    """The contract's gradebook as CSV text: one row per student, sorted by id.

    Columns: ``student_id``, one per module stem (that exercise's score), ``total``,
    ``max_total``, ``status`` (graded / timed-out / crashed / empty / rejected)
    and ``message`` (why, for anything but a clean grading). Scores are
    formatted with ``%g`` after rounding to 4 decimals, so that the file is
    byte-identical across runs that grade identically.
    """
    columns = gradebook_columns(records)
    stems = columns[1:-4]
    max_total = max((r.max_score for r in records), default=0.0)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for r in sorted(records, key=lambda r: r.student_id):
        row = [r.student_id]
        row += [_fmt(r.exercise_scores.get(s, {}).get("score", 0.0)) for s in stems]
        row += [_fmt(r.score), _fmt(r.max_score or max_total), r.status, r.message]
        writer.writerow([csv_cell(cell, 1000) for cell in row])  # ids and messages: capped, never a formula
    return buf.getvalue()


def nbgrader_csv(records: list[StudentRecord], assignment: str = "ppo") -> str:
    """The gradebook in ``nbgrader export``'s CSV columns (:data:`NBGRADER_COLUMNS`).

    ``timestamp`` is the submission's modification time (UTC, ISO 8601);
    names, e-mail and due date are empty (the batch does not know them); no
    late penalty, so ``score == raw_score``.
    """
    from datetime import datetime, timezone

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(NBGRADER_COLUMNS)
    max_total = max((r.max_score for r in records), default=0.0)
    for r in sorted(records, key=lambda r: r.student_id):
        ts = (
            datetime.fromtimestamp(r.source_mtime, tz=timezone.utc).isoformat() if r.source_mtime is not None else ""
        )
        writer.writerow(
            [csv_cell(cell, 1000) for cell in
             [assignment, "", ts, r.student_id, "", "", "", _fmt(r.score), "0.0", _fmt(r.score), _fmt(r.max_score or max_total)]]
        )
    return buf.getvalue()


class _NoProgress:
    def __init__(self, *a, **k) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def add_task(self, *a, **k) -> int:
        return 0

    def update(self, *a, **k) -> None:
        pass

    def advance(self, *a, **k) -> None:
        pass


def _progress(enabled: bool):
    if not enabled:
        return _NoProgress()
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("[bold]grading"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[tally]}"),
        console=Console(stderr=True),
        transient=False,
    )


class BatchBusy(RuntimeError):
    """Another batch is writing to the same OUT_DIR right now."""


def _lock_out_dir(state: Path):
    """An exclusive ``flock`` on ``state/lock`` (released by the kernel even after kill -9).

    Raises:
        BatchBusy: if another process holds it.
    """
    import fcntl

    fh = open(state / "lock", "w")
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.close()
        raise BatchBusy(f"another grade-batch is writing to {state.parent}; wait for it or use another --out")
    return fh


def _sweep_stale_temporaries(out_dir: Path) -> None:
    """Remove what a batch killed mid-write (kill -9) left of ``atomic_write_text``'s temporary files.

    Only names of that writer's shape (``.<name>.<random>.tmp``) directly in ``out_dir`` or one
    student folder below; the final files were never touched (``os.replace`` is atomic). Called
    under the batch's lock, so no live writer owns them.
    """
    for pattern in (".*.tmp", "*/.*.tmp"):
        for tmp in out_dir.glob(pattern):
            if tmp.is_file() and not tmp.is_symlink():
                tmp.unlink(missing_ok=True)


def run_batch(
    submissions_dir: Path,
    out_dir: Path,
    *,
    jobs: int | None = None,
    force: bool = False,
    profile: str = "full",
    exercises: list[str] | None = None,
    limits: BatchLimits | None = None,
    formats: Iterable[str] = (),
    assignment: str = "ppo",
    progress: bool = True,
    report: bool = True,
    grade_fn: str | None = None,
    log: Callable[[str], None] | None = None,
    never_lower: bool = False,
    latest_only: bool = False,
    cluster: str | None = None,
) -> BatchSummary:
    """Grade every student of ``submissions_dir`` into ``out_dir``; resumable, crash-isolated, parallel.

    Args:
        submissions_dir: one sub-folder or ``.zip`` per student (the name is the id).
        out_dir: receives ``<student>/results.json``, ``<student>/feedback.md``,
            ``<student>/batch.json``, ``gradebook.csv`` (and ``grades.csv`` with
            ``formats=("nbgrader",)``), ``report.md`` and ``report.png``.
        jobs: parallel workers (default: the usable CPU cores).
        force: regrade students whose record says they are up to date.
        profile: ``"full"`` or ``"fast"``, passed to ``grade_submission``.
        exercises: module stems to grade (default: all).
        limits: per-submission :class:`BatchLimits`.
        formats: extra gradebook formats; ``"nbgrader"`` writes nbgrader's export CSV.
        assignment: the assignment name in the nbgrader CSV.
        progress: show a rich progress bar (stderr).
        report: write the class report when done.
        grade_fn: ``"module:function"`` replacing ``grader.grade.grade_submission`` (tests).
        log: where warnings go (default: stderr).
        never_lower: after a grader change, keep each exercise's published score where the
            regrade gives less (``grader.regrade.never_lower``).
        latest_only: grade only each student's latest submission (``grader.regrade.parse_attempt``).
        cluster: a Dask scheduler's address: each submission is graded as a task there
            (``grader.cluster``; ``jobs`` is then the tasks in flight) instead of a local worker.

    A student regraded because the grader fingerprint changed has the published results kept
    first; ``regrade.md`` and ``regrade.csv`` then say what moved and why (``grader.regrade``).

    Returns:
        a :class:`BatchSummary`.

    Raises:
        NotADirectoryError: if ``submissions_dir`` is not a folder.
        BatchBusy: if another batch is writing to ``out_dir``.
        KeyboardInterrupt: after killing every worker and writing the gradebook so far.
        BatchAborted: the cluster is unreachable, gone, or refuses (``grader.cluster.ClusterUnavailable``),
            after writing the gradebook so far.
    """
    t_start = time.monotonic()
    limits = limits or BatchLimits()
    requested_jobs, jobs = jobs, jobs or default_jobs()
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    submissions_dir = Path(submissions_dir)
    out_dir = Path(out_dir)
    say = log or (lambda msg: print(msg, file=sys.stderr))
    entries, warnings = discover(submissions_dir)
    if latest_only:
        from grader.regrade import latest_only as _latest

        latest = _latest(e.student_id for e in entries)
        earlier = sorted(e.student_id for e in entries if e.student_id not in latest)
        if earlier:
            warnings.append(f"--latest-only: left out {len(earlier)} earlier submission(s): {', '.join(earlier)}")
        entries = [e for e in entries if e.student_id in latest]
    for w in warnings:
        say(f"warning: {w}")
    out_dir.mkdir(parents=True, exist_ok=True)
    state = out_dir / STATE_DIR
    state.mkdir(exist_ok=True)
    lock = _lock_out_dir(state)  # held until this function returns (or the process dies)
    # Staging and scratch of a killed run are stale: start clean.
    shutil.rmtree(state / "staging", ignore_errors=True)
    shutil.rmtree(state / "work", ignore_errors=True)
    _sweep_stale_temporaries(out_dir)
    fingerprint = grader_fingerprint()
    key_common = {
        "grader_fingerprint": fingerprint,
        "profile": profile,
        "exercises": sorted(exercises) if exercises else None,
    }
    ids = [e.student_id for e in entries]
    gb_lock = threading.Lock()
    workers = _Workers()

    def rebuild_gradebook() -> list[StudentRecord]:
        with gb_lock:
            records = read_records(out_dir, ids)
            atomic_write_text(out_dir / GRADEBOOK, gradebook_csv(records))
            if "nbgrader" in formats:
                atomic_write_text(out_dir / NBGRADER_CSV, nbgrader_csv(records, assignment))
            return records

    # Which students are up to date?
    todo: list[tuple[Entry, str]] = []
    skipped: list[str] = []
    from grader import regrade

    for entry in entries:
        h = submission_hash(entry, limits)
        rec = read_records(out_dir, [entry.student_id])
        if not force:
            if (
                rec
                and rec[0].submission_hash == h
                and all(getattr(rec[0], k) == v for k, v in key_common.items())
                and (out_dir / entry.student_id / "results.json").is_file()
            ):
                skipped.append(entry.student_id)
                continue
        # A grader change: keep the published results for regrade.md before they are replaced.
        regrade.keep_published(out_dir, entry.student_id, fingerprint, rec[0] if rec else None)
        todo.append((entry, h))

    runner: Callable[..., WorkerOutcome] = run_worker
    if cluster and todo:  # the one swap: each staged submission is graded as a Dask task
        from grader.cluster import ClusterRunner

        runner = ClusterRunner(cluster, fingerprint=fingerprint, log=say, sandboxed=not grade_fn)
        jobs = requested_jobs or runner.default_jobs()
    zero_template = ZeroTemplate(
        state / f"empty-{fingerprint}-{profile}-{'_'.join(key_common['exercises'] or ['all'])}.json",
        profile=profile,
        exercises=exercises,
        timeout_s=limits.timeout_s,
        grade_fn=grade_fn,
        workers=workers,
        runner=runner,
    )

    def grade_one(entry: Entry, h: str) -> StudentRecord:
        sid = entry.student_id
        student_dir = out_dir / sid
        student_dir.mkdir(parents=True, exist_ok=True)
        # The old record goes first: a kill from here on leaves the student to regrade.
        try:
            os.unlink(student_dir / RECORD)
        except FileNotFoundError:
            pass
        try:
            graded = grade_entry(
                entry,
                state / "staging" / sid,
                state / "work" / sid,
                limits=limits,
                profile=profile,
                exercises=exercises,
                grade_fn=grade_fn,
                workers=workers,
                zero_template=zero_template,
                runner=runner,
            )
        except BatchAborted:
            raise  # the cluster is gone: nobody's fault in the class, record nothing
        except Exception as exc:  # a fault of the batch layer or the disk: record it, carry on
            if disk_full(exc):
                raise  # a full output disk is nobody's fault in the class: stop, keep what is whole
            message = f"the batch could not grade this submission ({type(exc).__name__}: {exc})"
            results = _zero_results(zero_template(), message)
            results["output"] = f"Status: crashed. {message}"
            graded = GradedEntry("crashed", message, results, f"**Status: crashed.** {message}\n", [], 0.0)
        if workers.stopping:
            raise KeyboardInterrupt
        if never_lower:
            _keep_published_scores(out_dir, sid, h, fingerprint, graded)
        atomic_write_text(student_dir / "feedback.md", graded.feedback)
        atomic_write_json(student_dir / "results.json", graded.results)
        key = {"submission_hash": h, **key_common}
        record = _record_from(sid, graded.status, graded.message, graded.results, key, graded.seconds, entry.sources)
        atomic_write_text(student_dir / RECORD, record.model_dump_json(indent=2) + "\n")
        return record

    graded_now: list[str] = []
    tally = {"failed": 0, "timed-out": 0}
    with _progress(progress) as bar:
        task = bar.add_task("grading", total=len(entries), completed=len(skipped), tally="")
        if not todo:
            rebuild_gradebook()
        pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="grade")
        futures: dict[Future, str] = {pool.submit(grade_one, e, h): e.student_id for e, h in todo}
        try:
            pending = set(futures)
            while pending:
                done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                for fut in done:
                    sid = futures[fut]
                    try:
                        record = fut.result()
                    except (KeyboardInterrupt, BatchAborted):
                        raise
                    except Exception as exc:  # a bug in the batch layer itself: say so, keep going
                        if disk_full(exc):
                            raise
                        say(f"error: grading {sid!r} failed in the batch layer: {exc!r}")
                        tally["failed"] += 1
                        bar.advance(task)
                        continue
                    graded_now.append(sid)
                    if record.status == "timed-out":
                        tally["timed-out"] += 1
                    elif record.status in ("crashed", "rejected"):
                        tally["failed"] += 1
                    rebuild_gradebook()
                    bar.update(
                        task, advance=1, tally=f"failed {tally['failed']} · timed out {tally['timed-out']}"
                    )
        except BaseException as exc:
            workers.kill_all()
            for fut in futures:
                fut.cancel()
            pool.shutdown(wait=True, cancel_futures=True)
            getattr(runner, "close", lambda: None)()
            try:
                rebuild_gradebook()
            except OSError as again:
                if not disk_full(again):
                    raise
                # the old gradebook stays whole (atomic writes); the rerun rebuilds it
            raise exc
        pool.shutdown(wait=True)
    getattr(runner, "close", lambda: None)()
    records = rebuild_gradebook()
    regrade.write_regrade_report(out_dir, records, fingerprint, never_lower)
    lock.close()
    shutil.rmtree(state / "staging", ignore_errors=True)
    shutil.rmtree(state / "work", ignore_errors=True)
    if report:
        from grader.report import write_class_report

        write_class_report(out_dir, records)
    return BatchSummary(out_dir, records, graded_now, skipped, warnings, time.monotonic() - t_start)


def _keep_published_scores(out_dir: Path, sid: str, h: str, fingerprint: str, graded: GradedEntry) -> None:
    """``--never-lower``: a regrade (same submission, other grader) keeps each exercise's published score if higher."""
    from grader import regrade

    before = regrade.published(out_dir, sid)
    if before is None or before[0].submission_hash != h or before[0].grader_fingerprint == fingerprint:
        return
    graded.results, notes = regrade.never_lower(graded.results, before[1])
    if notes:
        text = "never lower: " + "; ".join(notes)
        graded.message = "; ".join(filter(None, [graded.message, text]))
        graded.results["output"] = (str(graded.results.get("output", "")) + f"\n\n{text}.").strip()
        graded.feedback = f"**Regrade:** {text}.\n\n" + graded.feedback


def main(argv: list[str] | None = None) -> int:
    """``python -m grader.batch worker ...`` (the per-submission worker)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["worker"]:
        return worker_main(argv[1:])
    print("usage: python -m grader.batch worker --submission DIR --out DIR [--profile P]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
