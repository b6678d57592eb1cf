"""The stand-in grader after a fix to one hidden test (regrade tests only).

Version 1 is ``tests/batch/stand_in_grader.py``. Its ``test_value`` was wrong in two ways,
both fixed here: it failed any module holding ``BUG_VALUE`` (a false alarm: now that test
passes it), and it missed the mistake marked ``SNEAKY`` (now failed, diagnosis
``clipped_advantage``). Every other test, point and rule is version 1's.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Batch workers start with `python -I` and only this module's folder on their path: version 1
# lives in tests/batch.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "batch"))

from grader.records.results import ExerciseResult  # noqa: E402
from stand_in_grader import _root  # noqa: E402
from stand_in_grader import grade_submission as grade_v1  # noqa: E402


def grade_submission(request, *, exercises=None, profile="full", **kw):
    """Version 1's result with ``test_value`` re-judged by the fixed rule (module docstring); ``request`` is the
    worker's ``GradeRequest`` (or a path)."""
    result = grade_v1(request, exercises=exercises, profile=profile)
    root = _root(Path(getattr(request, "submission", request)))
    for test in result.tests:
        if test.test != "test_value":
            continue
        ok = b"SNEAKY" not in (root / f"{test.exercise}.py").read_bytes()
        test.score, test.status = float(ok), "passed" if ok else "failed"
        test.diagnosis = None if ok else "clipped_advantage"
        test.output = "" if ok else "wrong (clipped_advantage)"
    for stem, ex in result.exercises.items():
        if ex.status == "graded":
            score = sum(t.score for t in result.tests if t.exercise == stem)
            result.exercises[stem] = ExerciseResult(score=score, max_score=ex.max_score, status="graded")
    return result
