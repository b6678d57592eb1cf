"""`check` keeps typed results (issue 22 item 1) and shows padding as unspecified (issue 21 item 14).

The states and places come from the exception objects where the student's module raised them
(`check_support.local.LocalProvider`), never from a traceback's text: a file name that looks like a
traceback line, or a message that names another module, cannot fool them.
"""

from __future__ import annotations

import sys

import pytest
import torch

from ppo_course.check_support.local import LocalProvider
from ppo_course.check_support.results import CheckRun, ModuleReport, TestOutcome
from ppo_course.grading_kit.feedback import Mismatch, expect_close
from ppo_course.grading_kit.provider import ModuleUnavailable

pytestmark = pytest.mark.xdist_group("grader")

STEMS = ("ex1_ratio", "ex4_gae", "ex5_rollout_buffer", "helper")


@pytest.fixture
def clean_imports():
    """Leave no student module or sys.path entry behind (the provider imports into this process)."""
    path = list(sys.path)
    yield
    sys.path[:] = path
    for stem in STEMS:
        sys.modules.pop(stem, None)


def test_a_syntax_error_in_a_helper_is_placed_in_the_helper(tmp_path, clean_imports):
    (tmp_path / "helper.py").write_text("x = 1\n\ndef f(:\n    pass\n", encoding="utf-8")
    # A message that mentions another file and line must not be read as the place of the error.
    (tmp_path / "ex4_gae.py").write_text('"""File "ex9.py", line 99"""\nimport helper\n', encoding="utf-8")
    provider = LocalProvider(tmp_path)
    with pytest.raises(ModuleUnavailable):
        provider.load("ex4_gae")
    report = provider.modules["ex4_gae"]
    assert (report.state, report.error_type, report.error_file, report.error_line) == (
        "syntax_error", "SyntaxError", "helper.py", 3)


def test_an_import_error_is_placed_at_the_students_own_frame(tmp_path, clean_imports):
    (tmp_path / "ex1_ratio.py").write_text("import torch\n\n\nVALUE = undefined_name + 1\n", encoding="utf-8")
    provider = LocalProvider(tmp_path)
    with pytest.raises(ModuleUnavailable):
        provider.load("ex1_ratio")
    report = provider.modules["ex1_ratio"]
    assert (report.state, report.error_type, report.error_file, report.error_line) == (
        "import_error", "NameError", "ex1_ratio.py", 4)


def test_not_implemented_names_the_raising_function_by_its_frame(tmp_path, clean_imports):
    (tmp_path / "ex5_rollout_buffer.py").write_text(
        "class RolloutBuffer:\n    def add(self, x):\n        raise NotImplementedError('ex1_ratio.other: decoy')\n",
        encoding="utf-8")
    provider = LocalProvider(tmp_path)
    buffer = provider.load("ex5_rollout_buffer").new("RolloutBuffer")
    with pytest.raises(NotImplementedError) as caught:
        buffer.add(1)
    assert provider.classify_and_record(caught.value)[0] == "not_implemented"
    expected = "RolloutBuffer.add" if sys.version_info >= (3, 11) else "add"  # co_qualname is 3.11+
    assert provider.modules["ex5_rollout_buffer"].not_implemented == [expected]
    assert "ex1_ratio" not in provider.modules  # the message's decoy is not read


def test_reports_from_two_children_merge():
    run = CheckRun()
    run.add_modules({"ex5_rollout_buffer": {"not_implemented": ["RolloutBuffer.add"]}})
    run.add_modules({"ex5_rollout_buffer": {"not_implemented": ["RolloutBuffer.add", "RolloutBuffer.purge"]}})
    run.add_outcome(TestOutcome("ex4_gae", "t", passed=True, items=2))
    run.add_outcome(TestOutcome("ex4_gae", "t", passed=False, diagnosis="wrong_value", detail="d", items=1))
    assert run.module("ex5_rollout_buffer").not_implemented == ["RolloutBuffer.add", "RolloutBuffer.purge"]
    assert run.module("ex1_ratio") == ModuleReport()
    (outcome,) = run.outcomes
    assert (outcome.passed, outcome.items, outcome.diagnosis) == (False, 3, "wrong_value")


def test_expected_shows_padding_as_unspecified():
    """Padding is neither compared nor shown as the reference's 0: each padding entry reads '·'."""
    want = torch.tensor([[1.0, 2.0, 0.0], [3.0, 0.0, 0.0]])
    got = torch.tensor([[1.0, 5.0, 7.0], [3.0, 9.0, -4.0]])
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
    with pytest.raises(Mismatch) as caught:
        expect_close(got, want, rtol=0, atol=1e-6, mask=mask, what="f")
    detail = caught.value.detail
    assert "expected: tensor([1, 2, ·, 3, ·, ·], shape=(2, 3)" in detail
    assert "got:      tensor([1, 5, ·, 3, ·, ·], shape=(2, 3)" in detail
    assert "· = padding" in detail
    # Without padding nothing is marked and no legend is added.
    with pytest.raises(Mismatch) as caught:
        expect_close(got, want, rtol=0, atol=1e-6, mask=torch.ones(2, 3), what="f")
    assert "·" not in caught.value.detail
