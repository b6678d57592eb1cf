"""``ppo-course export``: each file read back by the platform's own import rules (issue 21 items 2, 7).

The readers below implement what each platform documents, independently of ``lms.gradebook_csv``:

* Canvas, Instructor Guide "How do I import grades in the Gradebook?"
  (community.canvaslms.com/t5/Instructor-Guide/How-do-I-import-grades-in-the-Gradebook/ta-p/807)
  and its importer (canvas-lms ``app/models/gradebook_importer.rb``): the header starts
  ``Student, ID, SIS User ID, SIS Login ID, Section``, assignment columns are ``Name`` or
  ``Name (id)``, a ``Points Possible`` row may follow the header, and a student is matched
  by ``ID``, ``SIS User ID`` or ``SIS Login ID``: a row matching no student is not imported.
* Moodle, grade/import/csv/classes/load_data.php ``prepare_import_grade_data``: the TA maps
  one column to a user field; a value that finds no user aborts the whole import ("User not
  found, abort whole import"), a non-numeric grade aborts it (``badgrade``), and a grade above
  the item's maximum is refused (grade/tests/behat/grade_import.feature, "Max grade of grade
  item is respected").

Scores by hand from the stand-in grader's rules (tests/batch/stand_in_grader.py): 2 points per
module, 1 lost per BUG_VALUE / BUG_GRAD marker; 7 modules, 14 points.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import pytest

from ta_support import write_student
from grader.batch import run_batch
from grader.reports.export import ExportRefused, export_batch, neutralise_cell
from lms.gradebook_csv import CANVAS_IDENTITY
from grader.points import EXERCISES

ALL_OK = {f"{stem}.py": "ok" for stem in EXERCISES}
ROSTER = ("student_id,name,sis_user_id,email,idnumber\n"
          "alice,Alice A,S-alice,alice@uni.example,1001\nbob,Bob B,S-bob,bob@uni.example,1002\n")


class MoodleImportAborted(Exception):
    """What Moodle does with the whole file (load_data.php's ``cleanup_import``)."""


@pytest.fixture(scope="module")
def batch(tmp_path_factory, stand_in_module) -> Path:
    """alice: every module right (complete); bob: one bug in ex2; =evil: a formula-looking id, nothing right."""
    base = tmp_path_factory.mktemp("export")
    subs = base / "subs"
    write_student(subs, "alice", ALL_OK)
    write_student(subs, "bob", {**ALL_OK, "ex2_clipped_loss.py": "BUG_VALUE"})
    write_student(subs, "=evil", {"ex1_ratio.py": "BUG_VALUE BUG_GRAD"})
    run_batch(subs, base / "out", jobs=2, progress=False, log=lambda m: None, report=False)
    return base / "out"


@pytest.fixture
def roster(tmp_path) -> Path:
    path = tmp_path / "roster.csv"
    path.write_text(ROSTER, encoding="utf-8")
    return path


def canvas_import(path: Path, users: dict[str, str]) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """Canvas's rules: (points possible per assignment, {user: {assignment: score}}).

    ``users`` maps every ID / SIS User ID / SIS Login ID Canvas knows to its user; a row that
    matches none is what Canvas cannot import (asserted against here).
    """
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    header = rows[0]
    assert tuple(header[:5]) == CANVAS_IDENTITY, header
    assignments = [re.sub(r" \(\d+\)$", "", h) for h in header[5:]]  # "Name (id)" or "Name"
    points, students = {}, {}
    for row in rows[1:]:
        assert len(row) == len(header)
        if row[0].strip() == "Points Possible":
            points = dict(zip(assignments, map(float, row[5:])))
            continue
        matched = {users[k] for k in row[1:4] if k and k in users}
        assert len(matched) == 1, f"Canvas matches no single student for {row[:5]}"
        scores = dict(zip(assignments, map(float, row[5:])))
        assert all(scores[a] <= points[a] for a in assignments), row
        students[matched.pop()] = scores
    return points, students


def moodle_import(path: Path, id_column: str, users: dict[str, str], maxima: dict[str, float]) -> dict:
    """Moodle's CSV import (load_data.php): map ``id_column`` to a user field, then every grade item.

    Raises:
        MoodleImportAborted: a user not found, a non-numeric grade, or a grade above its item's maximum.
    """
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        assert reader.fieldnames and id_column in reader.fieldnames
        grades = {}
        for row in reader:
            if row[id_column] not in users:
                raise MoodleImportAborted(f"User not found, abort whole import: {row[id_column]!r}")
            items = {}
            for item in (f for f in reader.fieldnames if f != id_column):
                try:
                    value = float(row[item])
                except ValueError:
                    raise MoodleImportAborted(f"badgrade {row[item]!r}") from None
                if value > maxima.get(item, float("inf")):
                    raise MoodleImportAborted(f"{item}: {value} above the maximum {maxima[item]}")
                items[item] = value
            grades[users[row[id_column]]] = items
    return grades


def test_canvas_export_with_a_roster_reads_back(batch, roster, tmp_path):
    done = export_batch(batch, "canvas", tmp_path / "canvas.csv", roster=roster, canvas_ids={"ex4_gae": "777"})
    assert "ppo ex4_gae (777)" in (tmp_path / "canvas.csv").read_text().splitlines()[0]
    points, students = canvas_import(tmp_path / "canvas.csv", {"S-alice": "alice", "S-bob": "bob"})
    assert points["ppo ex1_ratio"] == 2 and "ppo chapter_complete" not in points
    assert students["alice"]["ppo ex2_clipped_loss"] == 2 and students["bob"]["ppo ex2_clipped_loss"] == 1
    # No quiz data: completion is not known (alice's full exercise marks alone never complete the chapter).
    assert any("no quiz data" in n and "chapter_complete" in n for n in done.notes), done.notes
    assert set(students) == {"alice", "bob"}
    assert [sid for sid, _ in done.left_out] == ["=evil"]  # not on the roster: left out and named, not invented
    assert "not on the roster" in done.left_out[0][1]


def test_without_a_roster_the_ids_are_one_stated_field_only(batch, tmp_path):
    done = export_batch(batch, "canvas", tmp_path / "canvas.csv")
    rows = list(csv.reader(open(tmp_path / "canvas.csv", newline="")))
    alice = next(r for r in rows if r[2] == "alice")
    assert alice[:5] == ["", "", "alice", "", ""]  # no name, login or section made up from the folder name
    assert any("no --roster" in n and "sis_user_id" in n for n in done.notes)
    # "=evil" as an identifier: neither escaped into another id ("'=evil") nor written as a formula.
    assert not any(r[2].lstrip("'").startswith("=") for r in rows[2:])
    assert dict(done.left_out)["=evil"].startswith("the Canvas identifier '=evil' starts like a spreadsheet formula")


def test_moodle_import_accepts_the_file_and_never_meets_an_unknown_user(batch, roster, tmp_path, stand_in):
    """chen (not on the roster) and a roster entry without an email are left out: Moodle would abort on them."""
    subs = tmp_path / "subs"
    out = tmp_path / "out"
    shutil.copytree(batch, out)
    shutil.copytree(batch.parent / "subs", subs)  # the class stays (a student missing from it is set aside)
    write_student(subs, "chen", ALL_OK)
    write_student(subs, "dee", ALL_OK)
    run_batch(subs, out, jobs=1, progress=False, log=lambda m: None, report=False)
    (tmp_path / "r2.csv").write_text(ROSTER + "dee,Dee D,S-dee,,\n")
    done = export_batch(out, "moodle", tmp_path / "moodle.csv", roster=tmp_path / "r2.csv", moodle_id="email")
    maxima = {f"ppo {s}": 2.0 for s in EXERCISES} | {"ppo chapter_complete": 1.0}
    users = {"alice@uni.example": "alice", "bob@uni.example": "bob"}
    grades = moodle_import(tmp_path / "moodle.csv", "Email address", users, maxima)
    assert grades["alice"]["ppo ex7_ppo_step"] == 2 and grades["bob"]["ppo ex2_clipped_loss"] == 1
    left = dict(done.left_out)
    assert set(left) == {"chen", "dee", "=evil"}
    assert "Email address" in left["dee"] and "not on the roster" in left["chen"]
    assert "chen" not in (tmp_path / "moodle.csv").read_text()  # never the folder name as an email


def test_moodle_by_email_without_a_roster_is_refused(batch, tmp_path):
    """The folder name is never written as an email address (issue 21: a Moodle `Email address` held `chen`)."""
    with pytest.raises(ValueError, match="needs --roster"):
        export_batch(batch, "moodle", tmp_path / "m.csv", moodle_id="email")
    assert not (tmp_path / "m.csv").exists()


def test_a_score_above_its_maximum_is_never_exported(batch, roster, tmp_path):
    """never-lower once published 80.5 / 80: Moodle refuses such a grade, so the row is left out and named."""
    out = tmp_path / "out"
    shutil.copytree(batch, out)
    rec = json.loads((out / "bob" / "batch.json").read_text())
    rec["exercise_scores"]["ex2_clipped_loss"]["score"] = 2.5
    (out / "bob" / "batch.json").write_text(json.dumps(rec))
    done = export_batch(out, "moodle", tmp_path / "m.csv", roster=roster, moodle_id="idnumber")
    assert "above the maximum 2" in dict(done.left_out)["bob"]
    maxima = {f"ppo {s}": 2.0 for s in EXERCISES} | {"ppo chapter_complete": 1.0}
    assert set(moodle_import(tmp_path / "m.csv", "ID number", {"1001": "alice", "1002": "bob"}, maxima)) == {"alice"}


def test_formula_like_identifier_is_left_out_not_escaped(batch, tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("student_id,sis_user_id,idnumber\nalice,=SUM(1+1),=SUM(1+1)\nbob,S-bob,1002\n")
    for fmt in ("canvas", "moodle"):
        done = export_batch(batch, fmt, tmp_path / f"{fmt}.csv", roster=roster)
        text = (tmp_path / f"{fmt}.csv").read_text()
        assert "SUM(1+1)" not in text and "spreadsheet formula" in dict(done.left_out)["alice"]


def test_strict_fails_and_writes_nothing(batch, roster, tmp_path, capsys):
    from ppo_course.cli import main

    with pytest.raises(ExportRefused, match="=evil"):
        export_batch(batch, "canvas", tmp_path / "c.csv", roster=roster, strict=True)
    assert not (tmp_path / "c.csv").exists()
    assert main(["export", str(batch), "--format", "canvas", "--roster", str(roster), "--strict",
                 "--out", str(tmp_path / "c.csv")]) == 1
    assert not (tmp_path / "c.csv").exists()
    assert main(["export", str(batch), "--format", "canvas", "--roster", str(roster),
                 "--out", str(tmp_path / "c.csv")]) == 0
    err = capsys.readouterr().err
    assert "left out '=evil': not on the roster" in err


def test_plain_csv_and_quiz_completion(batch, tmp_path):
    from quiz_bank.storage import AttemptStore

    db = tmp_path / "quiz.sqlite3"
    with AttemptStore(db) as store:  # alice passed stops 1-7 only, bob all eight
        for stop in range(1, 9):
            if stop < 8:
                store.record("alice", f"q{stop}", 1, "x", "correct", completed_stop=stop)
            store.record("bob", f"q{stop}", 1, "x", "correct", completed_stop=stop)
    done = export_batch(batch, "csv", tmp_path / "plain.csv", quiz_db=db)
    with open(tmp_path / "plain.csv", newline="") as fh:
        rows = {r["student_id"]: r for r in csv.DictReader(fh)}
    assert rows["alice"]["total"] == "14" and rows["alice"]["chapter_complete"] == "0"  # quiz stop 8 missing
    assert rows["bob"]["total"] == "13" and rows["bob"]["chapter_complete"] == "0"  # ex2 short of full marks
    assert any("no record in the quiz store" in n and "=evil" in n for n in done.notes)  # warned, not silent
    export_batch(batch, "csv", tmp_path / "plain2.csv")  # without the quiz: completion not known (empty)
    assert "alice,2,2,2,2,2,2,2,14,14,,graded" in (tmp_path / "plain2.csv").read_text()


def test_chapter_complete_is_not_marked_over_an_exercises_subset(tmp_path, stand_in):
    subs = tmp_path / "subs"
    write_student(subs, "alice", ALL_OK)
    run_batch(subs, tmp_path / "out", jobs=1, progress=False, log=lambda m: None, report=False,
              exercises=["ex2_clipped_loss"])
    done = export_batch(tmp_path / "out", "canvas", tmp_path / "c.csv")
    assert "chapter_complete" not in (tmp_path / "c.csv").read_text()
    assert any("only ex2_clipped_loss" in n for n in done.notes)
    export_batch(tmp_path / "out", "csv", tmp_path / "p.csv")
    assert next(csv.DictReader(open(tmp_path / "p.csv")))["chapter_complete"] == ""


def test_quiz_results_csv_gives_completion(batch, tmp_path):
    quiz = tmp_path / "quiz_gradebook.csv"  # `ppo-course quiz grade-batch`'s columns
    quiz.write_text("student_id,stop1,stop2,stop3,stop4,stop5,stop6,stop7,stop8,total,max_total,stops_passed,"
                    "complete,status,message\n"
                    "alice,3,3,3,3,3,3,3,3,24,24,8,True,graded,\nbob,3,3,3,3,3,3,3,3,24,24,8,True,graded,\n")
    done = export_batch(batch, "csv", tmp_path / "plain.csv", quiz_results=quiz)
    with open(tmp_path / "plain.csv", newline="") as fh:
        rows = {r["student_id"]: r["chapter_complete"] for r in csv.DictReader(fh)}
    assert rows == {"alice": "1", "bob": "0"}  # bob: ex2 below full marks; =evil left out (formula-like id)
    assert dict(done.left_out)["=evil"].startswith("the student_id '=evil' starts like a spreadsheet formula")
    with pytest.raises(ValueError, match="not both"):
        export_batch(batch, "csv", tmp_path / "x.csv", quiz_results=quiz, quiz_db=tmp_path / "q.sqlite3")


def test_neutralise_cell():
    assert [neutralise_cell(x) for x in ("=1+1", "+1", "-2", "@a", "\tx", "alice")] == \
        ["'=1+1", "'+1", "'-2", "'@a", "'\tx", "alice"]


def test_cli_export_and_usage_errors(batch, tmp_path):
    from ppo_course.cli import main

    assert main(["export", str(batch), "--format", "canvas", "--out", str(tmp_path / "c.csv")]) == 0
    assert (tmp_path / "c.csv").is_file()
    assert main(["export", str(tmp_path), "--format", "csv", "--out", str(tmp_path / "x.csv")]) == 2
    assert main(["export", str(batch), "--format", "csv", "--out", str(tmp_path / "x.csv"),
                 "--quiz-db", str(tmp_path / "absent.sqlite3")]) == 2


def test_quiz_server_database_gives_completion(batch, tmp_path):
    """`--quiz-db` also takes the quiz server's database (`ppo-course quiz serve --db`)."""
    from quiz_bank.instructor.server.db import QuizDB

    db = QuizDB(tmp_path / "served.sqlite")
    for student, stops in (("alice", range(1, 9)), ("bob", range(1, 8))):  # bob never passed stop 8
        for stop in stops:
            attempt = db.start_attempt(student, stop, lambda n: ["q1"])
            db.record_answer(student, stop, attempt.attempt, "q1", "x", True)
    export_batch(batch, "csv", tmp_path / "served.csv", quiz_db=tmp_path / "served.sqlite")
    with open(tmp_path / "served.csv", newline="") as fh:
        rows = {r["student_id"]: r for r in csv.DictReader(fh)}
    assert rows["alice"]["chapter_complete"] == "1"  # every exercise at full marks and all eight stops
    assert rows["bob"]["chapter_complete"] == "0"


def test_the_quiz_and_the_exercises_share_one_canvas_writer(tmp_path):
    """The quiz's Canvas file follows the same rule: a student the roster gives no Canvas id is left out, named."""
    from quiz_bank.instructor.server import gradebook

    rows = [{"student_id": sid, "name": sid.title(), "section": "", "sis_user_id": sis, "sis_login_id": "",
             "canvas_id": "", "email": "", "best": {s: 100 for s in range(1, 9)}, "passed": set(range(1, 9)),
             "complete": True} for sid, sis in (("ann", "S-ann"), ("zed", ""))]
    written = gradebook._canvas(rows)
    path = tmp_path / "quiz_canvas.csv"
    path.write_text(written.text)
    points, students = canvas_import(path, {"S-ann": "ann"})
    assert students["ann"]["PPO quiz complete"] == 1 and points["PPO quiz stop 1"] == 100
    assert [sid for sid, _ in written.left_out] == ["zed"]


def test_without_quiz_data_chapter_complete_is_empty_with_a_note(batch, tmp_path):
    """Before: alice at full exercise marks was exported chapter_complete = 1 with no quiz data given, and
    nothing said the quiz was not counted. Completion needs the quiz: empty cell (csv), no column (LMS), a note."""
    done = export_batch(batch, "csv", tmp_path / "p.csv")
    rows = {r["student_id"]: r for r in csv.DictReader(open(tmp_path / "p.csv"))}
    assert rows["alice"]["total"] == "14" and rows["alice"]["chapter_complete"] == ""
    assert any("no quiz data" in n for n in done.notes), done.notes
    export_batch(batch, "moodle", tmp_path / "m.csv")
    assert "chapter_complete" not in (tmp_path / "m.csv").read_text().splitlines()[0]
