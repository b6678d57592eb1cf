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


def _check_ex7(folder, ex7_source):
    """`ppo-course check -e ex7` on the solutions with exercise 6 a stub and ``ex7_source`` as exercise 7."""
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    folder.mkdir()
    for path in (repo / "solutions").glob("ex*.py"):
        shutil.copy(path, folder)
    shutil.copy(repo / "exercises" / "ex6_kl_reward.py", folder)  # the stub a student starts from
    (folder / "ex7_ppo_step.py").write_text(ex7_source, encoding="utf-8")
    env = dict(os.environ, COLUMNS="200", PYTHONPATH=str(repo))
    return subprocess.run([sys.executable, "-m", "ppo_course.cli", "check", str(folder), "-e", "ex7"],
                          capture_output=True, text=True, env=env, timeout=600).stdout


def test_a_step_still_a_stub_says_so_before_exercise_6s_stub(tmp_path):
    """Exercise 7's own stub over exercise 6's: "not implemented", not "your step itself may be fine"; a finished
    step over exercise 6's stub still names exercise 6 (the controller's stub raises at the step's first use)."""
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    stub = _check_ex7(tmp_path / "stub", (repo / "exercises" / "ex7_ppo_step.py").read_text(encoding="utf-8"))
    assert "not implemented" in stub.lower() and "Finish ex6_kl_reward" not in stub, stub[-2000:]
    done = _check_ex7(tmp_path / "done", (repo / "solutions" / "ex7_ppo_step.py").read_text(encoding="utf-8"))
    assert "Finish ex6_kl_reward" in done, done[-2000:]
