"""A finished exercise 7 over an earlier exercise's stub names the stub (issue 21, item 10).

`step_checks.unimplemented_dependency` reads the stubs' message
(`NotImplementedError("<module>.<qualname>: ...")`, tools/make_exercises.py),
from a plain exception (`ppo-course check`) or from the sandbox's `StudentError`
fields (`type_name`, `message`) in grading; exercise 7's own stub is not a dependency.
"""

from __future__ import annotations

from types import SimpleNamespace

from ppo_course.grading_kit.diagnoses import DIAGNOSES
from ppo_course.grading_kit.step_checks import unimplemented_dependency

STUB = "ex5_rollout_buffer.RolloutBuffer.add: implement: check the phase (RuntimeError) ..."


def test_a_stub_of_exercise_5_is_named_in_check_and_in_grading():
    want = ("ex7_needs_ex5", "ex5_rollout_buffer.RolloutBuffer.add is not implemented yet; exercise 7 uses it")
    assert unimplemented_dependency(NotImplementedError(STUB)) == want
    assert unimplemented_dependency(SimpleNamespace(type_name="NotImplementedError", message=STUB)) == want
    assert unimplemented_dependency(SimpleNamespace(type_name="NotImplementedError",
                                                    message="NotImplementedError: " + STUB)) == want
    assert want[0] in DIAGNOSES


def test_other_errors_and_exercise_7s_own_stub_are_not_dependencies():
    assert unimplemented_dependency(NotImplementedError("ex7_ppo_step.ppo_step: implement the nine stages")) is None
    assert unimplemented_dependency(NotImplementedError()) is None
    assert unimplemented_dependency(ValueError(STUB)) is None
    assert unimplemented_dependency(SimpleNamespace(type_name="RuntimeError", message=STUB)) is None


def test_every_earlier_exercise_has_its_id():
    for n in (1, 2, 3, 4, 5, 6):
        assert f"ex7_needs_ex{n}" in DIAGNOSES
