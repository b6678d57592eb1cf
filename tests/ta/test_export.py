"""``ppo-course export``: each layout read back with the LMS's documented column rules.

Canvas (Gradebook import): header ``Student, ID, SIS User ID, SIS Login ID, Section`` then
assignment columns ``Name`` or ``Name (id)``; an optional ``Points Possible`` row; a student is
matched by ID, SIS User ID or SIS Login ID. Moodle (grade import, CSV): a header row, one
identifier column mapped to a user field (email / idnumber / username), one column per grade item.
Scores by hand from the stand-in grader's rules (tests/batch/stand_in_grader.py): 2 points per
module, 1 lost per BUG_VALUE / BUG_GRAD marker; 7 modules, 14 points.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from ta_support import write_student
from grader.batch import run_batch
from grader.export import CANVAS_IDENTITY, export_batch, neutralise_cell
from grader.points import EXERCISES

ALL_OK = {f"{stem}.py": "ok" for stem in EXERCISES}


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


def read_canvas(path: Path) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """Canvas's import rules: (points possible per assignment, {SIS User ID: {assignment: score}})."""
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
        assert row[1] or row[2] or row[3], "Canvas needs ID, SIS User ID or SIS Login ID"
        students[row[2]] = dict(zip(assignments, map(float, row[5:])))
    return points, students


def read_moodle(path: Path, id_column: str) -> dict[str, dict[str, float]]:
    """Moodle's CSV import: the mapped identifier column, every other column a numeric grade item."""
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        assert reader.fieldnames and reader.fieldnames[0] == id_column
        items = reader.fieldnames[1:]
        return {row[id_column]: {i: float(row[i]) for i in items} for row in reader}


def test_canvas_export_reads_back(batch, tmp_path):
    export_batch(batch, "canvas", tmp_path / "canvas.csv", canvas_ids={"ex4_gae": "777"})
    header = (tmp_path / "canvas.csv").read_text().splitlines()[0]
    assert "ppo ex4_gae (777)" in header
    points, students = read_canvas(tmp_path / "canvas.csv")
    assert points["ppo ex1_ratio"] == 2 and points["ppo chapter_complete"] == 1
    assert students["alice"]["ppo ex2_clipped_loss"] == 2 and students["alice"]["ppo chapter_complete"] == 1
    assert students["bob"]["ppo ex2_clipped_loss"] == 1 and students["bob"]["ppo chapter_complete"] == 0
    assert students["'=evil"]["ppo ex1_ratio"] == 0  # the id reaches the file as text, not a formula
    assert len([k for k in points if k.startswith("ppo ex")]) == len(EXERCISES)


def test_moodle_export_reads_back_with_a_roster(batch, tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("student_id,email,name\nalice,alice@uni.example,Alice A\nbob,bob@uni.example,Bob B\n")
    export_batch(batch, "moodle", tmp_path / "moodle.csv", roster=roster, moodle_id="email")
    grades = read_moodle(tmp_path / "moodle.csv", "Email address")
    assert grades["alice@uni.example"]["ppo ex7_ppo_step"] == 2
    assert grades["bob@uni.example"]["ppo ex2_clipped_loss"] == 1
    assert grades["'=evil"]["ppo chapter_complete"] == 0


def test_plain_csv_and_quiz_completion(batch, tmp_path):
    from quiz_bank.storage import AttemptStore

    db = tmp_path / "quiz.sqlite3"
    with AttemptStore(db) as store:  # alice passed stops 1-7 only, bob all eight
        for stop in range(1, 9):
            if stop < 8:
                store.record("alice", f"q{stop}", 1, "x", "correct", completed_stop=stop)
            store.record("bob", f"q{stop}", 1, "x", "correct", completed_stop=stop)
    export_batch(batch, "csv", tmp_path / "plain.csv", quiz_db=db)
    with open(tmp_path / "plain.csv", newline="") as fh:
        rows = {r["student_id"]: r for r in csv.DictReader(fh)}
    assert rows["alice"]["total"] == "14" and rows["alice"]["chapter_complete"] == "0"  # quiz stop 8 missing
    assert rows["bob"]["total"] == "13" and rows["bob"]["chapter_complete"] == "0"  # ex2 short of full marks
    export_batch(batch, "csv", tmp_path / "plain2.csv")  # without the quiz: the exercises alone
    assert "alice,2,2,2,2,2,2,2,14,14,1,graded" in (tmp_path / "plain2.csv").read_text()


def test_quiz_results_csv_gives_completion(batch, tmp_path):
    quiz = tmp_path / "quiz_gradebook.csv"  # `ppo-course quiz grade-batch`'s columns
    quiz.write_text("student_id,stop1,stop2,stop3,stop4,stop5,stop6,stop7,stop8,total,max_total,stops_passed,"
                    "complete,status,message\n"
                    "alice,3,3,3,3,3,3,3,3,24,24,8,True,graded,\nbob,3,3,3,3,3,3,3,3,24,24,8,True,graded,\n")
    export_batch(batch, "csv", tmp_path / "plain.csv", quiz_results=quiz)
    with open(tmp_path / "plain.csv", newline="") as fh:
        rows = {r["student_id"]: r["chapter_complete"] for r in csv.DictReader(fh)}
    assert rows == {"alice": "1", "bob": "0", "'=evil": "0"}  # bob: ex2 below full marks
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
    from quiz_bank.server.db import QuizDB

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
