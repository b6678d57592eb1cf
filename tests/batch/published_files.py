"""Readers and checks of everything a batch publishes, independent of the writers (tests only).

:func:`check_class` asserts that every file a TA publishes agrees, for the right student: the
gradebook, nbgrader's grades.csv, each student's batch.json, results.json and feedback.md, the
class report, regrade.md, attempts.csv, and the Canvas, Moodle and csv exports (each read back by
its platform's documented import rules: Canvas's header ``Student, ID, SIS User ID, SIS Login ID,
Section`` and its ``Points Possible`` row, canvas-lms ``app/models/gradebook_importer.rb``; Moodle's
one identifier column mapped to a user field, grade/import/csv/classes/load_data.php, no grade above
its item's maximum). The readers parse the files as a platform or a TA would; nothing here imports
the code that wrote them.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

CANVAS_HEADER = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
NBGRADER_HEADER = ["assignment", "duedate", "timestamp", "student_id", "last_name", "first_name", "email",
                   "raw_score", "late_submission_penalty", "score", "max_score"]
NOT_EXERCISES = ("student_id", "total", "max_total", "status", "message", "chapter_complete")


def close(a: float, b: float, tol: float = 1e-4) -> bool:
    """Equal within the 4-decimal rounding every CSV format uses."""
    return abs(float(a) - float(b)) <= tol


def read_csv(path: Path) -> list[list[str]]:
    """Every row of a CSV file (UTF-8, a BOM allowed), as a platform's CSV reader sees them."""
    return list(csv.reader(io.StringIO(path.read_text(encoding="utf-8-sig"), newline="")))


def keyed(rows: list[list[str]], key: str) -> dict[str, dict[str, str]]:
    """``{row[key]: row}`` of a header-first table; asserts the key is unique (one row per student)."""
    header, body = rows[0], rows[1:]
    out: dict[str, dict[str, str]] = {}
    for row in body:
        assert len(row) == len(header), (header, row)
        d = dict(zip(header, row))
        assert d[key] not in out, f"two rows for {d[key]!r}"
        out[d[key]] = d
    return out


@dataclass
class Identity:
    """A roster student's LMS identities (as the roster file gives them)."""

    student_id: str
    name: str
    canvas_id: str
    sis_user_id: str
    sis_login_id: str
    section: str
    idnumber: str
    email: str
    username: str


def identity(sid: str, n: int) -> Identity:
    """The identities the tests give student ``sid`` (``n``: a number unique to the student)."""
    return Identity(sid, f"Name {sid.title()}", str(7000 + n), f"SIS{n:04d}", f"{sid}@login", f"S{n % 2}",
                    f"ID{n:05d}", f"{sid}@uni.example", f"user_{sid}")


def roster_csv(people: list[Identity], attempts: dict[str, list[str]] | None) -> str:
    """The roster file of ``people`` (with an ``attempts`` column when ``attempts`` is given)."""
    cols = ["student_id", "name", "canvas_id", "sis_user_id", "sis_login_id", "section", "idnumber", "email",
            "username"] + (["attempts"] if attempts is not None else [])
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for p in people:
        row = [getattr(p, c) for c in cols if c != "attempts"]
        if attempts is not None:
            row.append(";".join(attempts.get(p.student_id, [])))
        w.writerow(row)
    return buf.getvalue()


@dataclass
class Expected:
    """What the test's model of the class says the files must show."""

    students: set[str]
    people: dict[str, Identity]
    quiz_done: dict[str, bool]
    fingerprint: str
    #: student -> (score per exercise, max per exercise) computed by hand from the student's latest submission
    #: under the current grader; None for a student with nothing to grade (no-submission).
    by_hand: dict[str, tuple[dict[str, float], dict[str, float]] | None]
    #: students whose earlier grade is kept though their folder is gone (roster mode): not regraded
    kept_earlier: set[str] = field(default_factory=set)
    graded_from: dict[str, str] = field(default_factory=dict)  # student -> folder graded (attempts)
    status: dict[str, str] = field(default_factory=dict)  # student -> the batch's status by hand


def no_half_written(out: Path) -> None:
    """No temporary file of the atomic writer left, every JSON parses, every student folder is whole."""
    for pattern in (".*.tmp", "*/.*.tmp", ".*.tmp.png"):
        assert not list(out.glob(pattern)), list(out.glob(pattern))
    for d in out.iterdir():
        if d.is_dir() and not d.name.startswith("."):
            if (d / "batch.json").is_file():
                json.loads((d / "batch.json").read_text(encoding="utf-8"))
                json.loads((d / "results.json").read_text(encoding="utf-8"))
                assert (d / "feedback.md").read_text(encoding="utf-8").strip(), d.name


#: The status of a student whose grading the grader itself spoiled: no score in any file (CONTRACT.md).
FAULT = "grader_fault"


def check_fault(sid: str, row: dict[str, str], stems: list[str], record: dict, results: dict, feedback: str) -> dict:
    """A faulted student: no number where a score goes, in any file (the gradebook's cells empty, never 0)."""
    extra = results["extra_data"]
    assert record["status"] == extra["status"] == extra["batch_status"] == FAULT, (sid, record["status"], extra)
    assert row["total"] == "" and all(row[s] == "" for s in stems), (sid, row)
    assert record["score"] is None and all(v["score"] is None for v in record["exercise_scores"].values()), sid
    assert "score" not in results and results["tests"] == [], (sid, results)
    assert all(v["score"] is None for v in extra["exercises"].values()), (sid, extra["exercises"])
    assert "Total" not in feedback and "Grading failed" in feedback and re.search(r"\d+ / \d+", feedback) is None, \
        (sid, feedback)
    return record | {"_results": results}


def check_student(out: Path, sid: str, row: dict[str, str], stems: list[str]) -> dict:
    """batch.json, results.json and feedback.md of one student agree with its gradebook row; returns results.json."""
    record = json.loads((out / sid / "batch.json").read_text(encoding="utf-8"))
    results = json.loads((out / sid / "results.json").read_text(encoding="utf-8"))
    feedback = (out / sid / "feedback.md").read_text(encoding="utf-8")
    extra = results["extra_data"]
    assert record["student_id"] == sid
    if row["status"] == FAULT or record["status"] == FAULT:
        return check_fault(sid, row, stems, record, results, feedback)
    assert record["student_id"] == sid
    assert record["status"] == row["status"], (sid, record["status"], row["status"])
    assert extra["status"] == extra["batch_status"] == row["status"], (sid, extra.get("status"), row["status"])
    total, max_total = float(row["total"]), float(row["max_total"])
    assert close(record["score"], total) and close(results["score"], total), (sid, record["score"], results["score"], total)
    assert close(record["max_score"], max_total) and close(extra["max_score"], max_total), sid
    assert close(sum(t["score"] for t in results["tests"]), results["score"]), sid
    assert total <= max_total + 1e-9, sid
    for stem in stems:
        score = float(row[stem])
        assert close(record["exercise_scores"][stem]["score"], score), (sid, stem)
        assert close(extra["exercises"][stem]["score"], score), (sid, stem, extra["exercises"][stem], score)
        assert close(extra["exercises"][stem]["max_score"], record["exercise_scores"][stem]["max_score"]), (sid, stem)
        assert close(sum(t["score"] for t in results["tests"] if t["tags"][0] == stem), score), (sid, stem)
        assert score <= extra["exercises"][stem]["max_score"] + 1e-9, (sid, stem)
    for t in results["tests"]:
        assert -1e-9 <= t["score"] <= t["max_score"] + 1e-9, (sid, t["name"])
    if row["status"] == "graded":
        assert f"**Total: {total:g} / {max_total:g} points**" in feedback, (sid, feedback[:400])
        for stem in stems:
            ex = extra["exercises"][stem]
            assert f"| `{stem}` | {float(row[stem]):g} / {ex['max_score']:g} |" in feedback, (sid, stem)
        assert "**Status:" not in feedback, sid
    else:
        assert f"**Status: {row['status']}.**" in feedback, (sid, feedback[:300])
        assert results["output"].startswith(f"Status: {row['status']}."), (sid, results["output"][:200])
        assert "**Total:" not in feedback or f"**Total: {total:g} / {max_total:g} points**" in feedback, sid
    nl = extra.get("never_lower") or []
    assert ("never lower: " in row["message"]) == bool(nl), (sid, row["message"], nl)
    for note in nl:
        assert f"**Regrade:** never lower: " in feedback and note in feedback, (sid, note)
    return record | {"_results": results}


def check_exports(out: Path, exports: dict[str, Path], book: dict[str, dict], stems: list[str], exp: Expected,
                  complete: dict[str, bool]) -> None:
    """The csv, Canvas and Moodle exports: the gradebook's students, scores and statuses, each row the right person's."""
    plain = keyed(read_csv(exports["csv"]), "student_id")
    assert set(plain) == set(book), (sorted(plain), sorted(book))
    faulted = {sid for sid, row in book.items() if row["status"] == FAULT}
    for sid in faulted:  # no score for a grader fault in any export: every grade cell empty, never 0
        row = plain[sid]
        assert row["status"] == FAULT and row["total"] == row["chapter_complete"] == "", (sid, row)
        assert all(row[s] == "" for s in stems), (sid, row)
    for sid, row in plain.items():
        if sid in faulted:
            continue
        assert close(row["total"], book[sid]["total"]) and close(row["max_total"], book[sid]["max_total"]), sid
        assert row["status"] == book[sid]["status"], sid
        assert all(close(row[s], book[sid][s]) for s in stems), sid
        assert row["chapter_complete"] == str(int(complete[sid])), (sid, row["chapter_complete"], complete[sid])

    rows = read_csv(exports["canvas"])
    assert rows[0][:5] == CANVAS_HEADER, rows[0]
    titles = rows[0][5:]
    assert titles == [f"ppo {s}" for s in stems] + ["ppo chapter_complete"], titles
    assert rows[1][0] == "Points Possible" and rows[1][1:5] == ["", "", "", ""], rows[1]
    possible = dict(zip(titles, map(float, rows[1][5:])))
    by_sis = {p.sis_user_id: p for p in exp.people.values()}
    seen = set()
    for row in rows[2:]:
        who = by_sis[row[2]]  # Canvas matches the row by its SIS User ID: it must be this student
        assert row[:5] == [who.name, who.canvas_id, who.sis_user_id, who.sis_login_id, who.section], row
        sid = who.student_id
        assert sid not in seen
        seen.add(sid)
        if sid in faulted:
            assert row[5:] == [""] * len(titles), (sid, row)  # Canvas leaves an empty cell ungraded
            continue
        values = dict(zip(titles, map(float, row[5:])))
        for s in stems:
            assert close(values[f"ppo {s}"], book[sid][s]), (sid, s)
            assert values[f"ppo {s}"] <= possible[f"ppo {s}"] + 1e-9, (sid, s)
        assert values["ppo chapter_complete"] == int(complete[sid]), sid
    assert seen == set(book), (sorted(seen), sorted(book))

    rows = read_csv(exports["moodle"])
    assert rows[0] == ["ID number", *titles], rows[0]
    by_idnumber = {p.idnumber: p for p in exp.people.values()}
    maxima = {f"ppo {s}": max(float(json.loads((out / sid / "batch.json").read_text())["exercise_scores"][s]["max_score"])
                              for sid in book if sid not in faulted) for s in stems} if set(book) - faulted else {}
    seen = set()
    for row in rows[1:]:
        assert row[0] in by_idnumber, row  # load_data.php: an unknown user aborts the whole import
        sid = by_idnumber[row[0]].student_id
        seen.add(sid)
        if sid in faulted:
            assert row[1:] == [""] * len(titles), (sid, row)
            continue
        values = dict(zip(titles, map(float, row[1:])))  # a non-numeric grade aborts it ("badgrade")
        for s in stems:
            assert close(values[f"ppo {s}"], book[sid][s]) and values[f"ppo {s}"] <= maxima[f"ppo {s}"] + 1e-9, (sid, s)
        assert values["ppo chapter_complete"] == int(complete[sid]), sid
    assert seen == set(book)


def check_report(out: Path, book: dict[str, dict], stems: list[str]) -> None:
    """report.md: the gradebook's class (count, statuses, min/max total, per-exercise means of graded students)."""
    report = (out / "report.md").read_text(encoding="utf-8")
    assert report.startswith("# Class report\n\n" + f"{len(book)} students: "), report[:200]
    counts = dict((st, int(n)) for n, st in re.findall(r"(\d+) ([a-z_-]+)", report.splitlines()[2].split(":", 1)[1]))
    want: dict[str, int] = {}
    for row in book.values():
        want[row["status"]] = want.get(row["status"], 0) + 1
    assert counts == want, (counts, want)
    totals = [float(r["total"]) for r in book.values() if r["status"] != FAULT]
    m = re.search(r"min (\S+), max (\S+)\.", report)
    assert not totals or m and close(m[1], min(totals)) and close(m[2], max(totals)), report[:400]
    for stem in stems:
        graded = [float(r[stem]) for r in book.values() if r["status"] == "graded"]
        m = re.search(rf"\| `{stem}` \| \S+ \| (\S+) \|", report)
        if graded:
            assert m and close(m[1], sum(graded) / len(graded), 0.006), (stem, m and m[1], graded)


def check_regrade(out: Path, book: dict[str, dict]) -> None:
    """regrade.md, when present: every student it names is in the class, and the score it says they now have is theirs."""
    path = out / "regrade.md"
    if not path.is_file():
        return
    for sid, new in re.findall(r"^### (\S+): \S+ → (\S+)", path.read_text(encoding="utf-8"), re.M):
        assert sid in book, f"regrade.md names {sid}, who is not in the gradebook"
        assert close(new, book[sid]["total"]), f"regrade.md says {sid} now has {new}, the gradebook {book[sid]['total']}"
    with open(out / "regrade.csv", newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            assert row["student_id"] in book, f"regrade.csv names {row['student_id']}, who is not in the gradebook"


def check_class(out: Path, exports: dict[str, Path], exp: Expected, *, finished: bool = True) -> None:
    """Every published file agrees (module docstring). ``finished=False``: after a killed batch (no report)."""
    no_half_written(out)
    rows = read_csv(out / "gradebook.csv")
    book = keyed(rows, "student_id")
    stems = [c for c in rows[0] if c not in NOT_EXERCISES]
    records = {d.name for d in out.iterdir() if d.is_dir() and (d / "batch.json").is_file()}
    assert set(book) == records, (sorted(book), sorted(records))
    nb = keyed(read_csv(out / "grades.csv"), "student_id")
    assert read_csv(out / "grades.csv")[0] == NBGRADER_HEADER
    assert set(nb) == set(book)
    for sid, row in nb.items():
        if book[sid]["status"] == FAULT:
            assert row["score"] == row["raw_score"] == "", (sid, row)
            continue
        assert close(row["score"], book[sid]["total"]) and close(row["raw_score"], book[sid]["total"]), sid
        assert close(row["max_score"], book[sid]["max_total"]), sid
    published = {sid: check_student(out, sid, row, stems) for sid, row in book.items()}
    if finished:
        assert set(book) == exp.students, (sorted(book), sorted(exp.students))
    fingerprints = {sid: r["grader_fingerprint"] for sid, r in published.items() if sid not in exp.kept_earlier}
    if finished:
        assert set(fingerprints.values()) <= {exp.fingerprint}, fingerprints
    versions = {r["_results"]["extra_data"]["grader_version"] for sid, r in published.items()
                if sid not in exp.kept_earlier and r["status"] == "graded"}
    assert len(versions) <= 1 or not finished, versions
    complete = {}
    from quiz_bank.grading import exercises_from_results  # the quiz's reading of results.json (chapter completion)

    for sid, r in published.items():
        if r["status"] == FAULT:
            complete[sid] = False
            continue
        ex = r["exercise_scores"]
        full = r["status"] == "graded" and all(close(v["score"], v["max_score"], 1e-9) for v in ex.values())
        assert exercises_from_results(out / sid / "results.json")["full_marks"] == full, sid
        complete[sid] = full and exp.quiz_done.get(sid, False)
    if not finished:
        if exports:
            check_exports(out, exports, book, stems, exp, complete)
        return
    for sid, r in published.items():
        if sid in exp.status:
            assert r["status"] == exp.status[sid], (sid, r["status"], exp.status[sid])
        hand = exp.by_hand.get(sid)
        if sid in exp.kept_earlier or hand is None or r["status"] == FAULT:
            continue
        scores, maxima = hand
        kept = r["_results"]["extra_data"].get("never_lower")
        for stem, want in scores.items():
            got = r["exercise_scores"][stem]["score"]
            assert close(r["exercise_scores"][stem]["max_score"], maxima[stem]), (sid, stem)
            assert close(got, want) or (kept and got > want), (sid, stem, got, want, kept)
        if sid in exp.graded_from:
            assert r["sources"] == [exp.graded_from[sid]], (sid, r["sources"], exp.graded_from[sid])
    check_exports(out, exports, book, stems, exp, complete)
    check_report(out, book, stems)
    check_regrade(out, book)
    if (out / "attempts.csv").is_file() and exp.graded_from:
        graded = {r["student_id"]: r["folder"] for r in keyed(read_csv(out / "attempts.csv"), "folder").values()
                  if r["graded"] == "yes"}
        for sid, folder in graded.items():
            assert exp.graded_from.get(sid) == folder, (sid, folder, exp.graded_from.get(sid))
