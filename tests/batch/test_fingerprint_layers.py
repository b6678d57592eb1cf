"""Which grader files the fingerprint hashes after the move into folders (grader/fingerprint.py, issue 22).

The expected sets are the pre-move lists (the flat modules that never change a score), written by hand
at their new paths: what decides a grade is hashed, the TA-side layers are not.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.fingerprint import _skipped

TA_SIDE = ["batch.py", "student.py", "fingerprint.py", "records/gradebook.py", "records/outcome.py", "batch_run.py",
           "records/out_folder.py", "intake/attempts.py", "intake/class_list.py",
           "runners/workers.py", "runners/warm.py", "runners/cluster.py",
           "reports/report.py", "reports/similarity.py", "reports/export.py", "commands/grade_batch.py",
           "platforms/gradescope/run.py", "platforms/gradescope/setup.sh"]
GRADE_DECIDING = ["grade.py", "points.py", "points.yaml", "records/results.py", "intake/submission.py",
                  "mistakes/buggy_variants.py", "mistakes/variants_ex1_ex3.py", "mistakes/variants_ex4_ex6.py",
                  "mistakes/behaviours.yaml", "mistakes/diagnose.py",
                  "hidden/support.py", "sandbox/sandbox.py", "platforms/release.py", "platforms/lti_publish.py",
                  "platforms/nbgrader_course/autograde.py", "figure_runs.py"]


@pytest.mark.parametrize("rel", TA_SIDE)
def test_ta_side_layers_are_left_out(rel):
    assert _skipped(Path(rel))


@pytest.mark.parametrize("rel", GRADE_DECIDING)
def test_what_decides_a_grade_is_hashed(rel):
    assert not _skipped(Path(rel))


def test_every_listed_file_exists():
    root = Path(__file__).resolve().parents[2] / "grader"
    missing = [rel for rel in TA_SIDE + GRADE_DECIDING if not (root / rel).is_file()]
    assert not missing
