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
from grader.records.faults import is_fault, published_score
from grader.records.results import ExerciseResult, GradeResult, TestResult
from ppo_course.atomic_files import atomic_write_text  # (the one atomic writer)
from ppo_course.text_safety import csv_cell

# The contract's exercise modules, in the gradebook's column order (one list: grader/points.py).
CONTRACT_STEMS: tuple[str, ...] = EXERCISES

# "no-submission": a roster student with no submission folder (0 points, the reason in the message).
# "grader_fault": the grader itself failed (not the student's code): no score anywhere, the reason in the message.
# "crashed": a record written by an older grader version for what is now a grader fault (read, never written).
Status = Literal["graded", "timed-out", "grader_fault", "crashed", "empty", "rejected", "no-submission"]
STATUSES: tuple[str, ...] = ("graded", "timed-out", "grader_fault", "crashed", "empty", "rejected", "no-submission")

GRADEBOOK = "gradebook.csv"
NBGRADER_CSV = "grades.csv"  # `nbgrader export`'s default file name
RECORD = "batch.json"
STATE_DIR = ".batch"  # staging, worker scratch and cached templates
# The other files a batch, a regrade, an attempt rule or `lti post-grades` writes (or removes) at the top of
# OUT_DIR, beside the students' folders; their writers take the names from here.
REPORT_FILES = ("report.md", "report.png", "report_tests.png")
REGRADE_MD, REGRADE_CSV = "regrade.md", "regrade.csv"
ATTEMPTS_CSV, ATTEMPTS_MD = "attempts.csv", "attempts.md"
LTI_PUBLISH_REPORT = "lti_publish_report.json"
# Names a student id may not take: they are the batch's own outputs. A student folder so named became
# OUT_DIR/<id>/, where the batch then wrote or removed its own file (a resume ended in IsADirectoryError
# for the whole class); compared case-insensitively, as a TA's disk may.
RESERVED_IDS = frozenset({GRADEBOOK, NBGRADER_CSV, *REPORT_FILES, REGRADE_MD, REGRADE_CSV, ATTEMPTS_CSV, ATTEMPTS_MD,
                          LTI_PUBLISH_REPORT, STATE_DIR})


_RESERVED_FOLDED = frozenset(name.casefold() for name in RESERVED_IDS)


def is_reserved_id(student_id: str) -> bool:
    """True when `student_id` names one of the batch's own files or folders (`RESERVED_IDS`), in any case."""
    return student_id.casefold() in _RESERVED_FOLDED


def student_folder(out_dir: Path, student_id: str) -> Path | None:
    """``OUT_DIR/<student_id>``, the folder of a student's files; None for a reserved id (`is_reserved_id`).

    A reserved id is rejected at discovery; its gradebook row holds the reason, and no folder is made in the
    place of the batch's own file (``OUT_DIR/gradebook.csv/`` made the gradebook's write fail and dropped the
    student from it; ``OUT_DIR/attempts.csv/`` made every later run of the batch fail).
    """
    return None if is_reserved_id(student_id) else Path(out_dir) / student_id

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
    score: float | None = 0.0  # None for a grader fault: no score exists
    max_score: float = 0.0
    exercise_scores: dict[str, dict[str, float | None]] = Field(default_factory=dict)  # "score" None: a fault
    seconds: float = 0.0
    sources: list[str] = Field(default_factory=list)
    source_mtime: float | None = None


class FastPreviewRefused(ValueError):
    """A batch graded with ``grade-batch --profile fast`` is a preview, not a grade: it is not published."""


def fast_profile_ids(records: Iterable[StudentRecord]) -> list[str]:
    """The students whose record was graded in the fast profile (``StudentRecord.profile == "fast"``), sorted.

    The fast profile leaves out exercise 7's training run (``grader.grade.SLOW_TESTS``): its scores and maxima
    are a preview of the grade, never the grade itself.
    """
    return sorted(r.student_id for r in records if r.profile == "fast")


def refuse_fast_preview(records: Iterable[StudentRecord], batch_dir: Path | str, allow_flag: str = "") -> None:
    """Raise :class:`FastPreviewRefused` when any record was graded in the fast profile (the one check of every
    command that publishes a batch: ``export`` in every format, ``lti post-grades``).

    ``allow_flag``: the option that publishes a labelled preview instead, named in the message ("" when the
    command has none).

    Raises:
        FastPreviewRefused: naming the students and the command that gives them a full grade.
    """
    fast = fast_profile_ids(records)
    if not fast:
        return
    shown = ", ".join(fast[:10]) + (f" and {len(fast) - 10} more" if len(fast) > 10 else "")
    tail = (f", or pass {allow_flag} to write a file labelled as a preview (chapter_complete is then never "
            "marked)") if allow_flag else ""
    raise FastPreviewRefused(
        f"{batch_dir} was graded with `grade-batch --profile fast` ({len(fast)} student(s): {shown}): a fast-profile "
        "grade is a preview, not a grade (exercise 7's training run was not graded, so its maximum is not the "
        "assignment's). Grade the batch in full first: rerun `ppo-course grade-batch SUBMISSIONS_DIR --out "
        f"{batch_dir}` without --profile fast (it regrades every fast-profile student), then export again{tail}.")


def check_batch_formats(profile: str, formats: Iterable[str]) -> None:
    """Refuse ``grade-batch --profile fast --format nbgrader``: nbgrader's export CSV is a gradebook an LMS
    imports, and a fast-profile grade is a preview (:func:`refuse_fast_preview`).

    Raises:
        FastPreviewRefused: for that combination (before anything is graded or written).
    """
    if profile == "fast" and "nbgrader" in formats:
        raise FastPreviewRefused("--format nbgrader writes a gradebook an LMS imports, and a --profile fast grade "
                                 "is a preview, not a grade (exercise 7's training run is not graded): grade "
                                 "without --profile fast to write grades.csv")


def assignment_maximum(record: StudentRecord, stem: str) -> float:
    """The maximum points of ``stem`` as the assignment states it (points ≥ 0).

    A full-profile record's own maximum; for a fast-profile record (which leaves exercise 7's training run
    out of its maximum) the full profile's maximum from ``grader/points.yaml`` (``ExercisePoints.max_score``),
    so that an LMS's Points Possible is never the fast tier's.
    """
    own = float(record.exercise_scores.get(stem, {}).get("max_score", 0.0))
    if record.profile != "fast":
        return own
    from grader.points import load_points

    ex = load_points().exercises.get(stem)
    return max(own, ex.max_score) if ex is not None else own


def assignment_max_total(record: StudentRecord) -> float:
    """:func:`assignment_maximum` summed over the record's exercises (its own ``max_score`` in the full profile)."""
    if record.profile != "fast":
        return record.max_score
    return round(sum(assignment_maximum(record, stem) for stem in record.exercise_scores), 6)


#: The tag that carries a failed test's diagnosis in results.json (written by ``GradeResult.to_results_json``).
DIAGNOSIS_TAG = "diagnosis:"


def tag_diagnosis(tags: Iterable[object]) -> str | None:
    """The diagnosis id of a published test's ``tags`` (its ``diagnosis:<id>`` tag), or None.

    The one reader of that tag (``GradeResult.to_results_json`` writes it): for results published by
    any grader version, where no typed ``TestResult`` exists.
    """
    return next((str(t)[len(DIAGNOSIS_TAG):] for t in tags if str(t).startswith(DIAGNOSIS_TAG)), None)


def _published_test(t: dict, doc: str = "") -> TestResult:
    """One entry of a published results.json's ``tests`` as the typed ``TestResult`` it was written from.

    ``name`` is "<stem> · <kind> · <test>" and ``tags`` ``[stem, kind, "diagnosis:<id>"?, *tags]``
    (``GradeResult.to_results_json``); ``doc`` and ``detail`` are not published (empty here).
    """
    tags = [str(x) for x in t.get("tags") or []]
    stem, kind, test = (str(t["name"]).split(" · ", 2) + ["", "", ""])[:3]
    return TestResult(exercise=tags[0] if tags else stem, kind=kind if kind in ("hidden", "public") else "hidden",
                      test=test or str(t["name"]), score=float(t["score"]), max_score=float(t["max_score"]),
                      status="passed" if t.get("status") == "passed" else "failed", output=str(t.get("output", "")),
                      visibility=t.get("visibility") or "after_published", diagnosis=tag_diagnosis(tags),
                      tags=[x for x in tags[2:] if not x.startswith(DIAGNOSIS_TAG)], doc=doc)


class PublishedResults(BaseModel):
    """A published results.json read back as the typed model: the result, and what a regrade added to it."""

    model_config = ConfigDict(extra="forbid")

    result: GradeResult
    never_lower: list[str] = Field(default_factory=list)  # ``extra_data.never_lower``
    regrade_tests: list[TestResult] = Field(default_factory=list)  # ``extra_data.regrade_tests``


def parse_results(data: dict) -> PublishedResults:
    """A results.json dictionary (this or an older grader version, or the zeros of an ungraded student) as
    :class:`PublishedResults`; the one reader of the published format.

    Raises:
        ValueError / KeyError / TypeError (pydantic's ValidationError is a ValueError): off-schema data.
    """
    extra = data.get("extra_data") or {}
    states = extra.get("exercise_status") or {}
    exercises = {stem: ExerciseResult(score=float(v["score"]), max_score=float(v["max_score"]),
                                      status=states.get(stem, "graded"))  # the published word: its state
                 for stem, v in (extra.get("exercises") or {}).items()}
    result = GradeResult(
        submission="", status="rejected" if extra.get("status") == "rejected" else "graded",
        message="", grader_version=str(extra.get("grader_version") or ""),
        profile="fast" if extra.get("profile") == "fast" else "full", exercises=exercises,
        tests=[_published_test(t) for t in data.get("tests") or []],
        out_of_time=bool(extra.get("out_of_time")))
    return PublishedResults(result=result, never_lower=[str(n) for n in extra.get("never_lower") or []],
                            regrade_tests=[_published_test(t) for t in extra.get("regrade_tests") or []])


def read_results(path: Path) -> PublishedResults | None:
    """:func:`parse_results` of the results.json at ``path``, or None (absent, unreadable, off-schema)."""
    try:
        return parse_results(json.loads(Path(path).read_bytes()))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def load_result(out_dir: Path, student_id: str) -> GradeResult | None:
    """``OUT_DIR/<student>/results.json`` as the typed ``GradeResult``, or None (absent, unreadable, off-schema).

    The one reader of published results for the class report (``grader.reports.report``), the per-test
    analytics (``grader.reports.analytics``) and regrades (``grader.reports.regrade``), for results of any grader
    version; a batch that still holds a student's outcome passes its ``GradeResult`` instead.
    """
    published = read_results(Path(out_dir) / student_id / "results.json")
    return None if published is None else published.result


def atomic_write_json(path: Path, data: object) -> None:
    """``grader.records.results.atomic_write_text`` of ``data`` as indented JSON (keys in insertion order)."""
    atomic_write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def record_of(outcome, key: dict, sources: list[Path]) -> StudentRecord:
    """The :class:`StudentRecord` of a ``grader.records.outcome.StudentOutcome`` (its typed result's scores).

    ``key``: ``submission_hash``, ``grader_fingerprint``, ``profile``, ``exercises`` (what decides a skip);
    ``sources``: the submission's folder or zip (the newest modification time goes to nbgrader's CSV).
    """
    result = outcome.result
    mtime = None
    try:
        mtime = max(os.lstat(p).st_mtime for p in sources)
    except (OSError, ValueError):
        pass
    fault = is_fault(outcome.status)
    return StudentRecord(
        student_id=outcome.student_id,
        status=outcome.status,
        message=outcome.gradebook_message,
        score=None if fault else result.score,
        max_score=result.max_score,
        exercise_scores={stem: {"score": None if fault else float(e.score), "max_score": float(e.max_score)}
                         for stem, e in result.exercises.items()},
        seconds=round(outcome.seconds, 3),
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


def _fmt(x: float | None) -> str:
    """A score as the gradebooks write it ("" for None: a grader fault has no score)."""
    return "" if x is None else f"{round(x, 4):g}"


def gradebook_csv(records: list[StudentRecord]) -> str:
    """The contract's gradebook as CSV text: one row per student, sorted by id.

    Columns: ``student_id``, one per module stem (that exercise's score), ``total``,
    ``max_total``, ``status`` (graded / timed-out / grader_fault / empty / rejected / no-submission)
    and ``message`` (why, for anything but a clean grading). A grader fault's score cells are empty
    (:func:`published_score`), never 0. Scores are
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
        row += [_fmt(published_score(r, s)) for s in stems]
        row += [_fmt(published_score(r)), _fmt(r.max_score or max_total), r.status, r.message]
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
             [assignment, "", ts, r.student_id, "", "", "", _fmt(published_score(r)), "0.0", _fmt(published_score(r)),
              _fmt(r.max_score or max_total)]]
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

