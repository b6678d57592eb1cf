"""The one writer of the LMS import files (Canvas, Moodle) and the one rule for whose row is whose.

Both gradebooks that a TA imports go through here: the exercises'
(``ppo-course export``, ``grader.reports.export``) and the quiz's
(``ppo-course quiz export`` / ``/instructor/gradebook.canvas``,
``quiz_bank.instructor.server.gradebook``). The callers give columns (title and maximum)
and, per student, a roster entry (``lms.roster.RosterEntry``) and values.

Rules the writer enforces, from the platforms' own import code and guides:

* **Canvas** (Instructor Guide, "How do I import grades in the Gradebook?";
  the importer, canvas-lms ``app/models/gradebook_importer.rb``): header
  ``Student, ID, SIS User ID, SIS Login ID, Section`` then one column per
  assignment (``Name`` or ``Name (id)``); a ``Points Possible`` row may follow
  the header; a row is matched to a student by ``ID``, ``SIS User ID`` or
  ``SIS Login ID``, so a row with none of them cannot be imported.
* **Moodle** (grade/import/csv/classes/load_data.php,
  ``prepare_import_grade_data``): the TA maps one column to a user field
  (id number, email or username); a row whose user is not found aborts the
  *whole* import ("User not found, abort whole import"), a non-numeric grade
  aborts it ("badgrade"), and a grade above the item's maximum is refused
  (grade/tests/behat/grade_import.feature, "Max grade of grade item is
  respected").

So: a student whose identifier for the chosen platform is missing, or who is
not on the roster, or whose identifier starts like a formula (``=``, ``+``,
``-``, ``@``: a spreadsheet would run it, and a leading quote would make it
another identifier the LMS does not know), or who has a value above its
column's maximum (or not a finite number), is **left out** and named in
:attr:`Written.left_out` with the reason; nothing is ever filled in from the
student id. Display-only cells (Canvas's ``Student`` name and ``Section``)
are neutralised with the project's CSV rule (``ppo_course.text_safety.csv_cell``).
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field

from lms.roster import RosterEntry
from ppo_course.text_safety import FORMULA_START, csv_cell

CANVAS_IDENTITY = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
CANVAS_POINTS_POSSIBLE = "Points Possible"
CANVAS_MATCH_FIELDS = ("canvas_id", "sis_user_id", "sis_login_id")
MOODLE_ID_COLUMNS = {"email": "Email address", "idnumber": "ID number", "username": "Username"}


@dataclass(frozen=True)
class Column:
    """One grade column: its title in the LMS and its maximum (``Points Possible`` / the item's max grade)."""

    key: str
    title: str
    maximum: float


@dataclass
class Row:
    """One student: the roster entry (``None`` when not on the roster) and ``{column key: value}`` (a value None:
    no grade, an empty cell, which the LMS leaves ungraded: a grader fault's cells, never 0)."""

    student_id: str
    who: RosterEntry | None
    values: dict[str, float | None]


@dataclass
class Written:
    """The CSV text and the students left out, as ``(student_id, why)``."""

    text: str
    left_out: list[tuple[str, str]] = field(default_factory=list)


def fmt(x: float | None) -> str:
    """A grade as the LMS reads it: at most 4 decimals, no trailing zeros (``7.5``, ``1``); "" for None (no grade)."""
    return "" if x is None else f"{round(x, 4):g}"


def formula_like(text: str) -> bool:
    """True when a spreadsheet would run ``text`` as a formula (it starts with one of ``FORMULA_START``)."""
    return text[:1] in FORMULA_START


def _values_problem(row: Row, columns: list[Column]) -> str | None:
    for c in columns:
        v = row.values.get(c.key, 0.0)
        if v is None:  # no grade: an empty cell
            continue
        if not isinstance(v, (int, float)) or not math.isfinite(v):
            return f"{c.title}: {v!r} is not a finite number (the LMS refuses the whole file)"
        if v > c.maximum + 1e-9:
            return f"{c.title}: {fmt(v)} is above the maximum {fmt(c.maximum)} (the LMS refuses it)"
    return None


def identity_problem(ident: str, label: str) -> str | None:
    """Why ``ident`` cannot identify a student in the LMS (empty, or formula-like), or None."""
    if not ident:
        return f"the roster gives no {label}"
    if formula_like(ident):
        return (f"the {label} {ident!r} starts like a spreadsheet formula; escaping it would change the "
                "identifier, so the row is left out (fix it in the roster)")
    return None


def _check(row: Row, columns: list[Column], ident_of) -> str | None:
    if row.who is None:
        return "not on the roster"
    why = ident_of(row.who)
    return why or _values_problem(row, columns)


def canvas(columns: list[Column], rows: list[Row]) -> Written:
    """Canvas's gradebook-import CSV (module docstring); rows that Canvas could not match are left out."""
    def ident_of(who: RosterEntry) -> str | None:
        given = [getattr(who, f) for f in CANVAS_MATCH_FIELDS if getattr(who, f)]
        if not given:
            return "the roster gives none of canvas_id, sis_user_id, sis_login_id (Canvas matches a row by one)"
        return next(filter(None, (identity_problem(v, "Canvas identifier") for v in given)), None)

    out = Written("")
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([*CANVAS_IDENTITY, *(c.title for c in columns)])
    writer.writerow([CANVAS_POINTS_POSSIBLE, "", "", "", "", *(fmt(c.maximum) for c in columns)])
    for row in rows:
        why = _check(row, columns, ident_of)
        if why:
            out.left_out.append((row.student_id, why))
            continue
        who = row.who
        writer.writerow([csv_cell(who.name), who.canvas_id, who.sis_user_id, who.sis_login_id, csv_cell(who.section),
                         *(fmt(row.values.get(c.key, 0.0)) for c in columns)])
    out.text = buf.getvalue()
    return out


def moodle(columns: list[Column], rows: list[Row], id_field: str) -> Written:
    """Moodle's grade-import CSV: the ``id_field`` column (mapped to that user field), then one column per item.

    Raises:
        ValueError: on an unknown ``id_field`` (email, idnumber or username).
    """
    if id_field not in MOODLE_ID_COLUMNS:
        raise ValueError(f"id_field must be one of {sorted(MOODLE_ID_COLUMNS)}, got {id_field!r}")
    label = MOODLE_ID_COLUMNS[id_field]
    out = Written("")
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([label, *(c.title for c in columns)])
    for row in rows:
        why = _check(row, columns, lambda who: identity_problem(getattr(who, id_field), f"{label} ({id_field})"))
        if why:
            out.left_out.append((row.student_id, why))
            continue
        writer.writerow([getattr(row.who, id_field), *(fmt(row.values.get(c.key, 0.0)) for c in columns)])
    out.text = buf.getvalue()
    return out
