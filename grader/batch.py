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

import os
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from grader.fingerprint import grader_fingerprint
from grader.intake import _JUNK_NAMES, BatchLimits, Entry, Rejected, StagedSubmission, SubmissionLimits  # noqa: F401
from grader.intake import _display_name, stage_submission, submission_hash  # noqa: F401 - one intake (grader/intake.py)
from grader.outcome import GradedEntry, _feedback_with_notes, _zero_results, exercise_reasons, grade_entry, zero_template  # noqa: F401
from grader.records import (  # noqa: F401 - the records and gradebooks (grader/records.py)
    CONTRACT_STEMS,
    GRADEBOOK,
    NBGRADER_COLUMNS,
    NBGRADER_CSV,
    RECORD,
    RESERVED_IDS,
    STATE_DIR,
    STATUSES,
    Status,
    StudentRecord,
    _record_from,
    atomic_write_json,
    clear_incomplete,
    gradebook_csv,
    mark_incomplete,
    nbgrader_csv,
    read_records,
)
from grader.results import GradeResult, atomic_write_text
from grader.warm import WarmPool, warm_workers_enabled
from grader.workers import (  # noqa: F401 - the worker processes (grader/workers.py)
    _WORKER_ENV_KEEP,
    BatchAborted,
    WorkerOutcome,
    _Workers,
    _worker_env,
    default_jobs,
    disk_full,
    run_worker,
)


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


def _check_out_dir(submissions_dir: Path, out_dir: Path) -> None:
    """Refuse an output folder inside the submissions folder (or the same): the batch would write the class's
    results into the submissions (a student's folder, even) and read its own outputs as students next time.

    Raises:
        ValueError: with both paths.
    """
    subs, out = Path(submissions_dir).resolve(), Path(out_dir).resolve()
    if out == subs or subs in out.parents:
        raise ValueError(f"the output folder {out_dir} is inside the submissions folder {submissions_dir}; "
                         "give --out a folder outside it (e.g. next to it)")


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
    attempt_rule=None,
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
        latest_only: grade only each student's latest submission, under the student id; needs a stated
            ``attempt_rule`` (``grader.attempts``: never a rule guessed from folder names).
        attempt_rule: a ``grader.attempts.AttemptRule`` (roster and/or pattern) mapping folders to students.
        cluster: a Dask scheduler's address: each submission is graded as a task there
            (``grader.cluster``; ``jobs`` is then the tasks in flight) instead of a local worker.

    A student regraded because the grader fingerprint changed has the published results kept
    first; ``regrade.md`` and ``regrade.csv`` then say what moved and why (``grader.regrade``).

    Returns:
        a :class:`BatchSummary`.

    Raises:
        NotADirectoryError: if ``submissions_dir`` is not a folder.
        ValueError: if ``out_dir`` is ``submissions_dir`` or inside it; ``grader.attempts.AttemptRuleError``
            (a ValueError) for ``latest_only`` without a rule or a student with several folders without it.
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
    _check_out_dir(submissions_dir, out_dir)
    entries, warnings = discover(submissions_dir)
    selection = None
    if latest_only or attempt_rule is not None:  # whose folder is which: only by the TA's rule (grader.attempts)
        from grader.attempts import AttemptRule, select

        selection = select(entries, attempt_rule or AttemptRule(), latest_only=latest_only)
        entries, warnings = selection.entries, warnings + selection.warnings
    for w in warnings:
        say(f"warning: {w}")
    cluster_runner = None
    if cluster:  # connect first: no scheduler leaves nothing behind; the workers' grader is the one fingerprinted
        from grader.cluster import ClusterRunner

        cluster_runner = ClusterRunner(cluster, log=say, sandboxed=not grade_fn)
    out_dir.mkdir(parents=True, exist_ok=True)
    state = out_dir / STATE_DIR
    state.mkdir(exist_ok=True)
    lock = _lock_out_dir(state)  # held until this function returns (or the process dies)
    if selection is not None:
        selection.write(out_dir)
    # Staging and scratch of a killed run are stale: start clean.
    for scratch in ("staging", "work", "warm"):
        shutil.rmtree(state / scratch, ignore_errors=True)
    _sweep_stale_temporaries(out_dir)
    fingerprint = cluster_runner.fingerprint if cluster_runner is not None else grader_fingerprint()
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
    if cluster_runner is not None and not todo:
        cluster_runner.close()
    elif cluster_runner is not None:  # the one swap: each staged submission is graded as a Dask task
        runner = cluster_runner
        jobs = requested_jobs or runner.default_jobs()
    elif todo and warm_workers_enabled():  # one long-lived trusted worker per job slot (grader/warm.py)
        runner = WarmPool(state / "warm", grade_fn=grade_fn, workers=workers)

    typed: dict[str, GradeResult] = {}  # the typed result of each student graded now (for the class report)

    def grade_one(entry: Entry, h: str) -> StudentRecord:
        sid = entry.student_id
        student_dir = out_dir / sid  # made only when there is something to write: no empty folder on a fault
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
                runner=runner,
            )
        except BatchAborted:
            raise  # the cluster is gone: nobody's fault in the class, record nothing
        except Exception as exc:  # a fault of the batch layer or the disk: record it, carry on
            if disk_full(exc):
                raise  # a full output disk is nobody's fault in the class: stop, keep what is whole
            message = f"the batch could not grade this submission ({type(exc).__name__}: {exc})"
            results = _zero_results(zero_template(profile, exercises), message)
            results["output"] = f"Status: crashed. {message}"
            graded = GradedEntry("crashed", message, results, f"**Status: crashed.** {message}\n", [], 0.0)
        if workers.stopping:
            raise KeyboardInterrupt
        if never_lower and _keep_published_scores(out_dir, sid, h, fingerprint, graded):
            graded.result = None  # the published tests were kept: the report reads results.json, as published
        if graded.result is not None:
            typed[sid] = graded.result  # the report reads it from here, not from disk
        student_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(student_dir / "feedback.md", graded.feedback)
        atomic_write_json(student_dir / "results.json", graded.results)
        key = {"submission_hash": h, **key_common}
        record = _record_from(sid, graded.status, graded.message, graded.results, key, graded.seconds, entry.sources)
        atomic_write_text(student_dir / RECORD, record.model_dump_json(indent=2) + "\n")
        return record

    if todo:
        mark_incomplete(out_dir, [e.student_id for e, _ in todo])  # `export` warns until the batch finishes
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
    clear_incomplete(out_dir)
    regrade.write_regrade_report(out_dir, records, fingerprint, never_lower)
    lock.close()
    for scratch in ("staging", "work", "warm"):
        shutil.rmtree(state / scratch, ignore_errors=True)
    if report:
        from grader.report import write_class_report

        write_class_report(out_dir, records, typed)
    return BatchSummary(out_dir, records, graded_now, skipped, warnings, time.monotonic() - t_start)


def _keep_published_scores(out_dir: Path, sid: str, h: str, fingerprint: str, graded: GradedEntry) -> bool:
    """``--never-lower``: a regrade (same submission, other grader) keeps each exercise's published score if higher.

    The published results come from another grader version, so they are compared in their contract
    format (results.json), not as this version's ``GradeResult``. Returns True when some exercise kept
    its published tests (``graded.results``, ``message`` and ``feedback`` are then patched in place).
    """
    from grader import regrade

    before = regrade.published(out_dir, sid)
    if before is None or before[0].submission_hash != h or before[0].grader_fingerprint == fingerprint:
        return False
    graded.results, notes = regrade.never_lower(graded.results, before[1])
    if notes:
        text = "never lower: " + "; ".join(notes)
        graded.message = "; ".join(filter(None, [graded.message, text]))
        graded.results["output"] = (str(graded.results.get("output", "")) + f"\n\n{text}.").strip()
        graded.feedback = f"**Regrade:** {text}.\n\n" + graded.feedback
    return bool(notes)
