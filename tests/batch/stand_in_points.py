"""The stand-in grader after a points change (tests only): ``test_value`` is worth 0.5 instead of 1.

Everything else as ``stand_in_grader`` (same tests, same verdicts): a module with no marker scores
1.5 / 1.5, one with ``BUG_VALUE`` 1 / 1.5, one with ``BUG_GRAD`` 0.5 / 1.5.
"""

from __future__ import annotations

from stand_in_grader import grade_submission as grade_v1

from grader.records.results import ExerciseResult


def grade_submission(path, *, exercises=None, profile="full", submission_limits=None, staged=False):
    """Version 1's result with ``test_value`` at half its points (score and max), exercises summed again."""
    result = grade_v1(path, exercises=exercises, profile=profile)
    tests = [t.model_copy(update={"score": t.score / 2, "max_score": t.max_score / 2}) if t.test == "test_value"
             else t for t in result.tests]
    exercises_out = {}
    for stem, e in result.exercises.items():
        mine = [t for t in tests if t.exercise == stem]
        exercises_out[stem] = ExerciseResult(score=sum(t.score for t in mine), max_score=1.5, status=e.status,
                                             message=e.message)
    return result.model_copy(update={"tests": tests, "exercises": exercises_out, "grader_version": "stand-in-points"})
