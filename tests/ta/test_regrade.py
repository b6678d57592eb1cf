"""Regrades that explain themselves (grader/reports/regrade.py and its hooks in grader.batch.run_batch).

The grader change: the stand-in grader (tests/batch/stand_in_grader.py) is replaced by
``stand_in_v2`` (one hidden test, ``test_value``, fixed: BUG_VALUE was a false alarm,
SNEAKY was missed) and the fingerprint changes (monkeypatched: the real one hashes the
grader's sources). Scores by hand: 2 points per module (test_value + test_grad).
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from ta_support import STAND_IN, write_student
from grader import batch
from grader.batch import run_batch

V2 = "stand_in_v2:grade_submission"


_INSTALL: list = []  # this test's stand-in installer (the `stand_in` fixture, set by _installer)


@pytest.fixture(autouse=True)
def _installer(stand_in):
    _INSTALL[:] = [stand_in]
    yield
    _INSTALL.clear()


def grade(subs: Path, out: Path, grade_fn: str, **kw) -> batch.BatchSummary:
    """One grade-batch run whose workers grade with the stand-in ``grade_fn`` ("module:function")."""
    _INSTALL[0](grade_fn)
    return run_batch(subs, out, jobs=2, progress=False, log=lambda m: None,
                     exercises=["ex2_clipped_loss"], report=False, **kw)


@pytest.fixture
def cohort(tmp_path) -> Path:
    """up: BUG_VALUE (1 → 2 after the fix); down: SNEAKY (2 → 1); same: correct (2 → 2)."""
    subs = tmp_path / "subs"
    write_student(subs, "up", {"ex2_clipped_loss.py": "BUG_VALUE"})
    write_student(subs, "down", {"ex2_clipped_loss.py": "SNEAKY"})
    write_student(subs, "same", {"ex2_clipped_loss.py": "ok"})
    return subs


def _book(out: Path) -> dict[str, dict[str, str]]:
    with open(out / "gradebook.csv", newline="") as fh:
        return {r["student_id"]: r for r in csv.DictReader(fh)}


def _regrade_rows(out: Path) -> dict[str, dict[str, str]]:
    with open(out / "regrade.csv", newline="") as fh:
        return {r["student_id"]: r for r in csv.DictReader(fh)}


def _change_grader(monkeypatch):
    monkeypatch.setattr(batch, "grader_fingerprint", lambda: "fixed-test-value")


def test_regrade_reports_who_moved_on_which_test_and_why(cohort, tmp_path, monkeypatch):
    out = tmp_path / "out"
    grade(cohort, out, STAND_IN)
    assert {k: v["total"] for k, v in _book(out).items()} == {"up": "1", "down": "2", "same": "2"}
    assert not (out / "regrade.md").exists()  # the first grading is no regrade
    _change_grader(monkeypatch)
    summary = grade(cohort, out, V2)
    assert sorted(summary.graded_now) == ["down", "same", "up"]
    assert {k: v["total"] for k, v in _book(out).items()} == {"up": "2", "down": "1", "same": "2"}
    rows = _regrade_rows(out)
    assert set(rows) == {"up", "down"}  # "same" did not move
    assert (rows["up"]["test"], rows["up"]["old_score"], rows["up"]["new_score"]) == \
        ("ex2_clipped_loss · hidden · test_value", "0", "1")
    assert (rows["up"]["old_diagnosis"], rows["up"]["new_status"]) == ("max_instead_of_min", "passed")
    assert (rows["down"]["old_status"], rows["down"]["new_diagnosis"]) == ("passed", "clipped_advantage")
    md = (out / "regrade.md").read_text()
    assert "### up: 1 → 2" in md and "### down: 2 → 1" in md and "max_instead_of_min → passed" in md
    assert "3 students regraded, 2 with a changed test; 1 up, 1 down" in md


def test_never_lower_keeps_the_published_score_and_says_so(cohort, tmp_path, monkeypatch):
    out = tmp_path / "out"
    grade(cohort, out, STAND_IN)
    _change_grader(monkeypatch)
    grade(cohort, out, V2, never_lower=True)
    book = _book(out)
    assert (book["down"]["total"], book["up"]["total"]) == ("2", "2")  # down kept, up raised
    assert "never lower" in book["down"]["message"] and "published 2" in book["down"]["message"]
    rows = _regrade_rows(out)
    assert rows["down"]["kept_published"] == "yes" and rows["down"]["new_score"] == "0"
    # regrade.csv names the score results.json publishes beside the regrade's own (kept: 1 of 1 by hand).
    assert rows["down"]["published_score"] == "1"
    assert rows["up"]["kept_published"] == "no" and rows["up"]["published_score"] == rows["up"]["new_score"] == "1"
    assert "never lower" in (out / "down" / "feedback.md").read_text()
    # Resuming the same batch (nothing to grade) keeps the report and the kept score.
    again = grade(cohort, out, V2, never_lower=True)
    assert again.graded_now == [] and _book(out)["down"]["total"] == "2"
    assert "### down: 2 → 2" in (out / "regrade.md").read_text()


def test_a_regrade_killed_half_way_still_reports_against_the_published_version(cohort, tmp_path, monkeypatch):
    out = tmp_path / "out"
    grade(cohort, out, STAND_IN)
    _change_grader(monkeypatch)
    # Simulate the kill: "up" was regraded by the new grader, the others not yet.
    import shutil
    half = tmp_path / "half"
    write_student(half, "up", {"ex2_clipped_loss.py": "BUG_VALUE"})
    grade(half, out, V2)
    shutil.rmtree(half)
    grade(cohort, out, V2)
    assert set(_regrade_rows(out)) == {"up", "down"}


def test_latest_only_grades_only_the_latest_submission(tmp_path):
    subs = tmp_path / "subs"
    write_student(subs, "alice", {"ex2_clipped_loss.py": "BUG_VALUE BUG_GRAD"})
    write_student(subs, "alice_2", {"ex2_clipped_loss.py": "ok"})
    write_student(subs, "bob", {"ex2_clipped_loss.py": "BUG_GRAD"})
    from grader.intake.attempts import AttemptRule  # attempts only by a stated rule (issue 19 class 8)

    summary = grade(subs, tmp_path / "out", STAND_IN, latest_only=True,
                    attempt_rule=AttemptRule(pattern=r"(?P<student>.+)_(?P<attempt>\d+)"))
    assert {k: v["total"] for k, v in _book(tmp_path / "out").items()} == {"alice": "2", "bob": "1"}  # student ids
    assert any("alice" in w for w in summary.warnings)
