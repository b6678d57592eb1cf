"""`ppo-course grade` goes through the batch's per-student step: one shape of results.json, one time-out
and fault rule (grader/student.py), whichever path grades.

Expected values are the batch's rules as CONTRACT.md and the gradebook state them, written by hand:
an empty folder is status ``empty`` with 0 points; a grading cut short by its clock publishes no partial
score (``timed-out``, 0); a grading that raises is a grader fault: exit 3 and no file.
"""

from __future__ import annotations

import json

from ppo_course.cli import main


def _graded_with(monkeypatch, fake) -> None:
    """Make the in-process runner's ``grade_submission`` the function ``fake`` (no sandbox is started)."""
    import grader.grade

    monkeypatch.setattr(grader.grade, "grade_submission", fake)


def test_an_empty_folder_is_status_empty_with_0_points(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "notes.txt").write_text("no code here\n")
    out = tmp_path / "results.json"
    assert main(["grade", str(tmp_path / "sub"), "--out", str(out), "--exercises", "ex1_ratio", "--quiet"]) == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["score"] == 0
    assert data["extra_data"]["status"] == data["extra_data"]["batch_status"] == "empty"
    assert data["output"].startswith("Status: empty. the submission holds no Python file")


def test_a_grading_cut_short_by_its_clock_publishes_no_partial_score(tmp_path, monkeypatch):
    from grader.student import zero_result

    def fake(request, **kw):  # 1 point earned before the clock ran out
        result = zero_result(request.profile, ["ex1_ratio"], "x")
        tests = [result.tests[0].model_copy(update={"score": 1.0, "status": "passed"}), *result.tests[1:]]
        return result.model_copy(update={"status": "graded", "message": "", "tests": tests, "out_of_time": True})

    _graded_with(monkeypatch, fake)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "ex1_ratio.py").write_text("x = 1\n")
    out, feedback = tmp_path / "results.json", tmp_path / "feedback.md"
    assert main(["grade", str(tmp_path / "sub"), "--out", str(out), "--feedback", str(feedback),
                 "--exercises", "ex1_ratio", "--quiet"]) == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["score"] == 0 and all(t["score"] == 0 for t in data["tests"])
    assert data["extra_data"]["status"] == "timed-out"
    assert "longer than the limit of 600 s" in data["output"]
    assert "**Status: timed-out.**" in feedback.read_text(encoding="utf-8")


def test_a_grading_that_raises_is_a_grader_fault_and_removes_stale_files(tmp_path, monkeypatch, capsys):
    def fake(request, **kw):
        raise RuntimeError("the reference is broken")

    _graded_with(monkeypatch, fake)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "ex1_ratio.py").write_text("x = 1\n")
    out = tmp_path / "results.json"
    out.write_text('{"score": 10}')  # an earlier run's score must not stand for this grading
    assert main(["grade", str(tmp_path / "sub"), "--out", str(out), "--exercises", "ex1_ratio", "--quiet"]) == 3
    assert not out.exists()
    err = capsys.readouterr().err
    assert "grader fault" in err and "RuntimeError: the reference is broken" in err
