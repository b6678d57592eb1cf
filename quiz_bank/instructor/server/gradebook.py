"""The quiz's gradebook from the server's database: the course CSV and the Canvas and Moodle import layouts.

One row per student (roster order, then anyone else with an attempt), one
column per stop and one for chapter completion:

- ``csv`` (the course's gradebook): ``student_id, stop1 … stop8, stops_passed, complete``;
  a stop's value is the student's best attempt in percent (100 only when passed),
  ``complete`` is 1 when all eight are passed.
- ``canvas``: Canvas's gradebook import layout: the columns ``Student, ID,
  SIS User ID, SIS Login ID, Section`` (Canvas matches a row by ID, SIS User
  ID or SIS Login ID), then one column per assignment, ``PPO quiz stop N`` and
  ``PPO quiz complete``, and a ``Points Possible`` row under the header (100 per
  stop, 1 for completion). Written by the course's one Canvas writer
  (``grader.reports.lms``, shared with ``ppo-course export``): identities come from the
  roster only, and a student it gives no Canvas identifier is left out.
- ``moodle``: Moodle's "Import grades: CSV file": an identifier column
  (``ID number``, mapped to the user field *ID number* in the import's
  "Map from / Map to" step; ``Email address`` beside it maps to *Email*), then
  one grade column per stop and ``PPO quiz complete``.

Values are written with the csv module (quoted where needed), and cells that a
spreadsheet would run as a formula (starting with = + - @) get a leading quote.
"""

from __future__ import annotations

import csv
import io

from ppo_course.syllabus import N_STOPS

FORMATS = ("csv", "canvas", "moodle")


def _cell(value) -> str:
    text = "" if value is None else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text


def student_scores(bank, db) -> list[dict]:
    """Per student: roster fields, best percent per stop, passed stops, completion."""
    rows = []
    for person in db.roster():
        sid = person["student_id"]
        attempts = db.attempts(sid)
        best = {s: 0 for s in range(1, N_STOPS + 1)}
        passed = set()
        for a in attempts:
            if a.n_correct is not None and a.question_order:
                # Out of the questions that attempt asked (under mastery, one per claim, not the whole bank);
                # 100 only when passed (right answers on questions already seen do not pass a stop).
                percent = round(100 * a.n_correct / len(a.question_order))
                best[a.stop] = max(best[a.stop], percent if a.passed else min(percent, 99))
            if a.passed:
                passed.add(a.stop)
        rows.append(person | {"best": best, "passed": passed, "complete": len(passed) == N_STOPS})
    return rows


def _canvas(rows: list[dict]):
    """Canvas's import file by ``grader.reports.lms.canvas``: identities only from the roster, never the student id."""
    from grader.reports import lms
    from grader.intake.roster import RosterEntry

    columns = [lms.Column(f"stop{s}", f"PPO quiz stop {s}", 100.0) for s in range(1, N_STOPS + 1)]
    columns.append(lms.Column("complete", "PPO quiz complete", 1.0))
    return lms.canvas(columns, [
        lms.Row(r["student_id"], RosterEntry(**{k: v for k, v in r.items() if isinstance(v, str)}),
                {**{f"stop{s}": float(r["best"][s]) for s in range(1, N_STOPS + 1)}, "complete": float(r["complete"])})
        for r in rows])


def render(bank, db, fmt: str, left_out: list | None = None) -> str:
    """The gradebook in ``fmt`` (one of FORMATS) as CSV text.

    ``left_out``, when given, receives ``(student_id, why)`` for each student the Canvas
    file could not include (no Canvas identifier on the roster: ``grader.reports.lms``).

    Raises:
        ValueError: for an unknown format.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown gradebook format {fmt!r}; choose one of {', '.join(FORMATS)}")
    rows = student_scores(bank, db)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    stops = range(1, N_STOPS + 1)
    if fmt == "csv":
        writer.writerow(["student_id", *[f"stop{s}" for s in stops], "stops_passed", "complete"])
        for r in rows:
            writer.writerow([_cell(r["student_id"]), *[r["best"][s] for s in stops], len(r["passed"]), int(r["complete"])])
    elif fmt == "canvas":  # the course's one Canvas writer (grader.reports.lms), shared with `ppo-course export`
        written = _canvas(rows)
        if left_out is not None:
            left_out.extend(written.left_out)
        return written.text
    else:
        writer.writerow(["ID number", "Email address", *[f"PPO quiz stop {s}" for s in stops], "PPO quiz complete"])
        for r in rows:
            writer.writerow([_cell(r["student_id"]), _cell(r["email"]), *[r["best"][s] for s in stops], int(r["complete"])])
    return out.getvalue()
