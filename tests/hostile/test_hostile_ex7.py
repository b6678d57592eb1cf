"""Exercise 7 scored without doing PPO (issue 10, class 2): attacks a80/a81 against their honest twin.

The twin (``twins/ex7_no_advantage_whitening.py``) is the stub's step without
the advantage whitening: real PPO that learns, but not the reference's, so
(parity being required) it earns no training-run points. Each attack runs the
twin and then sets the weights by hand towards the toy reward model's
favourite tokens, with made-up stats (a81 only where it thinks a call is a
training step): before the fix, that earned the training run's points. a92
replaces the observed trace with junk (issue 19, class 6): before the fix the
grader's diagnosis raised on it (grader_error); no test may end in grader_error. Graded in the FULL profile (the fast one skips
the 5-step training run, the target of this class). For each attack:

* on every test of exercise 7 the hostile score is at most the twin's, and
  the training run earns nothing;
* nothing changed outside the sandbox and no process is left (the suite's guards);
* the same grade on a rerun.
"""

from __future__ import annotations

import pytest

from conftest import SUITE_LIMITS
from hostile_helpers import (ATTACKS, CANARY, read_attack, scores_by_test, write_hostile_submission,
                             write_other_student, write_twin_submission)
from hostile_guards import Guards

pytestmark = pytest.mark.xdist_group("hostile")

EX7_ATTACKS = [read_attack(ATTACKS / "a80_ex7_handset_weights.py"), read_attack(ATTACKS / "a81_ex7_hidden_call_detector.py"),
               read_attack(ATTACKS / "a92_ex7_malformed_trace.py")]
TRAINING = ("ex7_ppo_step", "hidden", "test_training_run_raises_mean_score")


def _grade(folder):
    from grader.grade import grade_submission

    return grade_submission(folder, exercises=["ex7_ppo_step"], profile="full", limits=SUITE_LIMITS)


@pytest.fixture(scope="module")
def twin(tmp_path_factory, fork_server):
    folder = write_twin_submission(tmp_path_factory.mktemp("ex7twin") / "twin", EX7_ATTACKS[0])
    return _grade(folder)


@pytest.mark.slow
@pytest.mark.parametrize("attack", EX7_ATTACKS, ids=[a.name for a in EX7_ATTACKS])
def test_ex7_attack_gains_nothing(attack, tmp_path, twin, fork_server):
    cohort = tmp_path / "cohort"
    other_student = write_other_student(cohort / "other_student")
    guards = Guards([CANARY, other_student], fork_server.pid)
    try:
        folder = write_hostile_submission(cohort / "hostile", attack, guards.hints(other_student=other_student))
        hostile = _grade(folder)
        violations = guards.violations()
        leftovers = guards.leftovers()
    finally:
        guards.restore()
        guards.close()
    assert not violations, "\n".join(violations)
    assert not leftovers, "\n".join(leftovers)
    assert hostile.status == "graded", hostile.message
    # The grader's own code never fails on the child's data (issue 19, class 6: a92's malformed trace).
    broken = [t.test for t in hostile.tests if t.diagnosis == "grader_error"]
    assert not broken, f"{attack.name}: grader_error on {broken}"
    got, want = scores_by_test(hostile), scores_by_test(twin)
    assert set(got) == set(want)
    assert want[TRAINING][0] == 0.0, "the twin is not the reference's step: without parity, no training points"
    assert got[TRAINING][0] == 0.0, f"{attack.name} earned training-run points without PPO"
    gained = {k: (got[k][0], want[k][0]) for k in want if got[k][0] > want[k][0]}
    assert not gained, f"{attack.name} scored above its honest twin: {gained}"
    again = scores_by_test(_grade(folder))
    assert again == got, f"{attack.name}: a rerun gave another grade"
