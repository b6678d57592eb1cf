"""results.json follows the contract's Gradescope schema; feedback.md is readable; writes are atomic."""

from __future__ import annotations

import json
import os
from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict

from grader.points import EXERCISES
from grader.records.results import ExerciseResult, GradeResult, TestResult
from ppo_course.atomic_files import atomic_write_text

pytestmark = pytest.mark.xdist_group("grader")


class GradescopeTest(BaseModel):
    """One entry of `tests` as the contract fixes it (written independently of grader.records.results)."""

    model_config = ConfigDict(extra="forbid")
    name: str
    score: float
    max_score: float
    status: Literal["passed", "failed"]
    output: str
    visibility: Literal["hidden", "after_due_date", "after_published", "visible"]
    tags: list[str]


class GradescopeExtra(BaseModel):
    model_config = ConfigDict(extra="allow")
    max_score: float
    exercises: dict[str, dict[Literal["score", "max_score"], float]]
    grader_version: str


class GradescopeResults(BaseModel):
    model_config = ConfigDict(extra="allow")
    score: float
    tests: list[GradescopeTest]
    extra_data: GradescopeExtra


def _check_schema(data: dict) -> GradescopeResults:
    parsed = GradescopeResults.model_validate(json.loads(json.dumps(data)))
    assert parsed.score == pytest.approx(sum(t.score for t in parsed.tests))
    names = [t.name for t in parsed.tests]
    assert len(names) == len(set(names)), "test names must be unique"
    for t in parsed.tests:
        assert any(tag in EXERCISES for tag in t.tags), f"{t.name} has no module-stem tag"
        assert 0 <= t.score <= t.max_score
        assert (t.status == "passed") == (t.score == t.max_score) or t.max_score == 0
    for stem, e in parsed.extra_data.exercises.items():
        assert e["score"] == pytest.approx(sum(t.score for t in parsed.tests if stem in t.tags))
        assert e["max_score"] == pytest.approx(sum(t.max_score for t in parsed.tests if stem in t.tags))
    assert parsed.extra_data.max_score == pytest.approx(sum(e["max_score"] for e in parsed.extra_data.exercises.values()))
    return parsed


@pytest.mark.slow
def test_results_json_of_real_gradings_follow_the_schema(graded_solutions, graded_stubs, tmp_path):
    for result in (graded_solutions, graded_stubs):
        out = result.write_results_json(tmp_path / "results.json")
        parsed = _check_schema(json.loads(out.read_text(encoding="utf-8")))
        assert set(parsed.extra_data.exercises) == set(EXERCISES)
        hidden = [t for t in parsed.tests if "hidden" in t.tags]
        public = [t for t in parsed.tests if "public" in t.tags]
        assert hidden and public
        assert {t.visibility for t in public} == {"visible"}
        assert {t.visibility for t in hidden} == {"after_published"}


@pytest.mark.slow
def test_feedback_markdown_has_one_section_per_exercise(graded_stubs):
    text = graded_stubs.feedback_markdown()
    for stem in EXERCISES:
        assert f"## `{stem}`" in text
    assert "not implemented" in text and "Total: 0 / " in text


def _tiny_result() -> GradeResult:
    test = TestResult(exercise="ex1_ratio", kind="hidden", test="test_x", score=1.0, max_score=1.0, status="passed",
                      output="Passed: x", visibility="after_published")
    return GradeResult(submission="s", status="graded", grader_version="v", profile="fast",
                       exercises={"ex1_ratio": ExerciseResult(score=1.0, max_score=1.0, status="graded")},
                       tests=[test], timing={"total_s": 0.5})


def test_timing_lives_under_extra_data_only():
    data = _tiny_result().to_results_json()
    _check_schema(data)
    assert data["extra_data"]["timing"] == {"total_s": 0.5}
    assert "timing" not in json.dumps({k: v for k, v in data.items() if k != "extra_data"})


def test_atomic_write_keeps_the_old_file_on_failure(tmp_path, monkeypatch):
    """A failure while replacing leaves the previous results.json intact and no temporary file behind."""
    target = tmp_path / "results.json"
    target.write_text("old", encoding="utf-8")

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        atomic_write_text(target, "new")
    assert target.read_text(encoding="utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]
    monkeypatch.undo()
    _tiny_result().write_results_json(target)
    assert json.loads(target.read_text(encoding="utf-8"))["score"] == 1.0


def test_test_output_hides_hidden_details():
    """A hidden test's output names the mistake (and an exception's type) but never values or messages."""
    from grader.grade import _test_output

    secret = "TypeError: cannot add tensor([0.1234, 5.678])"
    hidden = _test_output("hidden", "what it checks", False, "raises_error", secret)
    assert "TypeError" in hidden and "0.1234" not in hidden and "cannot add" not in hidden
    hidden = _test_output("hidden", "what it checks", False, "max_instead_of_min", "  expected: tensor(1.5)")
    assert "max_instead_of_min" in hidden and "expected" not in hidden
    public = _test_output("public", "what it checks", False, "max_instead_of_min", "  expected: tensor(1.5)")
    assert "expected: tensor(1.5)" in public
    assert _test_output("hidden", "what it checks", True, None, "") == "Passed: what it checks"


def test_collector_diagnoses_exception_groups():
    """Hypothesis reports a crash-then-replay failure as an exception group: its first known member names it."""
    from ppo_course.grading_kit.collect import OutcomeCollector
    from ppo_course.grading_kit.feedback import Mismatch

    collector = OutcomeCollector(lambda exc: ("timeout", str(exc)) if isinstance(exc, TimeoutError) else None)
    group = ExceptionGroup("flaky", [RuntimeError("machinery"), ExceptionGroup("inner", [TimeoutError("slow")])])
    assert collector.diagnose_exception(group)[0] == "timeout"
    assert collector.diagnose_exception(ExceptionGroup("g", [Mismatch("max_instead_of_min")]))[0] == "max_instead_of_min"
    assert collector.diagnose_exception(RuntimeError("a grader bug"))[0] == "grader_error"
