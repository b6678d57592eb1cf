"""Grading with the per-version caches and hypothesis' replayed examples gives what grading without them gives,
byte for byte, whether the caches are cold or warm (`grader.hidden.cache`, `grader.hidden.hypothesis_replay`).

Two demo students whose mistakes exercise the cached paths: chen (exercises 2 and 3: hypothesis tests that
fail on an example, diagnoses from the buggy variants) and ola (exercise 7: a step that differs from the
reference, diagnosed from the cached reference trace; the training run).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grader.hidden import cache

pytestmark = pytest.mark.xdist_group("grader")

COHORT = Path(__file__).resolve().parents[2] / "examples" / "cohort" / "submissions"
CASES = [("chen", ["ex2_clipped_loss", "ex3_full_loss"]), ("ola", ["ex7_ppo_step"])]


def _graded(student: str, exercises: list[str]) -> tuple[str, str]:
    from grader.grade import grade_submission

    result = grade_submission(COHORT / student, exercises=exercises)
    data = result.to_results_json()
    data.get("extra_data", {}).pop("timing", None)
    return json.dumps(data, sort_keys=True), result.feedback_markdown()


@pytest.mark.parametrize("student,exercises", CASES, ids=[c[0] for c in CASES])
def test_cached_grading_is_uncached_grading(student, exercises, monkeypatch):
    monkeypatch.setenv("PPO_COURSE_NO_GRADER_CACHE", "1")
    monkeypatch.setenv("PPO_COURSE_NO_HYPOTHESIS_REPLAY", "1")
    plain = _graded(student, exercises)
    monkeypatch.delenv("PPO_COURSE_NO_GRADER_CACHE")
    monkeypatch.delenv("PPO_COURSE_NO_HYPOTHESIS_REPLAY")
    cache.clear()
    cold = _graded(student, exercises)
    misses = cache.stats()["misses"]
    warm = _graded(student, exercises)
    assert cache.stats()["misses"] == misses and cache.stats()["hits"] > 0  # the second grading was served warm
    assert cold == plain
    assert warm == plain
    assert "Failed" in plain[1]  # the student's mistakes were graded (not a vacuous comparison)
