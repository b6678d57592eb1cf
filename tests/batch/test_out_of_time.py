"""A submission that uses up its grading time is recorded as timed-out, never as a low "graded" score.

Found by a TA trying the tool: with `grade-batch --timeout 25`, a submission
with an endless loop in `probability_ratio` used up its clock on exercise 1;
every later call was refused, and the student was recorded as `graded` with
correct exercises scored 0 and an empty message. Which calls a clock cuts short
depends on the machine's load, so no partial score is published: status
`timed-out`, 0 points, the reason in the message (as for a killed worker).
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from grader.batch import run_batch
from ppo_course.submission_rules import SubmissionLimits
from grader.sandbox.submission_time import submission_deadline, submission_ran_out

COHORT = Path(__file__).resolve().parents[2] / "examples" / "cohort" / "submissions"
STAND_IN = "stand_in_grader:grade_submission"  # tests/batch/stand_in_grader.py (not imported from conftest:
# which folder's `conftest` module is loaded depends on the selection)


def test_ran_out_is_false_until_the_clock_refuses_a_call():
    from grader.sandbox import submission_time

    with submission_deadline(60):
        assert submission_ran_out() is False
        submission_time.out_of_time()  # what a refused or cut-short call reports
        assert submission_ran_out() is True
    with submission_deadline(60):
        assert submission_ran_out() is False  # a new submission starts clean
    assert submission_ran_out() is False


@pytest.mark.slow
def test_an_endless_loop_that_uses_up_the_clock_is_timed_out_not_graded(tmp_path, monkeypatch):
    monkeypatch.delenv("PYTHONPATH", raising=False)
    subs = tmp_path / "subs"
    for sid in ("ada", "jin"):  # jin: `while True` in probability_ratio (examples/cohort/EXPECTED.md)
        shutil.copytree(COHORT / sid, subs / sid)
    summary = run_batch(subs, tmp_path / "out", jobs=1, profile="fast", exercises=["ex1_ratio", "ex2_clipped_loss"],
                        limits=SubmissionLimits(timeout_s=8), progress=False, report=False)
    with open(tmp_path / "out" / "gradebook.csv", newline="", encoding="utf-8") as fh:
        rows = {r["student_id"]: r for r in csv.DictReader(fh)}
    assert rows["jin"]["status"] == "timed-out", rows["jin"]
    assert "longer than the limit of 8 s" in rows["jin"]["message"] and rows["jin"]["total"] == "0"
    assert rows["ada"]["status"] == "graded" and rows["ada"]["total"] == rows["ada"]["max_total"]
    feedback = (tmp_path / "out" / "jin" / "feedback.md").read_text(encoding="utf-8")
    assert "timed-out" in feedback
    assert {r.status for r in summary.records} == {"graded", "timed-out"}


def test_an_output_folder_inside_the_submissions_is_refused(tmp_path, capsys):
    """A typo like `--out class/ada` once wrote the whole class's results into ada's submission."""
    from ppo_course.cli import main

    (tmp_path / "class" / "ada").mkdir(parents=True)
    for out in (tmp_path / "class" / "ada", tmp_path / "class"):
        with pytest.raises(ValueError, match="inside the submissions folder"):
            run_batch(tmp_path / "class", out, progress=False, report=False)
        assert main(["grade-batch", str(tmp_path / "class"), "--out", str(out)]) == 2
        assert "inside the submissions folder" in capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "class" / "ada").iterdir()) == []  # nothing was written there


def test_export_of_an_unfinished_batch_warns_which_students_are_missing(tmp_path, capsys, monkeypatch):
    """A TA exported a batch they had interrupted: 5 of 10 students were silently absent from the LMS file."""
    from grader.records.gradebook import INCOMPLETE, STATE_DIR, incomplete_ids
    from ppo_course.cli import main

    for sid in ("a", "b", "c"):  # tests/batch/conftest.py puts the stand-in on the workers' path
        (tmp_path / "subs" / sid).mkdir(parents=True)
        (tmp_path / "subs" / sid / "ex1_ratio.py").write_text("x = 1\n")
    out = tmp_path / "out"
    import stand_in_grader

    stand_in_grader.install(STAND_IN, monkeypatch)
    run_batch(tmp_path / "subs", out, jobs=1, progress=False, report=False)
    assert incomplete_ids(out) is None and not (out / STATE_DIR / INCOMPLETE).exists()  # finished: no marker
    assert main(["export", str(out), "--format", "csv", "--out", str(tmp_path / "e.csv")]) == 0
    assert "did not finish" not in capsys.readouterr().err
    # What an interrupted batch leaves: the marker of what it set out to grade, and c never written.
    from grader.records.gradebook import RECORD, mark_incomplete

    mark_incomplete(out, ["b", "c"])
    (out / "c" / RECORD).unlink()
    assert incomplete_ids(out) == ["c"]  # b's record was written before the interruption
    assert main(["export", str(out), "--format", "canvas", "--out", str(tmp_path / "e2.csv")]) == 0
    err = capsys.readouterr().err
    assert "did not finish" in err and "1 student(s) are not in this export (c)" in err
