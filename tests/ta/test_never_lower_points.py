"""``--never-lower`` never lowers an unchanged submission's exercise; when a maximum falls below the published
score, the note states the rule. Expected values by hand from the tests' points below."""

from __future__ import annotations

from grader.records.results import ExerciseResult, GradeResult, TestResult
from grader.reports.regrade import never_lower


def _result(points: dict[str, tuple[float, float, bool]]) -> GradeResult:
    """ex1_ratio with tests {name: (score, max, passed)}."""
    tests = [TestResult(exercise="ex1_ratio", kind="hidden", test=n, score=s, max_score=m,
                        status="passed" if ok else "failed", output="", visibility="visible",
                        diagnosis=None if ok else "wrong_value") for n, (s, m, ok) in points.items()]
    return GradeResult(submission="s", status="graded", grader_version="t", profile="full", tests=tests,
                       exercises={"ex1_ratio": ExerciseResult(score=sum(v[0] for v in points.values()),
                                                              max_score=sum(v[1] for v in points.values()))})


def test_a_points_move_inside_an_exercise_keeps_the_published_score():
    """Published: a 5/5 and b 5/5 = 10 of 10. This version: a worth 3, b worth 7 (maximum still 10); the
    regrade gives a 3/3, b failed 0/7 = 3. Before: a clamped to 3, b kept 5 = 8 (a drop from 10 with the same
    maximum). Now: 10 (b raised to 7 within its new points), tests summing to the exercise."""
    old = _result({"a": (5.0, 5.0, True), "b": (5.0, 5.0, True)})
    new = _result({"a": (3.0, 3.0, True), "b": (0.0, 7.0, False)})
    kept, notes, _ = never_lower(new, old)
    assert kept.exercises["ex1_ratio"].score == 10.0
    assert sum(t.score for t in kept.tests) == 10.0 and all(t.score <= t.max_score for t in kept.tests)
    assert notes == ["ex1_ratio kept at its published 10 (the regrade gives 3)"]


def test_a_lower_maximum_states_the_rule():
    """Published 10 of 10; this version's maximum is 8 (a 3, b 5), the regrade gives 3: kept at 8, said so."""
    old = _result({"a": (5.0, 5.0, True), "b": (5.0, 5.0, True)})
    new = _result({"a": (3.0, 3.0, True), "b": (0.0, 5.0, False)})
    kept, notes, _ = never_lower(new, old)
    assert kept.exercises["ex1_ratio"].score == 8.0
    assert len(notes) == 1 and "maximum for ex1_ratio (8)" in notes[0] and "published 10" in notes[0], notes
