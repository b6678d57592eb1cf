"""What a grading leaves in a student's folder: ``feedback.md``, ``results.json`` and ``batch.json``, written in one place.

:func:`write_student` is the one writer of a student's files, for every path that publishes a student
(the batch, a roster student with no submission, ``ppo-course grade``). Every file is written atomically
(``ppo_course.atomic_files``), the record (``batch.json``) last, as the commit marker.
"""

from __future__ import annotations

from pathlib import Path

from grader.records.gradebook import RECORD, StudentRecord, atomic_write_json, student_folder
from grader.records.outcome import StudentOutcome
from ppo_course.atomic_files import atomic_write_text


def write_student(outcome: StudentOutcome, *, results: Path, feedback: Path | None = None,
                  record: StudentRecord | None = None) -> None:
    """Write one student's files from the one outcome: feedback.md, results.json, then batch.json (each atomically).

    Args:
        outcome: the student's typed outcome (``grader.records.outcome.StudentOutcome``).
        results: where results.json goes (``OUT/<id>/results.json`` in a batch, ``--out`` for ``grade``).
        feedback: where feedback.md goes (None: not written).
        record: the gradebook record, written last as ``batch.json`` beside ``results`` (None: not written).

    Raises:
        OSError: a file cannot be written (the ones written before it stay whole; batch.json is then absent).
    """
    if feedback is not None:
        atomic_write_text(feedback, outcome.feedback_md())
    atomic_write_json(results, outcome.results_json())
    if record is not None:
        write_record(Path(results).parent / RECORD, record)


def write_student_folder(out_dir: Path, student_id: str, outcome: StudentOutcome, record: StudentRecord) -> None:
    """``OUT_DIR/<id>/``: feedback.md, results.json, then batch.json (``write_student``); nothing for a reserved id
    (``grader.records.gradebook.student_folder``: its gradebook row holds the reason, in place of no batch file).

    Raises:
        OSError: as ``write_student``.
    """
    folder = student_folder(out_dir, student_id)
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
        write_student(outcome, results=folder / "results.json", feedback=folder / "feedback.md", record=record)


def forget_record(out_dir: Path, student_id: str) -> None:
    """Remove ``OUT_DIR/<id>/batch.json`` (the commit marker) before a student is graded again (none for a reserved id)."""
    folder = student_folder(out_dir, student_id)
    if folder is not None:
        (folder / RECORD).unlink(missing_ok=True)


def write_record(path: Path, record: StudentRecord) -> None:
    """Write ``batch.json`` (a ``StudentRecord``, indented JSON) atomically: the commit marker of a student's folder."""
    atomic_write_text(path, record.model_dump_json(indent=2) + "\n")


def earlier_record(path: Path) -> StudentRecord | None:
    """The record an earlier run wrote at ``path`` (``OUT/<id>/batch.json``), or None when absent or unreadable."""
    try:
        return StudentRecord.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
