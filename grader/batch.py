"""Batch grading for TAs: one student per sub-folder or .zip, graded in parallel.

``ppo-course grade-batch SUBMISSIONS_DIR --out OUT_DIR`` lands here
(:func:`run_batch`). The pieces, top to bottom:

1. ``grader.intake.class_list.discover`` lists the students (a sub-folder or a ``.zip``; its name is
   the student id). Duplicated ids are rejected, stray files skipped.
2. ``stage_submission`` (``ppo_course.submission_rules``, the one intake of every path) checks one submission *before* anything is
   unpacked (size from ``stat`` / the zip's headers, path traversal, symlinks
   out of the submission, zip bombs, non-UTF-8 names, NUL bytes) and copies
   the acceptable files into a clean staging folder. A bad submission raises
   :class:`Rejected` with a message a TA can act on.
3. Each staged submission becomes one ``grader.intake.request.GradeRequest``, which a runner
   (``grader.runners``: a warm worker, a fresh worker or a Dask node) carries to a worker process
   (``python -I``, an empty working folder, an allow-listed environment, a new session/process
   group) that grades it with ``grader.grade.grade_submission``, with a hard per-submission time-out
   that its sandboxed calls share: a crash, hang or memory blow-up of one student's grading cannot
   touch another's. The worker itself is trusted; the student code runs further down, in the
   sandbox that ``grade_submission`` uses (ARCHITECTURE.md "The sandbox").
4. The worker's typed result becomes one ``grader.records.outcome.StudentOutcome``
   (``--never-lower`` applied to it, typed: ``grader.reports.regrade.never_lower``);
   ``OUT_DIR/<student>/results.json`` and ``feedback.md`` are written from it
   atomically as each student finishes, then ``batch.json`` (a
   ``StudentRecord`` of the same outcome) as the commit marker. The records
   stay in memory; ``OUT_DIR/gradebook.csv`` is written from them (atomically)
   at most once a second and when the batch ends, so the cost per student does
   not grow with the class.

Resuming: a student whose ``batch.json`` carries the same submission hash,
grader fingerprint, profile and exercise selection is skipped, unless that record is a grader fault
(``grader_fault``: no score was published), which every rerun grades again. Since every
file is replaced atomically and the record is written last, a batch killed at
any moment (Ctrl-C or ``kill -9``) and rerun ends with the gradebook of an
uninterrupted run. Workers watch their parent and kill their own process
group when it dies, so a killed batch leaves nothing running.
"""

from __future__ import annotations

import itertools
import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from grader.batch_run import BatchRun, write_no_submission
from grader.course_secret import ensure_secret
from grader.fingerprint import grader_fingerprint
from grader.intake.attempts import record_selection
from grader.intake.class_list import class_list
from grader.intake.submission import submission_hash
from ppo_course.submission_rules import Entry, SubmissionLimits
from grader.records.faults import fault_ids
from grader.records.gradebook import (
    STATUSES,
    StudentRecord,
    check_batch_formats,
    clear_incomplete,
    is_fault,
    mark_incomplete,
    read_records,
    record_of,
    student_folder,
)
from grader.records.out_folder import (
    check_out_dir,
    clean_scratch,
    lock_out_dir,
    set_aside_removed,
    sweep_stale_temporaries,
)
from grader.records.points_change import check_batch_points
from grader.reports.report import preload_drawing, write_class_report
from grader.records.publish import forget_record, write_student
from grader.reports import regrade
from grader.runners.progress import progress_bar, tally_words
from grader.runners.warm import WarmPool, warm_workers_enabled
from grader.runners.runner import BatchAborted, Runner
from grader.runners.workers import check_one_grader, default_jobs, disk_full, run_worker
from grader.student import grade_entry, zero_outcome


@dataclass
class BatchSummary:
    """What :func:`run_batch` did: the records of the gradebook and what happened this run."""

    out_dir: Path
    records: list[StudentRecord]
    graded_now: list[str]
    skipped: list[str]
    warnings: list[str]
    seconds: float

    @property
    def faulted(self) -> list[str]:
        """The students whose grading the grader itself spoiled (status ``grader_fault``: no score), sorted."""
        return fault_ids(self.records)

    def count(self, status: str) -> int:
        """Number of students in the gradebook with this status."""
        return sum(r.status == status for r in self.records)

    def line(self) -> str:
        """The one-line summary ``grade-batch`` and ``demo`` print: "16 students (15 graded, 1 empty); graded
        now 16, up to date 0; 35.2 s"."""
        counts = ", ".join(f"{self.count(s)} {s}" for s in STATUSES if self.count(s))
        return (f"{len(self.records)} students ({counts}); graded now {len(self.graded_now)}, "
                f"up to date {len(self.skipped)}; {self.seconds:.1f} s")


def run_batch(submissions_dir: Path, out_dir: Path, *, jobs: int | None = None, force: bool = False,
              profile: str = "full", exercises: list[str] | None = None, limits: SubmissionLimits | None = None,
              formats: Iterable[str] = (), assignment: str = "ppo", progress: bool = True, report: bool = True,
              log: Callable[[str], None] | None = None, never_lower: bool = False, latest_only: bool = False,
              cluster: str | None = None, attempt_rule=None, accept_points_change: bool = False) -> BatchSummary:
    """Grade every student of ``submissions_dir`` into ``out_dir``; resumable, crash-isolated, parallel.

    Args:
        submissions_dir: one sub-folder or ``.zip`` per student (the name is the id).
        out_dir: receives ``<student>/results.json``, ``<student>/feedback.md``, ``<student>/batch.json``,
            ``gradebook.csv`` (and ``grades.csv`` with ``formats=("nbgrader",)``), ``report.md`` and ``report.png``.
        jobs: parallel workers (default: the usable CPU cores); force: regrade students up to date too.
        profile: ``"full"`` or ``"fast"``, passed to ``grade_submission``; exercises: module stems to grade
            (default: all); limits: per-submission :class:`SubmissionLimits`.
        formats: extra gradebook formats (``"nbgrader"`` writes nbgrader's export CSV, whose assignment name
            is ``assignment``).
        progress: show a progress bar (stderr); report: write the class report; log: warnings (default: stderr).
        never_lower: after a grader change, keep each exercise's published score where the regrade gives less
            (``grader.reports.regrade.never_lower``); a changed submission is regraded in full, and regrade.md
            and the student's feedback say so.
        latest_only: grade only each student's latest submission, under the student id; needs a stated
            ``attempt_rule`` (``grader.intake.attempts.AttemptRule``, roster and/or pattern, mapping folders
            to students: never a rule guessed from folder names).
        cluster: a Dask scheduler's address: each submission is graded as a task there
            (``grader.runners.cluster``; ``jobs`` is then the tasks in flight) instead of a local worker.
        accept_points_change: grade although an exercise's maximum moved (else ``PointsChanged``, nothing graded).

    A student regraded because the grader fingerprint changed has the published results kept first;
    ``regrade.md`` and ``regrade.csv`` then say what moved and why (``grader.reports.regrade``). The folder
    of a student no longer in ``submissions_dir`` moves to ``OUT_DIR/.batch/removed/`` (with a warning):
    what is in ``OUT_DIR`` is the gradebook's class. Returns a :class:`BatchSummary`.

    Raises:
        NotADirectoryError: if ``submissions_dir`` is not a folder.
        ValueError: if ``out_dir`` is ``submissions_dir`` or inside it, or ``jobs`` < 1;
            ``grader.intake.attempts.AttemptRuleError`` (a ValueError) for ``latest_only`` without a rule or a
            student with several folders without it.
        BatchBusy / GraderMismatch: another batch writes to ``out_dir``; the workers would import another grader.
        KeyboardInterrupt: after killing every worker and writing the gradebook so far.
        BatchAborted: the cluster is unreachable, gone, or refuses (``grader.runners.cluster.ClusterUnavailable``),
            after writing the gradebook so far.
        grader.course_secret.GraderSecretError: no usable course secret and none can be made (nothing written).
    """
    t_start = time.monotonic()
    out_dir, formats = _checked_arguments(submissions_dir, out_dir, jobs, profile, formats)
    say = log or (lambda msg: print(msg, file=sys.stderr))
    entries, warnings, selection = class_list(Path(submissions_dir), latest_only, attempt_rule)
    absent = list(selection.absent) if selection is not None else []  # roster students with no folder
    present = {e.student_id for e in entries} | set(absent)
    cluster_runner, fingerprint = _grader_of_the_batch(cluster, say)
    run = BatchRun(out_dir, limits or SubmissionLimits(), profile, exercises, tuple(formats), assignment, never_lower,
                   fingerprint, say, absent=absent, cluster_runner=cluster_runner,
                   accept_points_change=accept_points_change, on_all_sent=preload_drawing if report else None)
    graded_now, skipped, records = _lock_and_run(run, selection, entries, warnings, present, force, jobs, progress)
    clean_scratch(run.state)
    if report:
        write_class_report(out_dir, records, run.typed)
    return BatchSummary(out_dir, records, graded_now, skipped, warnings, time.monotonic() - t_start)


def _checked_arguments(submissions_dir: Path, out_dir: Path, jobs: int | None, profile: str,
                       formats: Iterable[str]) -> tuple[Path, tuple[str, ...]]:
    """:func:`run_batch`'s argument checks (see its Raises); returns ``(Path(out_dir), tuple(formats))``."""
    if jobs is not None and jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    out_dir = Path(out_dir)
    check_out_dir(Path(submissions_dir), out_dir)
    formats = tuple(formats)
    check_batch_formats(profile, formats)
    return out_dir, formats


def _grader_of_the_batch(cluster: str | None, say: Callable[[str], None]):
    """``(the connected ClusterRunner or None, the fingerprint that grades)``, once the course's grader secret is
    there (``grader.course_secret.ensure_secret``: made at first use; raises ``GraderSecretError`` otherwise).
    Local workers' fingerprint is first checked to be the one a ``python -I`` worker imports
    (``check_one_grader``: else the batch does not start)."""
    ensure_secret(say=say)
    cluster_runner = _connect_cluster(cluster, say)
    if cluster_runner is not None:
        return cluster_runner, cluster_runner.fingerprint
    check_one_grader()
    return None, grader_fingerprint()


def _connect_cluster(cluster: str | None, say: Callable[[str], None]):
    """The connected ``ClusterRunner`` for ``--cluster``, or None.

    Connected first: no scheduler leaves nothing behind; the workers' grader is the one fingerprinted."""
    if not cluster:
        return None
    from grader.runners.cluster import ClusterRunner

    return ClusterRunner(cluster, log=say)


def _lock_and_run(run: BatchRun, selection, entries: list[Entry], warnings: list[str], present: set[str],
                  force: bool, jobs: int | None, progress: bool) -> tuple[list[str], list[str], list]:
    """Make ``OUT_DIR`` (and its state folder), take its lock, write the attempts selection, then
    :func:`_locked_run`; the lock is released whatever happens."""
    run.out_dir.mkdir(parents=True, exist_ok=True)
    run.state.mkdir(exist_ok=True)
    lock = lock_out_dir(run.state)  # held until the batch is written (or the process dies)
    record_selection(run.out_dir, selection)  # attempts.md / attempts.csv (removed when graded with no attempt rule)
    try:
        return _locked_run(run, entries, warnings, present, force, jobs, progress)
    finally:
        lock.close()  # also after Ctrl-C: a rerun in the same process (a notebook, the tests) is not "busy"


def _locked_run(run: BatchRun, entries: list[Entry], warnings: list[str], present: set[str], force: bool,
                jobs: int | None, progress: bool) -> tuple[list[str], list[str], list]:
    """:func:`run_batch` under the output folder's lock: (graded now, up to date, the gradebook's records)."""
    clean_scratch(run.state)
    sweep_stale_temporaries(run.out_dir)
    warnings += set_aside_removed(run.out_dir, present)
    for w in warnings:
        run.say(f"warning: {w}")
    todo, skipped = _plan(run, entries, force)
    check_batch_points(run)
    for sid in run.absent:  # nothing to grade: their records join the class before any grading, so that every
        write_no_submission(run, sid)  # gradebook written from here on (paced, or after a kill) has their rows
    if todo:
        run.runner = _runner(run, jobs)
        jobs = getattr(run.runner, "jobs", None) or jobs or default_jobs()
        mark_incomplete(run.out_dir, [e.student_id for e, _ in todo])  # `export` warns until the batch finishes
    elif run.cluster_runner is not None:
        run.cluster_runner.close()
    graded_now = _grade_all(run, todo, len(entries), len(skipped), jobs or default_jobs(), progress)
    records = run.write_gradebook()
    clear_incomplete(run.out_dir)
    regrade.write_regrade_report(run.out_dir, records, run.fingerprint, run.never_lower)
    return graded_now, skipped, records


def _plan(run: BatchRun, entries: list[Entry], force: bool) -> tuple[list[tuple[Entry, str]], list[str]]:
    """(students to grade with their submission hash, ids up to date); loads every record once into ``run``.

    A grader change (or, with ``--never-lower``, a changed submission) keeps the published results for
    regrade.md before they are replaced (``grader.reports.regrade.keep_published``).
    """
    todo: list[tuple[Entry, str]] = []
    skipped: list[str] = []
    for entry in entries:
        h = submission_hash(entry, run.limits)
        found = read_records(run.out_dir, [entry.student_id])
        rec = found[0] if found else None
        if rec is not None:
            run.records[entry.student_id] = rec
        if (not force and rec is not None and rec.submission_hash == h and not is_fault(rec.status)
                and all(getattr(rec, k) == v for k, v in run.key_common.items())
                and (run.out_dir / entry.student_id / "results.json").is_file()):
            skipped.append(entry.student_id)
            continue
        regrade.keep_published(run.out_dir, entry.student_id, run.fingerprint, rec,
                               submission_hash=h if run.never_lower else None)
        todo.append((entry, h))
    return todo, skipped


def _runner(run: BatchRun, jobs: int | None) -> Runner:
    """The one swap of a batch: a Dask cluster's tasks, warm workers, or a fresh worker per student."""
    if run.cluster_runner is not None:  # each staged submission is graded as a Dask task
        runner = run.cluster_runner
        runner.jobs = jobs or runner.default_jobs()
        return runner
    if warm_workers_enabled():  # one long-lived trusted worker per job slot (grader/runners/warm.py)
        return WarmPool(run.state / "warm", workers=run.workers, optimiser=run.profile == "full")
    return run_worker


def _grade_one(run: BatchRun, entry: Entry, h: str) -> StudentRecord:
    """Grade one student and publish the outcome: results.json, feedback.md, then batch.json (the commit marker)."""
    sid = entry.student_id
    # The old record goes first: a kill from here on leaves the student to regrade (and out of the gradebook).
    forget_record(run.out_dir, sid)  # the folder is made only when there is something to write
    with run._lock:
        run.records.pop(sid, None)
    try:
        outcome = grade_entry(entry, run.state / "staging" / sid, run.state / "work" / sid, limits=run.limits,
                              profile=run.profile, exercises=run.exercises, workers=run.workers,
                              runner=run.runner, fingerprint=run.fingerprint)
    except BatchAborted:
        raise  # the cluster is gone: nobody's fault in the class, record nothing
    except Exception as exc:  # a fault of the batch layer or the disk: record it, carry on
        if disk_full(exc):
            raise  # a full output disk is nobody's fault in the class: stop, keep what is whole
        outcome = zero_outcome(sid, "grader_fault", f"the batch could not grade this submission "
                               f"({type(exc).__name__}: {exc})", run.profile, run.exercises)
    if run.workers.stopping:
        raise KeyboardInterrupt
    if run.never_lower and not outcome.fault:
        outcome = regrade.apply_never_lower(run.out_dir, sid, h, run.fingerprint, outcome)
    record = record_of(outcome, {"submission_hash": h, **run.key_common}, entry.sources)
    if (student_dir := student_folder(run.out_dir, sid)) is not None:  # None for a reserved id: its row only
        student_dir.mkdir(parents=True, exist_ok=True)
        write_student(outcome, results=student_dir / "results.json", feedback=student_dir / "feedback.md",
                      record=record)
    with run._lock:
        run.records[sid] = record
        run.typed[sid] = outcome.result  # the report reads it from here, not from disk
    return record


def _grade_all(run: BatchRun, todo: list[tuple[Entry, str]], n_entries: int, n_skipped: int, jobs: int,
               progress: bool) -> list[str]:
    """Grade ``todo`` on ``jobs`` threads with a progress bar; the ids graded, in the order they finished.

    Raises:
        KeyboardInterrupt / BatchAborted / a full disk: after killing every worker and writing the gradebook.
    """
    graded_now: list[str] = []
    tally = {"rejected": 0, "timed-out": 0, "grader_fault": 0}
    with progress_bar(progress) as bar:
        task = bar.add_task("grading", total=n_entries, completed=n_skipped, tally="")
        pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="grade")
        futures: dict[Future, str] = {}
        queue = iter(todo)
        try:
            # At most 2 x jobs students in flight: each wait() then looks at a few futures, not at the whole class
            # (submitting everyone at once made every completion cost O(class size)).
            pending = {_submit(pool, futures, run, item) for item in itertools.islice(queue, 2 * jobs)}
            all_sent = _all_sent(run, len(pending) < 2 * jobs, False)
            while pending:
                done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                sent = {_submit(pool, futures, run, item) for item in itertools.islice(queue, len(done))}
                pending |= sent
                all_sent = _all_sent(run, len(sent) < len(done), all_sent)
                for fut in done:
                    record = _finished(run, fut, futures[fut], tally)
                    if record is not None:
                        graded_now.append(record.student_id)
                    run.write_gradebook(now=False)
                    bar.update(task, advance=1, tally=tally_words(tally))
        except BaseException:
            _stop(run, pool, futures)
            raise
        pool.shutdown(wait=True)
    getattr(run.runner, "close", lambda: None)()
    return graded_now


def _all_sent(run: BatchRun, queue_empty: bool, already: bool) -> bool:
    """Call ``run.on_all_sent`` the first time the queue is found empty (the class report's imports start)."""
    if queue_empty and not already and run.on_all_sent is not None:
        run.on_all_sent()
    return already or queue_empty


def _submit(pool: ThreadPoolExecutor, futures: dict[Future, str], run: BatchRun, item: tuple[Entry, str]) -> Future:
    """Start grading one student on the pool; remember whose future it is."""
    fut = pool.submit(_grade_one, run, *item)
    futures[fut] = item[0].student_id
    return fut


def _finished(run: BatchRun, fut: Future, sid: str, tally: dict[str, int]) -> StudentRecord | None:
    """The record of a finished student (counted in ``tally``), or None after a fault of the batch layer (said)."""
    try:
        record = fut.result()
    except (KeyboardInterrupt, BatchAborted):
        raise
    except Exception as exc:  # a bug in the batch layer itself: say so, keep going
        if disk_full(exc):
            raise
        run.say(f"error: grading {sid!r} failed in the batch layer: {exc!r}")
        tally["grader_fault"] += 1
        return None
    counted = "grader_fault" if record.status == "crashed" else record.status
    if counted in tally:
        tally[counted] += 1
    return record


def _stop(run: BatchRun, pool: ThreadPoolExecutor, futures: dict[Future, str]) -> None:
    """Ctrl-C, a lost cluster or a full disk: kill every worker, wait for the threads, keep a whole gradebook."""
    run.workers.kill_all()
    for fut in futures:
        fut.cancel()
    pool.shutdown(wait=True, cancel_futures=True)
    getattr(run.runner, "close", lambda: None)()
    try:
        run.write_gradebook()
    except OSError as again:
        if not disk_full(again):
            raise
        # the old gradebook stays whole (atomic writes); the rerun rebuilds it
