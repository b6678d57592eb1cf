"""Student classes whose construction gives a plain value (red-team attack a105, exercise 6).

`tests/hostile/attacks/a105_ex5_constructor_returns_plain.py` is graded by
`test_hostile.py::test_attack_gains_nothing` (exercise 5, against its twin). Here
exercise 6's `AdaptiveKLController` gets the same treatment both ways an honest
student could also write by mistake: a function that returns the initial
coefficient (a float), and a class whose `__new__` returns None. On main, the
tests' `ctl.value` / `ctl.update(...)` raised AttributeError in the grader's own
code: `grader_error` on the controller's tests. Now `RemoteModule.new` gives only
an instance handle, else `StudentProtocolError` (the student's TypeError).
"""

from __future__ import annotations

import os

import pytest

from hostile_helpers import SOLUTIONS, scores_by_test
from hostile_limits import SUITE_LIMITS

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("hostile")]

CONTROLLERS = {
    "function": "def AdaptiveKLController(init_kl_coef=0.05, target=6.0, horizon=10000):\n    return init_kl_coef\n",
    "new_returns_none": ("class AdaptiveKLController:\n    def __new__(cls, *args, **kwargs):\n        return None\n"
                         "    value = 0.05\n    def update(self, current, n_steps):\n        pass\n"),
}


@pytest.mark.parametrize("variant", sorted(CONTROLLERS))
def test_a105_a_controller_that_is_no_instance_is_the_students_error(tmp_path, fork_server, variant):
    from grader.grade import grade_submission

    folder = tmp_path / variant
    folder.mkdir()
    source = (SOLUTIONS / "ex6_kl_reward.py").read_text()
    # the solution's functions stay (their tests pass as before); the controller is replaced
    (folder / "ex6_kl_reward.py").write_text(source + "\n\n" + CONTROLLERS[variant])
    for path in [folder, *folder.iterdir()]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    results = [grade_submission(folder, exercises=["ex6_kl_reward"], profile="fast", limits=SUITE_LIMITS)
               for _ in range(2)]
    for result in results:
        blamed = [t.test for t in result.tests if t.diagnosis == "grader_error"]
        assert not blamed, f"{variant}: the grader blamed itself on {blamed}"
    controller = [t for t in results[0].tests if "adaptive_kl" in t.test]
    assert controller and all(t.score == 0 for t in controller), [(t.test, t.score) for t in controller]
    assert all(t.diagnosis == "raises_error" for t in controller), [(t.test, t.diagnosis) for t in controller]
    assert scores_by_test(results[0]) == scores_by_test(results[1])


def test_a107_a_method_that_is_data_is_the_students_error(tmp_path, fork_server):
    """a107: the controller's ``update`` is the number 5. `RemoteObject.getattr` read it back as data and the
    tests' own ``ctl.update(12.0, 100)`` raised TypeError in the grader (`grader_error` on the three
    controller tests, on main). The stub's methods are now always called in the child (`stub_methods`)."""
    from grader.grade import grade_submission

    folder = tmp_path / "update_is_data"
    folder.mkdir()
    source = (SOLUTIONS / "ex6_kl_reward.py").read_text()
    (folder / "ex6_kl_reward.py").write_text(
        source + "\n\nclass AdaptiveKLController(AdaptiveKLController):\n    update = 5\n")
    for path in [folder, *folder.iterdir()]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    result = grade_submission(folder, exercises=["ex6_kl_reward"], profile="fast", limits=SUITE_LIMITS)
    blamed = [t.test for t in result.tests if t.diagnosis == "grader_error"]
    assert not blamed, f"the grader blamed itself on {blamed}"
    hand = next(t for t in result.tests if t.test == "test_adaptive_kl_hand_case")
    assert hand.score == 0 and hand.diagnosis == "raises_error", (hand.diagnosis, hand.score)
    defaults = next(t for t in result.tests if t.test == "test_adaptive_kl_defaults")
    assert defaults.diagnosis != "grader_error"  # reads `value` only: the solution's, whatever it scores
