"""A submission that draws from the global random generators is graded the same on every run.

`attacks/a37_ex1_global_rng_lottery.py` answers wrongly on draws from
Python's `random`, numpy's and torch's global generators. Reruns inside one
test process share one fork server (every child forks from the same state),
so this test grades it with three separate `ppo-course grade` commands (a
fresh fork server each, as three regrades would): before the fix they gave
three different scores. Asserted: byte-identical results.json (timing
aside) on the three runs, no more points than the twin, the other exercise
unchanged, nothing changed outside the student's output, no process left.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hostile_helpers import CANARY, read_attack, scores_by_test, write_hostile_submission, write_other_student
from hostile_guards import Guards

pytestmark = pytest.mark.xdist_group("hostile")

HERE = Path(__file__).resolve().parent


def _grade_cli(folder: Path, out: Path, exercises: list[str]) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PPO_COURSE_FORKSERVER")}
    subprocess.run([sys.executable, "-m", "ppo_course.cli", "grade", str(folder), "--out", str(out),
                    "--exercises", ",".join(exercises), "--profile", "fast", "--quiet"],
                   check=True, env=env, timeout=600)
    data = json.loads(out.read_text())
    data.get("extra_data", {}).pop("timing", None)
    return data


@pytest.mark.slow
def test_a37_global_rng_lottery_grades_the_same_in_three_fresh_graders(tmp_path, twin_results, fork_server):
    attack = read_attack(HERE / "attacks" / "a37_ex1_global_rng_lottery.py")
    exercises = [attack.target, attack.other]
    twin = twin_results(attack)
    cohort = tmp_path / "cohort"
    other = write_other_student(cohort / "other_student")
    out = tmp_path / "grader_out"
    out.mkdir()
    results = tmp_path / "results"  # the grader_out canary must stay untouched
    results.mkdir()
    guards = Guards([CANARY, other, out], fork_server.pid)
    try:
        folder = write_hostile_submission(cohort / "hostile", attack, guards.hints(other_student=other,
                                                                                     results_dir=out))
        runs = [_grade_cli(folder, results / f"results{i}.json", exercises) for i in range(3)]
        violations, leftovers = guards.violations(), guards.leftovers()
    finally:
        guards.restore()
        guards.close()
    assert not violations, violations
    assert not leftovers, leftovers
    texts = {json.dumps(r, sort_keys=True) for r in runs}
    assert len(texts) == 1, "three gradings of the same submission differ: " + str([r["score"] for r in runs])
    got = {t["name"]: t["score"] for t in runs[0]["tests"]}
    want = {" · ".join(k): v[0] for k, v in scores_by_test(twin).items()}
    assert set(got) == set(want), "the hostile and honest gradings ran different tests"
    gained = {k: (got[k], want[k]) for k in want if got[k] > want[k]}
    assert not gained, f"scored above the honest twin on (test: hostile, twin): {gained}"
    assert runs[0]["extra_data"]["exercises"][attack.other]["score"] == twin.exercises[attack.other].score
