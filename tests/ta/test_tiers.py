"""Two grading tiers and widening visibility on Gradescope (grader/platforms/gradescope/run.py).

The metadata files follow Gradescope's documented submission_metadata.json
(https://gradescope-autograders.readthedocs.io/en/latest/submission_metadata/). Grading uses
the stand-in grader (tests/batch/stand_in_grader.py), which records the profile it was given.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from ta_support import write_student
from grader.platforms.gradescope.run import (BundleConfig, choose_profile, grade_for_gradescope, hidden_visibility_for,
                                   main, read_metadata)

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)


def metadata(tmp_path: Path, *, due: str | None, late: str | None = None, previous: int = 0) -> Path:
    path = tmp_path / "submission_metadata.json"
    path.write_text(json.dumps({
        "id": 123456, "created_at": "2026-11-30T14:22:32.365935-07:00",
        "assignment": {"due_date": due, "late_due_date": late, "title": "PPO", "total_points": "80.0"},
        "users": [{"email": "s@example.com", "id": 1, "name": "S"}],
        "previous_submissions": [{"submission_time": "2026-11-29T10:00:00-07:00", "score": 1.0,
                                  "results": {}}] * previous,
    }))
    return path


def test_fast_before_the_deadline_full_after(tmp_path):
    config = BundleConfig()
    assert config.profile == "fast"
    before = read_metadata(metadata(tmp_path, due="2026-12-02T23:00:00-07:00"))
    after = read_metadata(metadata(tmp_path, due="2026-11-30T23:00:00-07:00"))
    assert choose_profile(config, before, NOW) == "fast"
    assert choose_profile(config, after, NOW) == "full"
    # The late due date is the last deadline: still open.
    late = read_metadata(metadata(tmp_path, due="2026-11-30T23:00:00-07:00", late="2026-12-03T23:00:00-07:00"))
    assert choose_profile(config, late, NOW) == "fast"
    assert choose_profile(config.model_copy(update={"full_after_due": False}), after, NOW) == "fast"
    assert choose_profile(config, None, NOW) == "fast"  # no metadata: the submit-time tier


def test_hidden_tests_shown_from_the_nth_previous_submission(tmp_path):
    config = BundleConfig(reveal_after=3)
    for previous, want in ((0, "after_published"), (2, "after_published"), (3, "visible"), (7, "visible")):
        meta = read_metadata(metadata(tmp_path, due=None, previous=previous))
        assert hidden_visibility_for(config, meta) == want
    assert hidden_visibility_for(BundleConfig(), read_metadata(metadata(tmp_path, due=None, previous=50))) == \
        "after_published"  # reveal_after=0: never


def test_unreadable_metadata_means_defaults(tmp_path):
    bad = tmp_path / "submission_metadata.json"
    bad.write_text("{not json")
    assert read_metadata(bad) is None and read_metadata(tmp_path / "absent.json") is None


@pytest.mark.parametrize("previous, due, tier, visibility", [
    (0, "2099-01-01T00:00:00Z", "fast", "after_published"),
    (4, "2000-01-01T00:00:00Z", "full", "visible"),
])
def test_the_runner_grades_with_the_tier_and_visibility(stand_in, tmp_path, previous, due, tier, visibility):
    root = tmp_path / "autograder"
    write_student(root, "submission", {"ex2_clipped_loss.py": "BUG_VALUE"})
    metadata(root, due=due, previous=previous)
    (root / "config.json").write_text(BundleConfig(reveal_after=4).model_dump_json())
    results_path = root / "results" / "results.json"
    assert main(["--submission", str(root / "submission"), "--results", str(results_path),
                 "--config", str(root / "config.json")]) == 0
    results = json.loads(results_path.read_text())
    assert results["extra_data"]["tier"] == tier and results["extra_data"]["profile"] == tier
    hidden = [t for t in results["tests"] if "hidden" in t["tags"]]
    assert hidden and {t["visibility"] for t in hidden} == {visibility}
