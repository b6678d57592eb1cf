"""The gradebook in the layouts an LMS imports: Canvas, Moodle, plain CSV.

``ppo-course export BATCH_DIR --format canvas|moodle|csv --out FILE`` lands
here (:func:`export_batch`). The rows come from the batch's typed records
(``grader.records.read_records`` → ``StudentRecord``), one column per exercise
(that exercise's score), then a chapter-completion column.

Layouts (what each LMS's CSV import documents):

* **Canvas** (Gradebook → Import): the columns ``Student``, ``ID``,
  ``SIS User ID``, ``SIS Login ID``, ``Section``, then one column per
  assignment, named ``<assignment name>`` or ``<assignment name> (<canvas
  id>)``; a row whose ``Student`` cell is ``Points Possible`` (right after the
  header, as Canvas's own export writes it) gives each column's maximum.
  Canvas matches a row to a student by ``ID``, ``SIS User ID`` or
  ``SIS Login ID``; a column it does not know becomes a new assignment.
* **Moodle** (Grades → Import → CSV file): a header row, one identifier
  column that the import's "Map from" is pointed at (``Email address``,
  ``ID number`` or ``Username``: "Map to" the same user field), then one
  column per grade item, each mapped to an existing or new grade item.
* **csv**: ``student_id``, one column per exercise, ``total``, ``max_total``,
  ``chapter_complete``, ``status``.

Chapter completion: when ``--quiz-db FILE`` (the quiz's SQLite store,
``quiz_bank.storage.AttemptStore``) is given, a student is complete when
every exercise is at full marks *and* the quiz store records every stop
(1–8) as passed; ``--quiz-results CSV`` (the gradebook of ``ppo-course quiz
grade-batch``: ``student_id``, ``complete``, ``status``) does the same from
graded response files. Without either, completion is the exercises alone
(every exercise the batch graded at full marks). The column holds 1
(complete) or 0.

Identity: the batch knows only the student id (the folder name). A roster
CSV (``--roster``, columns ``student_id`` and any of ``name``, ``canvas_id``,
``sis_user_id``, ``sis_login_id``, ``section``, ``email``, ``idnumber``,
``username``) fills in the LMS's identifiers; without one, the student id is
used as ``SIS User ID``/``SIS Login ID`` (Canvas) and as ``ID number``
(Moodle).

Every text cell is neutralised against spreadsheet formula injection
(:func:`neutralise_cell`): a student id like ``=HYPERLINK(...)`` reaches the
file as text.
"""

from __future__ import annotations

import contextlib
import csv
import io
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ppo_course.text_safety import csv_cell

Format = Literal["canvas", "moodle", "csv"]
FORMATS: tuple[str, ...] = ("canvas", "moodle", "csv")
CANVAS_IDENTITY = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
CANVAS_POINTS_POSSIBLE = "Points Possible"
MOODLE_ID_COLUMNS = {"email": "Email address", "idnumber": "ID number", "username": "Username"}
COMPLETION = "chapter_complete"



def neutralise_cell(text: object) -> str:
    """A CSV cell that no spreadsheet runs as a formula (OWASP "CSV injection"), capped.

    The shared rule of every CSV this package writes (``ppo_course.text_safety.csv_cell``): text
    starting with ``=``, ``+``, ``-``, ``@``, tab or carriage return gets a leading ``'``. Numbers
    are formatted by the callers and never pass through here.
    """
    return str(csv_cell(str(text)))


class RosterEntry(BaseModel):
    """One student's identities in the LMS (all optional but ``student_id``)."""

    model_config = ConfigDict(extra="ignore")

    student_id: str
    name: str = ""
    canvas_id: str = ""
    sis_user_id: str = ""
    sis_login_id: str = ""
    section: str = ""
    email: str = ""
    idnumber: str = ""
    username: str = ""


def read_roster(path: Path) -> dict[str, RosterEntry]:
    """The roster CSV as ``{student_id: RosterEntry}``.

    Raises:
        ValueError: if the file has no ``student_id`` column or repeats an id (says which line).
    """
    with open(path, newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        if "student_id" not in (reader.fieldnames or []):
            raise ValueError(f"{path}: the roster needs a 'student_id' column (found {reader.fieldnames})")
        roster: dict[str, RosterEntry] = {}
        for line, row in enumerate(reader, 2):
            entry = RosterEntry(**{k: (v or "").strip() for k, v in row.items() if k})
            if entry.student_id in roster:
                raise ValueError(f"{path} line {line}: student_id {entry.student_id!r} appears twice")
            roster[entry.student_id] = entry
    return roster


def quiz_completion(quiz_db: Path | None, student_ids: Iterable[str]) -> dict[str, bool] | None:
    """``{student_id: all quiz stops passed}`` from the quiz's SQLite store, or None without one.

    Either the quiz server's database (``ppo-course quiz serve --db``, read
    through ``quiz_bank.server.db.QuizDB``) or ``quiz take``'s local store
    (``quiz_bank.storage.AttemptStore``); complete = stops 1..``N_STOPS`` passed.

    Raises:
        FileNotFoundError: if ``quiz_db`` is given but absent (an empty store is not created).
    """
    if quiz_db is None:
        return None
    quiz_db = Path(quiz_db)
    if not quiz_db.is_file():
        raise FileNotFoundError(f"--quiz-db {quiz_db} does not exist")
    import sqlite3

    from quiz_bank.models import N_STOPS

    every_stop = set(range(1, N_STOPS + 1))
    with contextlib.closing(sqlite3.connect(f"file:{quiz_db}?mode=ro", uri=True)) as probe:
        tables = {name for (name,) in probe.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "stop_attempts" in tables:  # the quiz server's database (`ppo-course quiz serve --db`)
        from quiz_bank.server.db import QuizDB

        server_db = QuizDB(quiz_db)
        return {sid: server_db.completed_stops(sid) >= every_stop for sid in student_ids}
    from quiz_bank.storage import AttemptStore  # `quiz take`'s local store

    with AttemptStore(quiz_db) as store:
        return {sid: store.completed_stops(sid) >= every_stop for sid in student_ids}


def quiz_completion_from_csv(path: Path | None, student_ids: Iterable[str]) -> dict[str, bool] | None:
    """``{student_id: complete}`` from ``quiz grade-batch``'s CSV (``complete`` is ``True``, ``status`` ``graded``).

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
    return {sid: done.get(sid, False) for sid in student_ids}


def _fmt(x: float) -> str:
    return f"{round(x, 4):g}"


def _stems(records) -> list[str]:
    """The exercises of the records: the contract's order (``ppo_course.syllabus.EXERCISES``), then any other stem."""
    from ppo_course.syllabus import EXERCISES

    seen = {stem for r in records for stem in r.exercise_scores}
    return [s for s in EXERCISES if s in seen] + sorted(seen - set(EXERCISES))


def _exercise_max(records, stem: str) -> float:
    return max((r.exercise_scores.get(stem, {}).get("max_score", 0.0) for r in records), default=0.0)


def exercises_complete(record) -> bool:
    """Every exercise of a graded record at full marks (scores are float sums: 1e-9 tolerance)."""
    scores = record.exercise_scores.values()
    return record.status == "graded" and bool(scores) and all(
        math.isclose(s["score"], s["max_score"], rel_tol=0.0, abs_tol=1e-9) for s in scores)


def completion(records, quiz: dict[str, bool] | None) -> dict[str, int]:
    """1/0 per student: exercises at full marks, and the quiz passed when ``quiz`` is given."""
    return {r.student_id: int(exercises_complete(r) and (quiz is None or quiz.get(r.student_id, False)))
            for r in records}


def _column(assignment: str, stem: str) -> str:
    return f"{assignment} {stem}"


def canvas_csv(records, *, assignment: str = "ppo", roster: dict[str, RosterEntry] | None = None,
               quiz: dict[str, bool] | None = None, canvas_ids: dict[str, str] | None = None) -> str:
    """The Canvas gradebook-import CSV (module docstring): identity columns, a Points Possible row, scores.

    ``canvas_ids`` maps a column (exercise stem or ``chapter_complete``) to an
    existing Canvas assignment id, written as ``"name (id)"`` so that Canvas
    updates that assignment instead of creating one.
    """
    roster, canvas_ids = roster or {}, canvas_ids or {}
    stems = _stems(records)
    done = completion(records, quiz)

    def head(key: str) -> str:
        name = _column(assignment, key)
        return f"{name} ({canvas_ids[key]})" if key in canvas_ids else name

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([*CANVAS_IDENTITY, *(head(s) for s in stems), head(COMPLETION)])
    writer.writerow([CANVAS_POINTS_POSSIBLE, "", "", "", "", *(_fmt(_exercise_max(records, s)) for s in stems), "1"])
    for r in sorted(records, key=lambda r: r.student_id):
        who = roster.get(r.student_id, RosterEntry(student_id=r.student_id))
        identity = [who.name or r.student_id, who.canvas_id, who.sis_user_id or r.student_id,
                    who.sis_login_id or r.student_id, who.section]
        writer.writerow([*(neutralise_cell(x) for x in identity),
                         *(_fmt(r.exercise_scores.get(s, {}).get("score", 0.0)) for s in stems),
                         str(done[r.student_id])])
    return buf.getvalue()


def moodle_csv(records, *, assignment: str = "ppo", roster: dict[str, RosterEntry] | None = None,
               quiz: dict[str, bool] | None = None, id_field: str = "idnumber") -> str:
    """The Moodle grade-import CSV: one identifier column (``id_field``), then one column per grade item.

    Raises:
        ValueError: on an unknown ``id_field`` (email, idnumber or username).
    """
    if id_field not in MOODLE_ID_COLUMNS:
        raise ValueError(f"id_field must be one of {sorted(MOODLE_ID_COLUMNS)}, got {id_field!r}")
    roster = roster or {}
    stems = _stems(records)
    done = completion(records, quiz)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([MOODLE_ID_COLUMNS[id_field], *(_column(assignment, s) for s in stems),
                     _column(assignment, COMPLETION)])
    for r in sorted(records, key=lambda r: r.student_id):
        who = roster.get(r.student_id, RosterEntry(student_id=r.student_id))
        ident = getattr(who, id_field) or r.student_id
        writer.writerow([neutralise_cell(ident), *(_fmt(r.exercise_scores.get(s, {}).get("score", 0.0)) for s in stems),
                         str(done[r.student_id])])
    return buf.getvalue()


def plain_csv(records, *, quiz: dict[str, bool] | None = None) -> str:
    """``student_id``, one column per exercise, ``total``, ``max_total``, ``chapter_complete``, ``status``."""
    stems = _stems(records)
    done = completion(records, quiz)
    max_total = max((r.max_score for r in records), default=0.0)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["student_id", *stems, "total", "max_total", COMPLETION, "status"])
    for r in sorted(records, key=lambda r: r.student_id):
        writer.writerow([neutralise_cell(r.student_id), *(_fmt(r.exercise_scores.get(s, {}).get("score", 0.0)) for s in stems),
                         _fmt(r.score), _fmt(r.max_score or max_total), str(done[r.student_id]), r.status])
    return buf.getvalue()


def batch_records(batch_dir: Path) -> list:
    """The ``StudentRecord`` of every student folder of a graded batch (``<id>/batch.json``), sorted by id.

    Raises:
        NotADirectoryError: if ``batch_dir`` is not a folder.
        ValueError: if it holds no student record (not a grade-batch output).
    """
    from grader.records import RECORD, read_records

    batch_dir = Path(batch_dir)
    if not batch_dir.is_dir():
        raise NotADirectoryError(f"{batch_dir} is not a batch folder")
    ids = sorted(p.name for p in batch_dir.iterdir() if (p / RECORD).is_file())
    records = read_records(batch_dir, ids)
    if not records:
        raise ValueError(f"{batch_dir} holds no student record (<student>/batch.json): run grade-batch into it first")
    return records


def export_batch(batch_dir: Path, fmt: str, out: Path, *, assignment: str = "ppo", roster: Path | None = None,
                 quiz_db: Path | None = None, quiz_results: Path | None = None, moodle_id: str = "idnumber",
                 canvas_ids: dict[str, str] | None = None) -> Path:
    """Write the export of a graded batch to ``out`` (atomically) and return its path.

    Raises:
        ValueError: on an unknown format, an empty batch or a bad roster.
        FileNotFoundError / NotADirectoryError: for missing inputs.
    """
    from grader.results import atomic_write_text

    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")
    records = batch_records(batch_dir)
    people = read_roster(roster) if roster else None
    if quiz_db is not None and quiz_results is not None:
        raise ValueError("give --quiz-db or --quiz-results, not both")
    ids = [r.student_id for r in records]
    quiz = quiz_completion(quiz_db, ids) if quiz_db is not None else quiz_completion_from_csv(quiz_results, ids)
    if fmt == "canvas":
        text = canvas_csv(records, assignment=assignment, roster=people, quiz=quiz, canvas_ids=canvas_ids)
    elif fmt == "moodle":
        text = moodle_csv(records, assignment=assignment, roster=people, quiz=quiz, id_field=moodle_id)
    else:
        text = plain_csv(records, quiz=quiz)
    return atomic_write_text(out, text)
