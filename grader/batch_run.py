"""One batch run's live state: its settings, the records kept in memory, the gradebook written from them, and
the record of a roster student with no submission.

TA side, outside the fingerprint. ``grader.batch.run_batch`` makes one :class:`BatchRun`; every
finished student's ``StudentRecord`` goes into it, and ``gradebook.csv`` (and nbgrader's ``grades.csv``)
is written from those records, never by re-reading ``OUT_DIR``, so the cost per student does not
grow with the class.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ppo_course.submission_rules import SubmissionLimits
from grader.records.gradebook import (GRADEBOOK, NBGRADER_CSV, RECORD, STATE_DIR, StudentRecord, gradebook_csv,
                                      nbgrader_csv, record_of, student_folder)
from grader.records.publish import earlier_record, write_student_folder
from grader.records.results import GradeResult
from grader.runners.runner import Runner, Workers
from grader.runners.workers import run_worker
from grader.student import no_submission_outcome
from ppo_course.atomic_files import atomic_write_text

#: While a batch runs, the gradebook is rewritten only when this many times the last write's cost has passed
#: since it (so writing it takes at most ~2% of the batch, however large the class); always at the end.
GRADEBOOK_PACE = 50.0


@dataclass
class BatchRun:
    """One run of ``grader.batch.run_batch``: its settings, and the records it keeps in memory (one per student)."""

    out_dir: Path
    limits: SubmissionLimits
    profile: str
    exercises: list[str] | None
    formats: tuple[str, ...]
    assignment: str
    never_lower: bool
    fingerprint: str
    say: Callable[[str], None]
    records: dict[str, StudentRecord] = field(default_factory=dict)
    typed: dict[str, GradeResult] = field(default_factory=dict)  # results graded now, for the class report
    workers: Workers = field(default_factory=Workers)
    runner: Runner = run_worker
    absent: list[str] = field(default_factory=list)  # roster students with no submission folder
    cluster_runner: Any = None  # a connected grader.runners.cluster.ClusterRunner with --cluster (connected before any write)
    accept_points_change: bool = False  # an exercise's maximum may differ from the published one (points_change.py)
    on_all_sent: Callable[[], None] | None = None  # called once when the last student is handed to a worker
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _written_at: float = -1e9
    _write_cost: float = 0.0

    @property
    def state(self) -> Path:
        """``OUT_DIR/.batch``: staging, worker scratch, published snapshots, the lock."""
        return self.out_dir / STATE_DIR

    @property
    def key_common(self) -> dict:
        """What, besides the submission's hash, decides whether a student's record is up to date."""
        return {"grader_fingerprint": self.fingerprint, "profile": self.profile,
                "exercises": sorted(self.exercises) if self.exercises else None}

    def write_gradebook(self, *, now: bool = True) -> list[StudentRecord]:
        """Write gradebook.csv (and nbgrader's CSV) from the records in memory; with ``now=False`` only when
        :data:`GRADEBOOK_PACE` times the last write's cost has passed since it. Returns the records written, sorted
        by id ([] when it was not the time)."""
        with self._lock:
            t0 = time.monotonic()
            if not (now or t0 - self._written_at >= GRADEBOOK_PACE * self._write_cost):
                return []
            records = [self.records[sid] for sid in sorted(self.records)]
            atomic_write_text(self.out_dir / GRADEBOOK, gradebook_csv(records))
            if "nbgrader" in self.formats:
                atomic_write_text(self.out_dir / NBGRADER_CSV, nbgrader_csv(records, self.assignment))
            self._written_at = time.monotonic()
            self._write_cost = self._written_at - t0
            return records


def write_no_submission(run: BatchRun, sid: str) -> None:
    """A roster student with no folder: a ``no-submission`` record (0 points, the reason), so no grade is lost.

    A student graded by an earlier run whose folder has since disappeared keeps that grade (a folder
    moved by mistake must not turn a published grade into 0): the TA is told, and removing
    ``OUT/<id>/`` records the student as having no submission.
    """
    folder = student_folder(run.out_dir, sid)  # None for a reserved id: its row only, no folder
    earlier = earlier_record(folder / RECORD) if folder is not None else None
    if earlier is not None and earlier.status != "no-submission":
        run.say(f"warning: {sid} is on the roster but has no submission folder now; the grade of the earlier "
                f"graded submission is kept (remove {run.out_dir / sid} to record no submission)")
        run.records[sid] = earlier
        return
    outcome = no_submission_outcome(sid, run.profile, run.exercises)
    record = record_of(outcome, {"submission_hash": "", **run.key_common}, [])
    write_student_folder(run.out_dir, sid, outcome, record)
    run.records[sid] = record
    run.typed[sid] = outcome.result
