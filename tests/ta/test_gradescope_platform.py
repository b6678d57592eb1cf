"""Gradescope: results.json read back by Gradescope's own schema; a broken autograder is not a student's 0.

Schema, from Gradescope's autograder specification ("Output format",
https://gradescope-autograders.readthedocs.io/en/latest/specs/#output-format): top-level
``score`` (float; optional when every test has one), ``output``, ``output_format`` and
``test_output_format`` (``text``, ``html``, ``simple_format``, ``md``, ``ansi``),
``stdout_visibility`` and each test's ``visibility`` (``hidden``, ``after_due_date``,
``after_published``, ``visible``), ``extra_data`` (any), ``tests`` with ``score``, ``max_score``,
``status`` (``passed``/``failed``), ``name``, ``output``, ``tags``. A ``run_autograder`` whose Python lacks
a module the graders import is a failed run (no results.json), never a 0.
"""

from __future__ import annotations

import json
import sys
from typing import Literal

import pytest
import yaml
from pydantic import BaseModel, ConfigDict

from ta_support import ROOT, write_student
from grader.platforms.gradescope.run import BundleConfig, grade_for_gradescope, main

Visibility = Literal["hidden", "after_due_date", "after_published", "visible"]
Format = Literal["text", "html", "simple_format", "md", "ansi"]


class GradescopeTest(BaseModel):
    model_config = ConfigDict(extra="allow")
    score: float | None = None
    max_score: float | None = None
    status: Literal["passed", "failed"] | None = None
    name: str = ""
    output: str = ""
    tags: list[str] = []
    visibility: Visibility = "visible"


class GradescopeResults(BaseModel):
    model_config = ConfigDict(extra="allow")
    score: float | None = None
    output: str = ""
    output_format: Format = "text"
    test_output_format: Format = "text"
    stdout_visibility: Visibility = "hidden"
    extra_data: dict = {}
    tests: list[GradescopeTest] = []

    def total(self) -> float:
        """What Gradescope shows: ``score`` when given, else the sum of the tests' scores."""
        return self.score if self.score is not None else sum(t.score or 0.0 for t in self.tests)


def test_a_graded_submission_reads_back_by_gradescopes_schema(tmp_path, stand_in):
    write_student(tmp_path, "submission", {"ex2_clipped_loss.py": "BUG_VALUE"})
    results = GradescopeResults.model_validate(
        grade_for_gradescope(tmp_path / "submission", BundleConfig()))
    assert results.tests and all(t.status in ("passed", "failed") and t.max_score is not None for t in results.tests)
    assert results.total() == pytest.approx(sum(t.score for t in results.tests))


def test_a_python_without_torch_is_a_failed_run_not_the_students_zero(tmp_path, monkeypatch, stand_in):
    """A grader fault is reported as Gradescope shows a failed autograder run (no valid results.json: "The
    autograder failed to execute correctly", its troubleshooting page), never a results.json with a score."""
    from grader.platforms.gradescope.environment import AutograderFault

    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now raises ImportError, as in a bare Python
    write_student(tmp_path, "submission", {"ex2_clipped_loss.py": "ok"})
    with pytest.raises(AutograderFault, match="torch"):
        grade_for_gradescope(tmp_path / "submission", BundleConfig())


def test_the_fast_tier_states_the_points_it_leaves_to_the_regrade(tmp_path, stand_in):
    """points.yaml (read here, by hand): 80 points in all, exercise 7's training run 4 of them."""
    points = yaml.safe_load((ROOT / "grader" / "points.yaml").read_text())
    ex7 = points["exercises"]["ex7_ppo_step"]["hidden"]["test_training_run_raises_mean_score"]
    deferred = ex7["points"] if isinstance(ex7, dict) else ex7
    from grader.platforms.gradescope.environment import state_tier
    from grader.points import load_points

    full = load_points().max_score
    results = state_tier({"extra_data": {"max_score": full - deferred}, "output": "x"}, "fast")
    assert results["extra_data"]["assignment_max_score"] == full and results["extra_data"]["deferred_points"] == deferred
    assert f"out of {full - deferred:g} points" in results["output"] and f"of the assignment's {full:g}" in results["output"]
    assert "Fast tier" not in state_tier({"extra_data": {"max_score": full}}, "full").get("output", "")


def test_the_bundles_timeout_fits_gradescopes_default():
    """Gradescope's default autograder timeout is 10 minutes; the bundle's default must finish under it."""
    from grader.commands import gradescope_bundle

    import argparse

    parser = argparse.ArgumentParser()
    gradescope_bundle.add_arguments(parser)
    cli_default = parser.parse_args(["x.zip"]).timeout
    assert cli_default == BundleConfig().timeout_s < 600
    assert "540 s" in (ROOT / "docs" / "ta_guide.md").read_text()


def test_the_runner_writes_no_results_for_a_broken_environment(tmp_path, monkeypatch, stand_in, capsys):
    """hypothesis (the hidden tests import it; the old hand list did not name it) missing: exit 1, no results.json."""
    monkeypatch.setitem(sys.modules, "hypothesis", None)
    write_student(tmp_path, "submission", {"ex2_clipped_loss.py": "ok"})
    out = tmp_path / "results.json"
    assert main(["--submission", str(tmp_path / "submission"), "--results", str(out)]) == 1
    assert not out.exists() and "hypothesis" in capsys.readouterr().out
