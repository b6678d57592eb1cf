"""A fast, deterministic stand-in for ``grader.grade.grade_submission`` (batch-mechanics tests only).

Why a stand-in: the batch tests kill, resume and regrade whole cohorts many
times over; with the real hidden graders each run would take minutes on the
two shared cores. The stand-in honours the documented interface
(``grade_submission(path, *, exercises=None, profile=...) -> GradeResult``)
and returns the real ``grader.results.GradeResult`` model, so the results.json
the batch handles has the real schema. The demo test (test_demo.py) uses the
real grader.

Scoring, per exercise module found at the submission's root or under one top
folder: two tests of 1 point. ``test_value`` fails when the source holds
``BUG_VALUE`` (diagnosis ``max_instead_of_min``); ``test_grad`` fails on
``BUG_GRAD`` (diagnosis ``ratio_detached``). A module with a NUL byte is
"broken" (0). Markers that act on the grading process itself:
``STANDIN_HANG`` sleeps forever, ``STANDIN_CRASH`` kills the process,
``STANDIN_SLOW`` sleeps 0.4 s.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from grader.points import EXERCISES
from grader.results import ExerciseResult, GradeResult, TestResult


def _root(path: Path) -> Path:
    entries = [p for p in path.iterdir() if not p.name.startswith(".")]
    if not any(p.suffix == ".py" for p in entries) and len(entries) == 1 and entries[0].is_dir():
        return entries[0]
    return path


def grade_submission(path, *, exercises=None, profile="full") -> GradeResult:
    """Grade ``path`` with the stand-in rules of the module docstring."""
    path = Path(path)
    root = _root(path)
    stems = [s for s in EXERCISES if not exercises or s in exercises]
    results: dict[str, ExerciseResult] = {}
    tests: list[TestResult] = []
    any_py = any(root.rglob("*.py"))
    for stem in stems:
        module = root / f"{stem}.py"
        if not module.is_file():
            results[stem] = ExerciseResult(score=0, max_score=2, status="missing", message=f"{stem}.py not found")
            continue
        source = module.read_bytes()
        if b"\x00" in source:
            results[stem] = ExerciseResult(score=0, max_score=2, status="broken", message="cannot import: NUL byte")
            continue
        if b"STANDIN_HANG" in source:
            time.sleep(10_000)
        if b"STANDIN_CRASH" in source:
            os._exit(3)
        if b"STANDIN_SLOW" in source:
            time.sleep(0.4)
        score = 0.0
        for test, marker, diagnosis in (("test_value", b"BUG_VALUE", "max_instead_of_min"),
                                        ("test_grad", b"BUG_GRAD", "ratio_detached")):
            ok = marker not in source
            score += ok
            tests.append(TestResult(exercise=stem, kind="hidden", test=test, score=float(ok), max_score=1.0,
                                    status="passed" if ok else "failed",
                                    output="" if ok else f"wrong ({diagnosis})", visibility="after_published",
                                    diagnosis=None if ok else diagnosis))
        results[stem] = ExerciseResult(score=score, max_score=2, status="graded")
    return GradeResult(submission=str(path), status="graded" if any_py else "rejected",
                       message="" if any_py else "the submission is empty", grader_version="stand-in",
                       profile=profile, exercises=results, tests=tests)
