"""The real grader after a change to one hidden test's points (the demo regrade test only).

``grader.grade.grade_submission`` unchanged, except that ex4's hidden
``test_gae_no_bootstrap_past_last_token`` is worth 2 points instead of 1 (the
change a TA makes in grader/points.yaml when a test was under-weighted).
"""

from __future__ import annotations

from grader.grade import grade_submission as grade_v1
from grader.records.results import ExerciseResult

TEST = "test_gae_no_bootstrap_past_last_token"


def grade_submission(request, **kw):
    """Version 1's result with the one test's points doubled (and its exercise's score and max); ``request`` is the
    worker's ``GradeRequest``."""
    result = grade_v1(request, **kw)
    for t in result.tests:
        if t.exercise == "ex4_gae" and t.kind == "hidden" and t.test == TEST:
            t.score, t.max_score = 2 * t.score, 2 * t.max_score
            ex = result.exercises["ex4_gae"]
            result.exercises["ex4_gae"] = ExerciseResult(score=ex.score + t.score / 2, max_score=ex.max_score + 1,
                                                         status=ex.status, message=ex.message)
    return result
