"""Identity from the roster: one reader (lms/roster.py) and attempts grouped only by a stated rule (grader/intake/attempts.py).

Issue 19 class 8 / issue 21 item 2: ``--latest-only`` used to group folders by a naming rule, so a
student named ``alice_2`` made alice's own submission disappear, and rows were ``amy_2``. Scores by
hand from the stand-in grader (tests/batch/stand_in_grader.py): 2 points per module, 1 lost per
BUG_VALUE / BUG_GRAD marker.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from ta_support import write_student
from grader.intake.attempts import AttemptRule, AttemptRuleError, select
from grader.batch import run_batch
from grader.intake.class_list import discover
from lms.roster import RosterError, read_roster


def _roster(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _book(out: Path) -> dict[str, dict[str, str]]:
    with open(out / "gradebook.csv", newline="") as fh:
        return {r["student_id"]: r for r in csv.DictReader(fh)}


def _folders(root: Path, *names: str) -> list:
    for n in names:
        (root / n).mkdir(parents=True)
    return discover(root)[0]


def test_roster_reader_keeps_fields_and_never_fills_them(tmp_path):
    roster = read_roster(_roster(tmp_path / "r.csv", "student_id,email,attempts\namy,amy@x.org,amy;amy_2\nbob,,\n"))
    assert roster.get("amy").attempts == ("amy", "amy_2") and roster.get("amy").email == "amy@x.org"
    assert roster.get("bob").email == "" and roster.get("bob").folders == ("bob",)  # empty stays empty
    assert roster.owner_of_folder() == {"amy": "amy", "amy_2": "amy", "bob": "bob"}


@pytest.mark.parametrize("text, says", [
    ("name\nAmy\n", "student_id column"),
    ("student_id\namy\namy\n", "appears twice"),
    ("student_id,attempts\namy,x\nbob,x\n", "belongs to one student"),
    ("student_id,attempts\namy,amy;bob\nbob,\n", "is a student of the roster"),
])
def test_roster_reader_refuses_ambiguous_files(tmp_path, text, says):
    with pytest.raises(RosterError, match=says):
        read_roster(_roster(tmp_path / "r.csv", text))


def test_quiz_server_reads_the_same_roster(tmp_path):
    """The quiz server's sign-in roster is the one reader's output (same errors, same fields)."""
    from quiz_bank.instructor.server.auth import AuthError
    from quiz_bank.instructor.server.auth import read_roster as quiz_roster

    rows = quiz_roster(_roster(tmp_path / "r.csv", "student_id,name,email,attempts\namy,Amy,amy@x.org,amy;amy_2\n"))
    assert rows[0]["student_id"] == "amy" and rows[0]["email"] == "amy@x.org" and rows[0]["sis_user_id"] == ""
    with pytest.raises(AuthError, match="appears twice"):
        quiz_roster(_roster(tmp_path / "bad.csv", "student_id\namy\namy\n"))


def test_latest_only_without_a_stated_rule_is_refused(tmp_path):
    entries = _folders(tmp_path / "subs", "alice", "alice_2")
    with pytest.raises(AttemptRuleError, match="never guessed"):
        select(entries, AttemptRule(), latest_only=True)


def test_a_classmate_named_like_an_attempt_is_never_dropped(tmp_path):
    """alice and alice_2 are two students on the roster: both are graded, neither is an attempt of the other."""
    entries = _folders(tmp_path / "subs", "alice", "alice_2", "bob", "bob_v2")
    roster = read_roster(_roster(tmp_path / "r.csv", "student_id,attempts\nalice,\nalice_2,\nbob,bob;bob_v2\n"))
    chosen = select(entries, AttemptRule(roster=roster), latest_only=True)
    assert {e.student_id: [p.name for p in e.sources] for e in chosen.entries} == {
        "alice": ["alice"], "alice_2": ["alice_2"], "bob": ["bob_v2"]}
    assert [(i.folder, i.student_id) for i in chosen.left_out] == [("bob", "bob")]
    # A pattern cannot take a roster student's own folder either.
    both = select(entries, AttemptRule(roster=roster, pattern=r"(?P<student>.+)_(?P<attempt>\d+)"), latest_only=True)
    assert {e.student_id for e in both.entries} == {"alice", "alice_2", "bob"}


def test_pattern_orders_attempts_numerically_and_names_each_left_out(tmp_path):
    entries = _folders(tmp_path / "subs", "amy", "amy--2", "amy--10", "carl")
    chosen = select(entries, AttemptRule(pattern=r"(?P<student>.+)--(?P<attempt>\d+)"), latest_only=True)
    assert {e.student_id: e.sources[0].name for e in chosen.entries} == {"amy": "amy--10", "carl": "carl"}
    assert sorted(i.folder for i in chosen.left_out) == ["amy", "amy--2"]  # 10 > 2 (numeric), amy is attempt 0
    assert all("amy--10" in i.why for i in chosen.left_out)
    assert len([w for w in chosen.warnings if w.startswith("--latest-only: left out")]) == 2  # said without a roster too


def test_several_folders_without_latest_only_is_an_error(tmp_path):
    entries = _folders(tmp_path / "subs", "amy", "amy--2")
    with pytest.raises(AttemptRuleError, match="--latest-only"):
        select(entries, AttemptRule(pattern=r"(?P<student>.+)--(?P<attempt>\d+)"), latest_only=False)


def test_bad_patterns_are_refused():
    with pytest.raises(AttemptRuleError, match="student"):
        AttemptRule(pattern=r"(.+)_\d+")
    with pytest.raises(AttemptRuleError, match="regular expression"):
        AttemptRule(pattern=r"(?P<student>.+")


def test_batch_rows_are_student_ids_and_the_report_names_every_folder(tmp_path, stand_in):
    subs, out = tmp_path / "subs", tmp_path / "out"
    write_student(subs, "amy", {"ex2_clipped_loss.py": "BUG_VALUE BUG_GRAD"})
    write_student(subs, "amy_2", {"ex2_clipped_loss.py": "ok"})
    write_student(subs, "bob", {"ex2_clipped_loss.py": "BUG_GRAD"})
    roster = read_roster(_roster(tmp_path / "r.csv", "student_id,attempts\namy,amy;amy_2\nbob,\ndee,\n"))
    said: list[str] = []
    run_batch(subs, out, jobs=1, progress=False, log=said.append, report=False,
              latest_only=True, attempt_rule=AttemptRule(roster=roster))
    book = _book(out)
    # dee is on the roster with no folder: in the gradebook at 0, status no-submission, the reason said (issue 21).
    assert {k: v["total"] for k, v in book.items()} == {"amy": "2", "bob": "1", "dee": "0"}  # amy_2's ok: 2 points
    assert book["dee"]["status"] == "no-submission" and "no submission" in book["dee"]["message"]
    assert not (out / "amy_2").exists()
    with open(out / "attempts.csv", newline="") as fh:
        rows = {r["folder"]: r for r in csv.DictReader(fh)}
    assert rows["amy"]["graded"] == "no" and "amy_2" in rows["amy"]["why"]
    assert rows["amy_2"]["student_id"] == "amy" and rows["amy_2"]["graded"] == "yes"
    assert any("dee" in m and "no submission folder" in m for m in said)
    assert "left out 'amy'" in "\n".join(said)
    from grader.reports.export import export_batch

    canvas = export_batch(out, "canvas", tmp_path / "canvas.csv")  # no roster: ids are the SIS User IDs
    with open(canvas.path, newline="") as fh:
        by_id = {row[2]: row for row in csv.reader(fh)}
    assert set(by_id) >= {"amy", "bob", "dee"} and len(by_id["dee"]) > 5
    assert all(float(v) == 0 for v in by_id["dee"][5:])
    plain = export_batch(out, "csv", tmp_path / "plain.csv")
    with open(plain.path, newline="") as fh:
        rows = {r["student_id"]: r for r in csv.DictReader(fh)}
    assert rows["dee"]["total"] == "0" and rows["dee"]["status"] == "no-submission"
    assert any("dee" in note and "no submission" in note for note in canvas.notes)
    # A rerun keeps dee's row (the out folder of a roster student is not "removed").
    said.clear()
    run_batch(subs, out, jobs=1, progress=False, log=said.append, report=False,
              latest_only=True, attempt_rule=AttemptRule(roster=roster))
    assert _book(out)["dee"]["status"] == "no-submission" and not any("left the gradebook" in m for m in said)


def test_a_graded_student_whose_folder_disappears_keeps_the_grade(tmp_path, stand_in):
    """A roster student graded once whose folder then disappears (moved by mistake) is not overwritten by a
    ``no-submission`` 0: the earlier grade stays and the TA is told. By hand (stand-in grader): bob's ex2 has
    BUG_GRAD, so 2 - 1 = 1 point."""
    import shutil

    subs, out = tmp_path / "subs", tmp_path / "out"
    write_student(subs, "amy", {"ex2_clipped_loss.py": "ok"})
    write_student(subs, "bob", {"ex2_clipped_loss.py": "BUG_GRAD"})
    roster = read_roster(_roster(tmp_path / "r.csv", "student_id\namy\nbob\n"))
    run_batch(subs, out, jobs=1, progress=False, report=False, attempt_rule=AttemptRule(roster=roster))
    assert _book(out)["bob"]["total"] == "1"
    shutil.rmtree(subs / "bob")
    said: list[str] = []
    run_batch(subs, out, jobs=1, progress=False, log=said.append, report=False, attempt_rule=AttemptRule(roster=roster))
    book = _book(out)
    assert book["bob"]["total"] == "1" and book["bob"]["status"] == "graded"
    assert any("bob" in m and "earlier graded submission is kept" in m for m in said)


def test_cli_latest_only_without_rule_is_a_usage_error(tmp_path, capsys):
    from ppo_course.cli import main

    write_student(tmp_path / "subs", "amy", {"ex2_clipped_loss.py": "ok"})
    code = main(["grade-batch", str(tmp_path / "subs"), "--out", str(tmp_path / "out"), "--latest-only", "--no-progress"])
    assert code == 2 and "never guessed" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
