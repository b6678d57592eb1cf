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


def test_checks_child_gets_one_typed_request_and_no_environment_protocol(tmp_path, monkeypatch):
    """``check``'s child is asked by one ``CheckRequest`` (one ``--request JSON`` argument for a fresh child), never
    by PPO_CHECK_* variables; the request refuses unknown fields and a non-positive per-call limit."""
    import json as _json
    import subprocess

    import pydantic

    from ppo_course.check_support import launch
    from ppo_course.check_support.request import CheckRequest

    seen = {}

    def fake_run(cmd, **kw):
        seen["cmd"], seen["env"] = cmd, kw["env"]
        sent = CheckRequest.model_validate_json(cmd[cmd.index("--request") + 1])
        sent.out_json.write_text(_json.dumps({"pytest_exit": 0, "done": [], "outcomes": [], "modules": {}}))
        seen["request"] = sent
        return subprocess.CompletedProcess(cmd, 0, b"")

    monkeypatch.setattr(launch.subprocess, "run", fake_run)
    run = launch.run_public_tests(tmp_path, ["ex1_ratio"], cpu_seconds=30, call_seconds=2.5)
    assert not run.error
    cmd, request = seen["cmd"], seen["request"]
    assert cmd[-2:] == ["--request", request.model_dump_json()] and cmd.count("--request") == 1
    assert request.exercises_dir == tmp_path and request.stems == ["ex1_ratio"] and request.call_seconds == 2.5
    assert request.deselect == [] and request.hung == []
    assert not [k for k in seen["env"] if k.startswith("PPO_CHECK_")]
    assert CheckRequest.model_validate_json(request.model_dump_json()) == request
    with pytest.raises(pydantic.ValidationError):
        CheckRequest(exercises_dir=tmp_path, out_json=tmp_path / "o.json", call_seconds=0)
    with pytest.raises(pydantic.ValidationError):
        CheckRequest.model_validate_json('{"exercises_dir": "/x", "out_json": "/o", "call_seconds": 1, "argv": []}')


def test_check_reads_typed_states_with_no_regex_over_output():
    """No module of ``check``'s path parses text with ``re`` (issue 22 item 1): states come typed from the child."""
    import ast
    from pathlib import Path

    import ppo_course

    root = Path(ppo_course.__file__).resolve().parent
    files = sorted((root / "check_support").glob("*.py")) + [root / "commands" / "check.py",
                                                             root / "grading_kit" / "states.py"]
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert not imported & {"re", "regex"}, path.name


def test_a_sibling_loaded_from_another_folder_is_not_reused(tmp_path, clean_imports):
    """Two providers in one process (a test run, a warm parent): folder b's `import helper` gets b's broken
    helper.py, not the good `helper` folder a left in sys.modules, so the result does not depend on what ran before."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    (a / "helper.py").write_text("X = 1\n", encoding="utf-8")
    (a / "ex4_gae.py").write_text("import helper\n", encoding="utf-8")
    LocalProvider(a).load("ex4_gae")
    (b / "helper.py").write_text("def f(:\n    pass\n", encoding="utf-8")
    (b / "ex4_gae.py").write_text("import helper\n", encoding="utf-8")
    provider = LocalProvider(b)
    with pytest.raises(ModuleUnavailable):
        provider.load("ex4_gae")
    assert provider.modules["ex4_gae"].error_file == "helper.py"
