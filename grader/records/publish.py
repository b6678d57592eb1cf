"""What a batch publishes for one student: ``feedback.md`` and ``results.json`` from the one outcome, and the
``no-submission`` record of a roster student with no folder (Book-independent; issue 21's "no grade is lost").

Called by ``grader.batch`` as each student finishes; every file is written atomically
(``ppo_course.atomic_files``), the record (``batch.json``) last, as the commit marker.
"""

from __future__ import annotations

from pathlib import Path

from grader.records.batch_run import BatchRun
from grader.records.gradebook import RECORD, StudentRecord, atomic_write_json, record_of
from grader.records.outcome import StudentOutcome
from grader.student import no_submission_outcome
from ppo_course.atomic_files import atomic_write_text


def write_no_submission(run: BatchRun, sid: str) -> None:
    """A roster student with no folder: a ``no-submission`` record (0 points, the reason), so no grade is lost.

    A student graded by an earlier run whose folder has since disappeared keeps that grade (a folder
    moved by mistake must not turn a published grade into 0): the TA is told, and removing
    ``OUT/<id>/`` records the student as having no submission.
    """
    earlier = earlier_record(run.out_dir / sid / RECORD)
    if earlier is not None and earlier.status != "no-submission":
        run.say(f"warning: {sid} is on the roster but has no submission folder now; the grade of the earlier "
                f"graded submission is kept (remove {run.out_dir / sid} to record no submission)")
        run.records[sid] = earlier
        return
    outcome = no_submission_outcome(sid, run.profile, run.exercises)
    (run.out_dir / sid).mkdir(parents=True, exist_ok=True)
    publish(run.out_dir / sid, outcome)
    record = record_of(outcome, {"submission_hash": "", **run.key_common}, [])
    atomic_write_text(run.out_dir / sid / RECORD, record.model_dump_json(indent=2) + "\n")
    run.records[sid] = record
    run.typed[sid] = outcome.result


def earlier_record(path: Path) -> StudentRecord | None:
    """The record an earlier run wrote at ``path`` (``OUT/<id>/batch.json``), or None when absent or unreadable."""
    try:
        return StudentRecord.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def publish(student_dir: Path, outcome: StudentOutcome) -> None:
    """Write a student's feedback.md and results.json from the one outcome (atomically each)."""
    atomic_write_text(student_dir / "feedback.md", outcome.feedback_md())
    atomic_write_json(student_dir / "results.json", outcome.results_json())
