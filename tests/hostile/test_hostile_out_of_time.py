"""Hostile students against the out-of-time rule (a submission that uses up its clock is timed-out, 0).

``a86``: a correct ex1 and an ex2 that loops for ever. ``grade-batch`` (and
Gradescope, through the same `grader.student.grade_entry`) records it as
timed-out with 0: which calls the clock cuts short depends on the machine's load,
so no partial score is published. nbgrader's autograde (``IsolatedGrade``) read
the same ``grade_submission`` result's exercise scores directly and gave ex1's
10 points: measured 10/20 there against 0 (timed-out) in the batch, and a
number that depends on the load. Graded in one real batch (``jobs=1``), the
looping student first, so that the honest classmate graded next in the same
warm worker must still be graded, at full marks (a timed-out grading does not
spill onto the next one).
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest

from hostile_helpers import SOLUTIONS

pytestmark = pytest.mark.xdist_group("hostile")

EXERCISES = ["ex1_ratio", "ex2_clipped_loss"]
LOOP = "\n\ndef clipped_surrogate_loss(*args, **kwargs):\n    while True:\n        pass\n"




@pytest.mark.slow
def test_a86_a_clock_run_out_scores_0_in_every_path_and_spares_the_next_student(cohort_root, monkeypatch):
    from grader.batch import SubmissionLimits, run_batch
    from grader.platforms.nbgrader_course.autograde import exercise_points, grade_modules

    monkeypatch.delenv("PYTHONPATH", raising=False)
    honest = {f"{s}.py": (SOLUTIONS / f"{s}.py").read_text(encoding="utf-8") for s in EXERCISES}
    looping = {**honest, "ex2_clipped_loss.py": honest["ex2_clipped_loss.py"] + LOOP}
    subs = cohort_root / "subs"
    for sid, mods in {"a-looping": looping, "b-honest": honest}.items():
        (subs / sid).mkdir(parents=True)
        for name, text in mods.items():
            (subs / sid / name).write_text(text, encoding="utf-8")
    for path in [subs, *subs.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    run_batch(subs, cohort_root / "out", jobs=1, profile="fast", exercises=EXERCISES,
              limits=SubmissionLimits(timeout_s=8), progress=False, report=False, log=lambda m: None)
    with open(cohort_root / "out" / "gradebook.csv", newline="", encoding="utf-8") as fh:
        rows = {r["student_id"]: r for r in csv.DictReader(fh)}
    assert (rows["a-looping"]["status"], rows["a-looping"]["total"]) == ("timed-out", "0"), rows["a-looping"]
    assert rows["b-honest"]["status"] == "graded" and rows["b-honest"]["total"] == rows["b-honest"]["max_total"]

    outcome = grade_modules({Path(n).stem: t for n, t in looping.items()}, "fast", 8.0)
    assert outcome.status == "timed-out"  # the same clock ran out in nbgrader's path, the same step's rule
    for stem in EXERCISES:  # no grade cell publishes a partial score
        points, feedback = exercise_points(outcome, stem, 8.0)
        assert points == 0.0 and "longer than the limit of 8 s" in feedback
