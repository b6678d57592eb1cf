"""The batch's records: one :class:`StudentRecord` per student, and the gradebooks rebuilt from them.

TA side, outside the sandbox. ``OUT_DIR/<student>/batch.json`` is the commit
marker of one student (written last, atomically); ``gradebook.csv`` and
nbgrader's ``grades.csv`` are rebuilt from these records alone, so a batch
killed at any moment and rerun ends with the gradebook of an uninterrupted run.
Read by the batch (``grader.batch``), the report, regrades, analytics and the
LMS exports; imports nothing of theirs.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from grader.points import EXERCISES
from grader.results import atomic_write_text  # the shared atomic writer (tmp + fsync + os.replace)
from ppo_course.text_safety import csv_cell

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


#: The tag that carries a failed test's diagnosis in results.json (written by ``GradeResult.to_results_json``).
DIAGNOSIS_TAG = "diagnosis:"


def tag_diagnosis(tags: Iterable[object]) -> str | None:
    """The diagnosis id of a published test's ``tags`` (its ``diagnosis:<id>`` tag), or None.

    The one reader of that tag (``GradeResult.to_results_json`` writes it): for results published by
    any grader version, where no typed ``TestResult`` exists.
    """
    return next((str(t)[len(DIAGNOSIS_TAG):] for t in tags if str(t).startswith(DIAGNOSIS_TAG)), None)


class PublishedTest(BaseModel):
    """One entry of a published results.json's ``tests``, read back with the names of ``grader.results.TestResult``.

    ``exercise`` (module stem), ``kind`` (hidden/public), ``test`` (function name) and ``diagnosis``
    are the fields ``GradeResult.to_results_json`` folded into ``name`` and ``tags``; the report,
    analytics and regrades read them from here (the one reader of that format), or from the typed
    ``TestResult`` itself when the batch still holds it.
    """

    __test__ = False
    model_config = ConfigDict(extra="ignore")

    name: str
    score: float
    max_score: float
    status: str
    tags: list[str] = Field(default_factory=list)

    @property
    def exercise(self) -> str:
        """The module stem (``tags[0]``)."""
        return self.tags[0] if self.tags else ""

    @property
    def kind(self) -> str:
        """``hidden`` or ``public`` (``tags[1]``)."""
        return self.tags[1] if len(self.tags) > 1 else ""

    @property
    def test(self) -> str:
        """The test function's name (the last part of "<stem> · <kind> · <test>")."""
        return self.name.rsplit(" · ", 1)[-1]

    @property
    def diagnosis(self) -> str | None:
        """The ``diagnosis:<id>`` tag's id, or None (:func:`tag_diagnosis`)."""
        return tag_diagnosis(self.tags)


class PublishedResults(BaseModel):
    """A student's published ``results.json`` as the report, analytics and regrades read it (typed)."""

    model_config = ConfigDict(extra="ignore")

    score: float = 0.0
    tests: list[PublishedTest] = Field(default_factory=list)


def load_result(out_dir: Path, student_id: str) -> PublishedResults | None:
    """``OUT_DIR/<student>/results.json`` validated into :class:`PublishedResults`, or None (absent, unreadable, off-schema).

    The one reader of published results for the class report (``grader.report``), the per-test
    analytics (``grader.analytics``); a batch that still holds a student's typed
    ``GradeResult`` passes that instead (same attribute names: ``tests[].exercise/kind/test/status/
    score/max_score/diagnosis``).
    """
    try:
        return PublishedResults.model_validate_json((Path(out_dir) / student_id / "results.json").read_bytes())
    except (OSError, ValidationError):
        return None


def atomic_write_json(path: Path, data: object) -> None:
    """``grader.results.atomic_write_text`` of ``data`` as indented JSON (keys in insertion order)."""
    atomic_write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


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


#: ``OUT/.batch/incomplete.json``: the ids still to grade while a batch runs; removed when it finishes.
INCOMPLETE = "incomplete.json"


def mark_incomplete(out_dir: Path, student_ids: Iterable[str]) -> None:
    """Record (atomically) that a batch is grading ``student_ids`` into ``out_dir`` and has not finished."""
    atomic_write_json(out_dir / STATE_DIR / INCOMPLETE, sorted(student_ids))


def clear_incomplete(out_dir: Path) -> None:
    """The batch finished: remove the marker of :func:`mark_incomplete`."""
    (out_dir / STATE_DIR / INCOMPLETE).unlink(missing_ok=True)


def incomplete_ids(out_dir: Path) -> list[str] | None:
    """The students a batch in ``out_dir`` started but did not finish grading (it was interrupted or killed),
    minus those whose record is written; None when the last batch finished (or none ran)."""
    path = out_dir / STATE_DIR / INCOMPLETE
    try:
        pending = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return [sid for sid in pending if isinstance(sid, str) and not (out_dir / sid / RECORD).is_file()]

