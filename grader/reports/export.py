"""The gradebook in the layouts an LMS imports: Canvas, Moodle, plain CSV.

``ppo-course export BATCH_DIR --format canvas|moodle|csv --out FILE`` lands
here (:func:`export_batch`). The rows come from the batch's typed records
(``grader.records.gradebook.read_records`` → ``StudentRecord``), one column per exercise
(that exercise's score), then a chapter-completion column. The Canvas and
Moodle files are written by the one LMS writer (``lms.gradebook_csv``, also used by
the quiz's gradebook), which states the platforms' import rules.

Layouts:

* **Canvas**: ``Student, ID, SIS User ID, SIS Login ID, Section``, one column
  per exercise (``<assignment> <stem>`` or ``... (<canvas id>)`` with
  ``--canvas-id``), ``<assignment> chapter_complete``; a ``Points Possible`` row.
* **Moodle**: one identifier column (``--moodle-id``: ``ID number``, ``Email
  address`` or ``Username``; "Map from" it, "Map to" the same user field),
  then one column per grade item.
* **csv**: ``student_id``, one column per exercise, ``total``, ``max_total``,
  ``chapter_complete``, ``status``.

Identity (``lms.roster``): with ``--roster``, every identifier comes from
the roster and nothing else: a student of the batch who is not on the roster,
or whose roster entry lacks the identifier the platform matches on, is left
out of the file and named on stderr (``--strict``: the command fails and
writes nothing). Without ``--roster``, the batch's student ids are written as
exactly one identifier (Canvas: ``SIS User ID``; Moodle: the ``--moodle-id``
field) and the command says so (``--moodle-id email`` needs a roster). An
identifier that starts like a spreadsheet formula is never escaped (that
would change it): the row is left out. A score above its maximum (Moodle
refuses the file) is left out the same way.

Chapter completion: when ``--quiz-db FILE`` (the quiz's SQLite store) is
given, a student is complete when every exercise is at full marks *and* the
quiz store records every stop (1–8) as passed; ``--quiz-results CSV`` (the
gradebook of ``ppo-course quiz grade-batch``) does the same from graded
response files; students with no quiz record are named on stderr. Without
either, completion is the exercises alone. When the batch graded only some
exercises (``grade-batch --exercises``), completion is not known: the column
is left out of the Canvas and Moodle files and empty in the csv, and the
command says so.
"""

from __future__ import annotations

import contextlib
import csv
import io
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from lms import gradebook_csv
from lms.roster import Roster, RosterEntry, read_roster
from ppo_course.text_safety import csv_cell

Format = Literal["canvas", "moodle", "csv"]
FORMATS: tuple[str, ...] = ("canvas", "moodle", "csv")
COMPLETION = "chapter_complete"
#: How a fast-profile preview (``export --allow-fast-preview``) is labelled: in every column title (Canvas,
#: Moodle: ``<assignment> (fast preview) <stem>``, never the graded assignment's columns) and csv status.
PREVIEW_LABEL = "fast preview"


class ExportRefused(ValueError):
    """``--strict``: some students could not be exported; nothing was written (the message names them)."""


def neutralise_cell(text: object) -> str:
    """A display-only CSV cell that no spreadsheet runs as a formula (OWASP "CSV injection"), capped.

    The shared rule of every CSV this package writes (``ppo_course.text_safety.csv_cell``): text
    starting with ``=``, ``+``, ``-``, ``@``, tab or carriage return gets a leading ``'``. Never used
    on an identifier (that would change it: see ``lms.gradebook_csv``).
    """
    return str(csv_cell(str(text)))


@dataclass
class QuizCompletion:
    """``done``: ``{student_id: all quiz stops passed}``; ``missing``: students the quiz store has no record of."""

    done: dict[str, bool]
    missing: list[str] = field(default_factory=list)


def quiz_completion(quiz_db: Path | None, student_ids: Iterable[str]) -> QuizCompletion | None:
    """Quiz completion from the quiz's SQLite store, or None without one.

    Either the quiz server's database (``ppo-course quiz serve --db``, read
    through ``quiz_bank.instructor.server.db.QuizDB``) or ``quiz take``'s local store
    (``quiz_bank.storage.AttemptStore``); complete = stops 1..``N_STOPS`` passed.
    A student with no attempt and no completion in the store is ``missing``.

    Raises:
        FileNotFoundError: if ``quiz_db`` is given but absent (an empty store is not created).
    """
    if quiz_db is None:
        return None
    quiz_db = Path(quiz_db)
    if not quiz_db.is_file():
        raise FileNotFoundError(f"--quiz-db {quiz_db} does not exist")
    import sqlite3

    from ppo_course.syllabus import N_STOPS

    ids = list(student_ids)
    every_stop = set(range(1, N_STOPS + 1))
    with contextlib.closing(sqlite3.connect(f"file:{quiz_db}?mode=ro", uri=True)) as probe:
        tables = {name for (name,) in probe.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        served = {"meta", "answers", "stop_attempts"} <= tables  # `quiz take`'s store has no meta/answers
        attempts = "stop_attempts" if served else "attempts"
        known = {sid for (sid,) in probe.execute(
            f"SELECT student_id FROM {attempts} UNION SELECT student_id FROM completions")}  # noqa: S608 - fixed names
    if served:  # the quiz server's database (`ppo-course quiz serve --db`), read as it is (no migration)
        from quiz_bank.instructor.server.db import QuizDB

        server_db = QuizDB(quiz_db, migrate=False)
        done = {sid: server_db.completed_stops(sid) >= every_stop for sid in ids}
    else:
        from quiz_bank.storage import AttemptStore  # `quiz take`'s local store

        with AttemptStore(quiz_db) as store:
            done = {sid: store.completed_stops(sid) >= every_stop for sid in ids}
    return QuizCompletion(done, [sid for sid in ids if sid not in known])


def quiz_completion_from_csv(path: Path | None, student_ids: Iterable[str]) -> QuizCompletion | None:
    """Quiz completion from ``quiz grade-batch``'s CSV (``complete`` is ``True``, ``status`` ``graded``).

    Raises:
        FileNotFoundError: if ``path`` is given but absent.
        ValueError: if the file lacks the ``student_id`` or ``complete`` column.
    """
    if path is None:
        return None
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"--quiz-results {path} does not exist")
    with open(path, newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        if not {"student_id", "complete"} <= set(reader.fieldnames or []):
            raise ValueError(f"{path}: not a `quiz grade-batch` gradebook (needs student_id and complete columns)")
        done = {row["student_id"]: row.get("complete", "").strip().lower() == "true"
                and row.get("status", "graded") == "graded" for row in reader}
    ids = list(student_ids)
    return QuizCompletion({sid: done.get(sid, False) for sid in ids}, [sid for sid in ids if sid not in done])


def _stems(records) -> list[str]:
    """The exercises of the records: the contract's order (``ppo_course.syllabus.EXERCISES``), then any other stem."""
    from ppo_course.syllabus import EXERCISES

    seen = {stem for r in records for stem in r.exercise_scores}
    return [s for s in EXERCISES if s in seen] + sorted(seen - set(EXERCISES))


def _exercise_max(records, stem: str) -> float:
    """The column's maximum: the assignment's (the full profile's, ``grader.records.gradebook.assignment_maximum``)."""
    from grader.records.gradebook import assignment_maximum

    return max((assignment_maximum(r, stem) for r in records), default=0.0)


def exercises_complete(record) -> bool:
    """Every exercise of a graded record at full marks (scores are float sums: 1e-9 tolerance), graded in the
    full profile (a fast-profile record's exercise 7 training run was never graded: never complete)."""
    scores = record.exercise_scores.values()
    return record.status == "graded" and record.profile != "fast" and bool(scores) and all(
        math.isclose(s["score"], s["max_score"], rel_tol=0.0, abs_tol=1e-9) for s in scores)


def graded_subset(records) -> list[str] | None:
    """The exercises a partial batch graded (``grade-batch --exercises``), or None when every record covers all."""
    from ppo_course.syllabus import EXERCISES

    subsets = {tuple(r.exercises) for r in records if r.exercises is not None and set(EXERCISES) - set(r.exercises)}
    return sorted({s for sub in subsets for s in sub}) if subsets else None


def completion(records, quiz: dict[str, bool] | None) -> dict[str, int | None]:
    """1/0 per student: exercises at full marks, and the quiz passed when ``quiz`` is given; None (an empty cell)
    for a grader fault, whose exercises have no score."""
    from grader.records.gradebook import is_fault

    return {r.student_id: None if is_fault(r.status) else
            int(exercises_complete(r) and (quiz is None or quiz.get(r.student_id, False))) for r in records}


@dataclass
class Export:
    """What :func:`export_batch` wrote: the file, the students left out (``(id, why)``), notes for the TA and
    warnings (an item whose maximum changed since the batch was published: its LMS item needs new points)."""

    path: Path | None
    left_out: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _lms_table(records, assignment: str, done: dict[str, int] | None, canvas_ids: dict[str, str]):
    stems = _stems(records)

    def title(key: str) -> str:
        name = f"{assignment} {key}"
        return f"{name} ({canvas_ids[key]})" if key in canvas_ids else name

    columns = [gradebook_csv.Column(s, title(s), _exercise_max(records, s)) for s in stems]
    if done is not None:
        columns.append(gradebook_csv.Column(COMPLETION, title(COMPLETION), 1.0))

    def values(r) -> dict[str, float | None]:
        from grader.records.gradebook import published_score

        vals = {s: published_score(r, s) for s in stems}  # None (an empty cell) for a grader fault
        return vals | ({COMPLETION: None if done[r.student_id] is None else float(done[r.student_id])}
                       if done is not None else {})

    return columns, values


def _identities(records, roster: Roster | None, stand_in: str) -> dict[str, RosterEntry | None]:
    """Each student's roster entry; without a roster, the student id as the one field ``stand_in``."""
    if roster is None:
        return {r.student_id: RosterEntry(student_id=r.student_id, **{stand_in: r.student_id}) for r in records}
    return {r.student_id: roster.get(r.student_id) for r in records}


def plain_csv(records, *, done: dict[str, int] | None, roster: Roster | None = None,
              preview: bool = False) -> gradebook_csv.Written:
    """``student_id``, one column per exercise, ``total``, ``max_total``, ``chapter_complete``, ``status``.

    ``max_total`` is the assignment's (``grader.records.gradebook.assignment_max_total``); with ``preview`` (a
    fast-profile batch exported with ``--allow-fast-preview``) every status reads ``<status> (fast preview)``.
    """
    from grader.records.gradebook import assignment_max_total, published_score

    stems = _stems(records)
    max_total = max((assignment_max_total(r) for r in records), default=0.0)
    out = gradebook_csv.Written("")
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["student_id", *stems, "total", "max_total", COMPLETION, "status"])
    for r in records:
        why = ("not on the roster" if roster is not None and r.student_id not in roster
               else gradebook_csv.identity_problem(r.student_id, "student_id"))
        if why:
            out.left_out.append((r.student_id, why))
            continue
        writer.writerow([r.student_id, *(gradebook_csv.fmt(published_score(r, s)) for s in stems),
                         gradebook_csv.fmt(published_score(r)), gradebook_csv.fmt(assignment_max_total(r) or max_total),
                         "" if done is None or done[r.student_id] is None else str(done[r.student_id]),
                         f"{r.status} ({PREVIEW_LABEL})" if preview else r.status])
    out.text = buf.getvalue()
    return out


def batch_records(batch_dir: Path) -> list:
    """The ``StudentRecord`` of every student folder of a graded batch (``<id>/batch.json``), sorted by id.

    Raises:
        NotADirectoryError: if ``batch_dir`` is not a folder.
        ValueError: if it holds no student record (not a grade-batch output).
    """
    from grader.records.gradebook import RECORD, read_records

    batch_dir = Path(batch_dir)
    if not batch_dir.is_dir():
        raise NotADirectoryError(f"{batch_dir} is not a batch folder")
    ids = sorted(p.name for p in batch_dir.iterdir() if (p / RECORD).is_file())
    records = read_records(batch_dir, ids)
    if not records:
        raise ValueError(f"{batch_dir} holds no student record (<student>/batch.json): run grade-batch into it first")
    return sorted(records, key=lambda r: r.student_id)


def _completion(records, quiz_db, quiz_results, notes: list[str]) -> dict[str, int] | None:
    if quiz_db is not None and quiz_results is not None:
        raise ValueError("give --quiz-db or --quiz-results, not both")
    subset = graded_subset(records)
    if subset is not None:
        notes.append(f"the batch graded only {', '.join(subset)} (grade-batch --exercises): chapter completion is "
                     f"not known, so the {COMPLETION} column is left out (csv: empty)")
        return None
    if quiz_db is None and quiz_results is None:  # completion needs the quiz: never marked from exercises alone
        notes.append(f"no quiz data (--quiz-db or --quiz-results): chapter completion needs the quiz passed too, so "
                     f"the {COMPLETION} column is left out (csv: empty)")
        return None
    ids = [r.student_id for r in records]
    quiz = quiz_completion(quiz_db, ids) if quiz_db is not None else quiz_completion_from_csv(quiz_results, ids)
    if quiz is not None and quiz.missing:
        source = quiz_db if quiz_db is not None else quiz_results
        notes.append(f"{len(quiz.missing)} student(s) have no record in the quiz store {source}, so "
                     f"{COMPLETION} is 0 for them: {', '.join(quiz.missing)} (do they use the quiz under "
                     "another student id?)")
    return completion(records, quiz.done if quiz is not None else None)


def _fault_notes(faulted: list[str]) -> list[str]:
    """The note of an export written with grader faults (``--allow-grader-faults``): whose cells are empty."""
    if not faulted:
        return []
    return [f"{len(faulted)} student(s) have no score (grader_fault: the grader itself failed), so their cells "
            f"are left empty: {', '.join(faulted)}; rerun grade-batch to grade them, then export again"]


def _maximum_notes(batch_dir: Path, records) -> list[str]:
    """A warning per exported exercise whose maximum differs from the one the batch published before an accepted
    points change (``grader.records.points_change.export_warnings``)."""
    from grader.records.points_change import export_warnings

    return export_warnings(batch_dir, {stem: _exercise_max(records, stem) for stem in _stems(records)})


def export_batch(batch_dir: Path, fmt: str, out: Path, *, assignment: str = "ppo", roster: Path | None = None,
                 quiz_db: Path | None = None, quiz_results: Path | None = None, moodle_id: str = "idnumber",
                 canvas_ids: dict[str, str] | None = None, strict: bool = False,
                 allow_fast_preview: bool = False, allow_grader_faults: bool = False) -> Export:
    """Write the export of a graded batch to ``out`` (atomically); the students left out are in the result.

    A batch graded with ``grade-batch --profile fast`` is a preview, not a grade: it is refused, unless
    ``allow_fast_preview``, which writes it labelled (:data:`PREVIEW_LABEL`) with ``chapter_complete`` never
    marked. Every maximum is the assignment's (the full profile's), never the fast tier's. A batch holding grader
    faults (status ``grader_fault``: no score) is refused, unless ``allow_grader_faults``, which writes the others
    and leaves every cell of a faulted student empty, never 0 (a note names them). An item whose maximum moved
    since the batch was published gets a warning naming both (``grader.records.points_change``).

    Raises:
        grader.records.gradebook.FastPreviewRefused: a fast-profile batch without ``allow_fast_preview`` (nothing written).
        grader.records.faults.GraderFaultRefused: grader faults without ``allow_grader_faults`` (nothing written).
        ValueError: on an unknown format, an empty batch or a bad roster (``lms.roster.RosterError``).
        ExportRefused: with ``strict``, when any student would be left out (nothing is written).
        FileNotFoundError / NotADirectoryError: for missing inputs.
    """
    from ppo_course.atomic_files import atomic_write_text
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")
    from grader.records.faults import refuse_grader_faults
    from grader.records.gradebook import fast_profile_ids, refuse_fast_preview

    records = batch_records(batch_dir)
    preview = bool(fast_profile_ids(records))
    if preview and not allow_fast_preview:
        refuse_fast_preview(records, batch_dir, "--allow-fast-preview")
    faulted = refuse_grader_faults(records, batch_dir, allowed=allow_grader_faults)
    people = read_roster(roster) if roster else None
    notes: list[str] = _fault_notes(faulted)
    if preview:
        notes.append(f"a fast-profile preview, not a grade: every column is labelled '{PREVIEW_LABEL}' and "
                     f"{COMPLETION} is never marked (grade the batch without --profile fast for the grade)")
        assignment = f"{assignment} ({PREVIEW_LABEL})"
    done = None if preview else _completion(records, quiz_db, quiz_results, notes)
    nothing = [r.student_id for r in records if r.status == "no-submission"]
    if nothing:
        notes.append(f"{len(nothing)} roster student(s) have no submission and are exported with 0 (csv status "
                     f"no-submission): {', '.join(nothing)}")
    if fmt == "csv":
        written = plain_csv(records, done=done, roster=people, preview=preview)
    else:
        stand_in = "sis_user_id" if fmt == "canvas" else moodle_id
        if people is None and stand_in == "email":
            raise ValueError("--moodle-id email needs --roster with an email column: a student id is not an "
                             "email address, and Moodle aborts the whole import on one it cannot find")
        if people is None:
            notes.append(f"no --roster: the batch's student ids are written as the {stand_in} of each student; "
                         "give --roster for the identities your LMS knows")
        columns, values = _lms_table(records, assignment, done, canvas_ids or {})
        who = _identities(records, people, stand_in)
        rows = [gradebook_csv.Row(r.student_id, who[r.student_id], values(r)) for r in records]
        written = gradebook_csv.canvas(columns, rows) if fmt == "canvas" else gradebook_csv.moodle(columns, rows, moodle_id)
    if strict and written.left_out:
        raise ExportRefused(f"--strict: {len(written.left_out)} student(s) cannot be exported, nothing written: "
                            + "; ".join(f"{sid}: {why}" for sid, why in written.left_out))
    return Export(atomic_write_text(out, written.text), written.left_out, notes, _maximum_notes(batch_dir, records))
