"""Exercise 7's buffer-purge point without a rollout (red-team round after issue 10, class 2; issue 19, class 4).

`attacks/a38_ex7_purge_without_ppo.py` runs collect → train → purge on a
trusted RolloutBuffer holding one made-up row, beside its twin's stats-only
step (`twins/ex7_stub.py`); before the fix it earned the purge point (4/20
against 3/20, fast profile), because the purge test only asked that every
trained buffer ends purged: it now counts buffers trained on the step's
whole batch only. `attacks/a91_ex7_purge_zero_rollout.py` then purged a buffer
of zeros with as many rows as the batch (issue 19, class 4): the point now
needs parity with the reference and a buffer that held the step's own
rollout (responses, logp_old, advantages). Graded with the full profile (the training run too): no
more points than the twin on any test, the other exercise unchanged,
nothing changed outside the student's output, no process or kernel object
left, and the same grade on three reruns.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import SUITE_LIMITS
from hostile_helpers import (CANARY, read_attack, scores_by_test, write_hostile_submission, write_other_student,
                             write_twin_submission)
from hostile_guards import Guards, kernel_objects

pytestmark = pytest.mark.xdist_group("hostile")

HERE = Path(__file__).resolve().parent


def _comparable(result) -> str:
    data = result.to_results_json()
    data.get("extra_data", {}).pop("timing", None)
    return json.dumps(data, sort_keys=True)


PURGE_ATTACKS = ("a38_ex7_purge_without_ppo.py", "a91_ex7_purge_zero_rollout.py")


@pytest.mark.slow
@pytest.mark.parametrize("name", PURGE_ATTACKS)
def test_a38_purge_point_needs_the_steps_rollout(name, tmp_path, fork_server):
    from grader.grade import grade_submission

    attack = read_attack(HERE / "attacks" / name)
    exercises = [attack.target, attack.other]
    twin = grade_submission(write_twin_submission(tmp_path / "twin", attack), exercises=exercises, profile="full",
                            limits=SUITE_LIMITS)
    cohort = tmp_path / "cohort"
    other = write_other_student(cohort / "other_student")
    out = tmp_path / "grader_out"
    out.mkdir()
    objects_before = kernel_objects()
    guards = Guards([CANARY, other, out], fork_server.pid)
    try:
        folder = write_hostile_submission(cohort / "hostile", attack, guards.hints(other_student=other,
                                                                                     results_dir=out))
        runs = [grade_submission(folder, exercises=exercises, profile="full", limits=SUITE_LIMITS) for _ in range(3)]
        violations, leftovers = guards.violations(), guards.leftovers()
    finally:
        guards.restore()
        guards.close()
    assert not violations, violations
    assert not leftovers, leftovers
    assert kernel_objects() == objects_before
    assert len({_comparable(r) for r in runs}) == 1, "three gradings of the same submission differ"
    got, want = scores_by_test(runs[0]), scores_by_test(twin)
    assert set(got) == set(want)
    assert ("ex7_ppo_step", "hidden", "test_training_run_raises_mean_score") in want  # the full profile ran it
    gained = {k: (got[k][0], want[k][0]) for k in want if got[k][0] > want[k][0]}
    assert not gained, f"scored above the honest twin on (test: hostile, twin): {gained}"
    purge = ("ex7_ppo_step", "hidden", "test_ppo_step_purges_buffer")
    assert got[purge][0] == 0.0, f"{name} earned the purge point without the step's rollout"
    assert runs[0].exercises[attack.other].score == twin.exercises[attack.other].score
