"""feedback.md: a 0-point ("Reported") test of a missing or broken module adds no line (grader/records/results.py)."""

from __future__ import annotations

from grader.records.results import ExerciseResult, GradeResult, TestResult


def _result(status: str, diagnosis: str) -> GradeResult:
    tests = [
        TestResult(exercise="ex7_ppo_step", kind="hidden", test="test_ppo_step_matches_reference", score=0.0,
                   max_score=5.0, status="failed", output="", visibility="after_published", diagnosis=diagnosis),
        TestResult(exercise="ex7_ppo_step", kind="hidden", test="test_ppo_step_with_own_pieces", score=0.0,
                   max_score=0.0, status="failed", output="", visibility="after_published", diagnosis=diagnosis,
                   doc="ppo_step on your own ex1-ex6"),
    ]
    return GradeResult(submission="s", status="graded", grader_version="t", profile="fast",
                       exercises={"ex7_ppo_step": ExerciseResult(score=0.0, max_score=5.0, status=status,
                                                                 message="ex7_ppo_step.py is not in the submission.")},
                       tests=tests)


def test_no_reported_line_when_the_module_is_missing_or_broken():
    for status, diagnosis in (("missing", "module_missing"), ("broken", "module_broken")):
        md = _result(status, diagnosis).feedback_markdown()
        assert "Reported (0 points)" not in md and "test_ppo_step_with_own_pieces" not in md
        assert "ex7_ppo_step.py is not in the submission." in md


def test_reported_line_stays_for_a_graded_module():
    md = _result("graded", "ppo_step_own_pieces_differ").feedback_markdown()
    assert "Reported (0 points): `test_ppo_step_with_own_pieces` did not pass" in md
