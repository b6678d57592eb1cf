"""The fast profile really leaves exercise 7's training run out (it is not run, not only not scored).

Before: ``grader.grade`` passed ``--deselect /abs/path/test_ex7_ppo_step.py::test_training_run...``;
pytest compares ``--deselect`` as a prefix of node ids, which are relative to the root, so nothing was
deselected and every fast-profile grading ran the training run and threw its outcome away.
"""

from __future__ import annotations

import pytest

from grader.grade import HIDDEN_DIR, REPO_ROOT, SLOW_TESTS
from ppo_course.grading_kit.collect import pytest_args


class _Ran:
    """Records the node ids pytest ran (call phase)."""

    def __init__(self) -> None:
        self.ran: list[str] = []

    def pytest_runtest_logreport(self, report) -> None:
        if report.when == "call":
            self.ran.append(report.nodeid.split("::")[-1])


def test_an_absolute_deselect_leaves_the_test_out(tmp_path):
    """Two tests, one deselected by its absolute path: only the other runs (hand count: 1)."""
    f = tmp_path / "test_two.py"
    f.write_text("def test_kept():\n    pass\n\ndef test_left_out():\n    raise AssertionError\n")
    ran = _Ran()
    code = pytest.main(pytest_args([f], tmp_path, [f"{f}::test_left_out"]), plugins=[ran])
    assert ran.ran == ["test_kept"]
    assert code == 0


def test_a_relative_deselect_and_one_outside_the_root_are_kept_as_given(tmp_path):
    """A node id already relative passes through unchanged; a path outside the root is not rewritten."""
    args = pytest_args([], tmp_path / "root", ["a/test_x.py::t", str(tmp_path / "elsewhere.py") + "::t"])
    given = [args[i + 1] for i, a in enumerate(args) if a == "--deselect"]
    assert given == ["a/test_x.py::t", str(tmp_path / "elsewhere.py") + "::t"]


def test_the_graders_slow_test_nodeid_is_deselected():
    """The node id grade.py builds for each slow test becomes the relative id pytest gives it."""
    for stem, _kind, name in SLOW_TESTS:
        args = pytest_args([], REPO_ROOT, [f"{HIDDEN_DIR / f'test_{stem}.py'}::{name}"])
        assert args[args.index("--deselect") + 1] == f"grader/hidden/test_{stem}.py::{name}"
