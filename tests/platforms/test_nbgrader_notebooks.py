"""Fast checks of the nbgrader course's pieces (no nbgrader run): notebooks from solutions/, answers from cell text."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat
import pytest

from conftest import REPO
from grader.platforms.nbgrader_course.notebooks import exercise_notebook, module_source, split_module, todo_above_markers
from grader.platforms.nbgrader_course.quiz import NoAnswer, read_answer

SOLUTIONS = sorted((REPO / "solutions").glob("ex*.py"))


def _code_dump(source: str) -> str:
    """The module's AST without docstring-free formatting differences (comments and blank lines are not in it)."""
    return ast.dump(ast.parse(source))


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_notebook_module_is_the_solution_module(path):
    """Joining the notebook's module cells gives back the solution module, statement for statement."""
    nb = exercise_notebook(path, "title", points=10.0)
    nbformat.validate(nb)
    assert _code_dump(module_source(nb, path.stem)) == _code_dump(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_answer_cells_are_exactly_the_chunks_with_a_solution(path):
    """A cell is an answer cell iff it holds a solution region; every other module cell is locked."""
    nb = exercise_notebook(path, "title", points=10.0)
    for cell in nb.cells:
        meta = cell.metadata["nbgrader"]
        if cell.metadata.get("ppo_course", {}).get("module"):
            assert meta["solution"] == ("### BEGIN SOLUTION" in cell.source)
            assert meta["locked"] == (not meta["solution"])
    graded = [c for c in nb.cells if c.metadata["nbgrader"]["grade"]]
    assert len(graded) == 1 and graded[0].metadata["nbgrader"]["points"] == 10.0
    assert graded[0].source.rstrip().endswith("0.0")  # scores 0 if the isolated step were ever missing


def test_zero_points_leave_the_test_cell_out():
    nb = exercise_notebook(SOLUTIONS[0], "title", points=0.0)
    assert not [c for c in nb.cells if c.metadata["nbgrader"]["grade"]]


def test_split_module_keeps_comments_and_decorators_with_their_definition():
    src = '"""doc"""\nimport os\n\n# about f\n@staticmethod\ndef f():\n    return 1\n\nX = 2\n\nclass C:\n    pass\n'
    chunks = split_module(src)
    assert [c.name for c in chunks] == ["prelude", "f", "C"]
    assert chunks[1].source.startswith("# about f\n@staticmethod")
    assert "X = 2" in chunks[1].source  # a statement between two definitions stays with the one above


def test_todo_moves_above_the_begin_marker():
    src = ("def f():\n    ### BEGIN SOLUTION\n    # TODO: do it\n    # (more)\n    return 1\n    ### END SOLUTION\n")
    assert todo_above_markers(src) == ("def f():\n    # TODO: do it\n    # (more)\n    ### BEGIN SOLUTION\n"
                                       "    return 1\n    ### END SOLUTION")


@pytest.mark.parametrize("source, want", [
    ('answer = "b"', "b"),
    ('answer = ["a", "c"]', ["a", "c"]),
    ("answer = 0.2", 0.2),
    ("answer = True", True),
    ('answer = "a"\nanswer = "d"  # changed my mind', "d"),  # the last one counts
])
def test_read_answer_reads_literals(source, want):
    assert read_answer(source) == want


@pytest.mark.parametrize("source, why", [
    ("# YOUR CODE HERE\nraise NotImplementedError()", "no `answer"),
    ("answer = (", "not valid Python"),
    ("answer = __import__('os').system('touch /tmp/pwned') or 'a'", "plain literal"),
    ("answer = float('0.2')", "plain literal"),
])
def test_read_answer_never_executes_code(source, why, tmp_path):
    with pytest.raises(NoAnswer, match=why):
        read_answer(source)


def test_build_course_writes_config_and_notebooks(tmp_path):
    """The course: nbgrader_config.py (IsolatedGrade before SaveAutoGrades, no Execute by default) and 8 notebooks."""
    from grader.platforms.nbgrader_course import build_course

    build_course(tmp_path, profile="fast")
    config = (tmp_path / "nbgrader_config.py").read_text(encoding="utf-8")
    compile(config, "nbgrader_config.py", "exec")
    pipeline = config.split("autograde_preprocessors = [")[1].split("]")[0]
    names = re.findall(r"^\s*(\w+),", pipeline, flags=re.MULTILINE)
    assert len(names) >= 7, pipeline
    assert "Execute" not in names
    assert names.index("IsolatedGrade") < names.index("SaveAutoGrades")
    assert "c.IsolatedGrade.profile = 'fast'" in config
    notebooks = sorted(p.name for p in (tmp_path / "source" / "ppo_ch5").glob("*.ipynb"))
    assert notebooks == sorted([f"{p.stem}.ipynb" for p in SOLUTIONS] + ["quiz.ipynb"])


def test_the_nbgrader_command_states_the_totals_with_the_quiz(tmp_path, capsys):
    """Issue 21 item 4: nbgrader's total includes the quiz notebook. By hand: the exercises' points are
    points.yaml's (profile full: every test), the quiz's one per question of the eight stop files."""
    import yaml

    from ppo_course.cli import main

    repo = Path(__file__).resolve().parents[2]
    points = yaml.safe_load((repo / "grader" / "points.yaml").read_text())

    def total(tests) -> float:
        return sum((t["points"] if isinstance(t, dict) else t) for t in tests.values())

    exercises = sum(total(e.get("public", {})) + total(e.get("hidden", {})) for e in points["exercises"].values())
    from quiz_bank.loader import load_bank

    questions = len(load_bank().questions())  # the written items and the ones derived from them (quiz_bank/derived.py)
    assert main(["nbgrader", str(tmp_path), "--profile", "full"]) == 0
    out = capsys.readouterr().out
    assert (f"is {exercises + questions:g} points: the exercises' {exercises:g}" in out
            and f"quiz notebook's {questions:g}" in out), out


def test_feedback_names_hidden_tests_as_the_guides_promise_and_counts_secret_ones():
    """The TA and student guides: hidden tests show name, points and likely mistake, never inputs; `hidden` ones are counted."""
    from grader.platforms.nbgrader_course.autograde import exercise_feedback
    from grader.records.results import ExerciseResult, GradeResult, TestResult

    def test(name, visibility, score):
        return TestResult(exercise="ex2_clipped_loss", kind="hidden", test=name, score=score, max_score=2.0,
                          status="passed" if score else "failed", output="Failed: you take the max" if not score else "",
                          visibility=visibility)

    result = GradeResult(submission="s", status="graded", grader_version="v", profile="full",
                         exercises={"ex2_clipped_loss": ExerciseResult(score=2.0, max_score=6.0, status="graded")},
                         tests=[test("test_surrogate_matches_reference", "after_published", 0.0),
                                test("test_secret_a", "hidden", 2.0), test("test_secret_b", "hidden", 0.0)])
    text = exercise_feedback(result, "ex2_clipped_loss")
    assert "[hidden] test_surrogate_matches_reference (0/2): Failed: you take the max" in text
    assert "test_secret" not in text and "2 further hidden test(s): 2 / 4 points." in text
    guide = (Path(__file__).resolve().parents[2] / "docs" / "ta_guide.md").read_text()
    assert "nbgrader's feedback cannot show one" not in guide and "[hidden] test_surrogate_matches_reference" in guide


def test_a_python_without_torch_fails_the_autograde_instead_of_scoring_zero(monkeypatch):
    """Issue 21 item 3, nbgrader's path: a broken environment is an error for the TA, never the student's 0."""
    import sys

    from grader.platforms.nbgrader_course.autograde import grade_modules

    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(RuntimeError, match="cannot import torch"):
        grade_modules({"ex1_ratio": "x = 1\n"}, "fast")


def test_a_grader_fault_fails_the_autograde_instead_of_scoring_zero(monkeypatch):
    """Issue 30, nbgrader's path: a result where the grader itself failed (a test with diagnosis grader_error: a
    module the hidden tests import missing, the reference raising) gave the exercise cell its 0 points. Now the
    autograde fails for the student with the staff's reason (nbgrader records no grade), and nothing is cached."""
    import grader.grade
    from grader.platforms.nbgrader_course import autograde
    from grader.records.results import ExerciseResult, GradeResult, TestResult

    faulted = GradeResult(submission="s", status="graded", grader_version="t", profile="fast", exercises={
        "ex1_ratio": ExerciseResult(score=0.0, max_score=2.0)}, tests=[TestResult(
            exercise="ex1_ratio", kind="hidden", test="test_ratio_value", score=0.0, max_score=2.0, status="failed",
            output="No module named 'hypothesis'", visibility="visible", diagnosis="grader_error")])
    calls = []
    monkeypatch.setattr(grader.grade, "grade_submission", lambda *a, **k: calls.append(1) or faulted)
    for _ in range(2):  # not cached: the same notebook is graded again (after the fix)
        with pytest.raises(RuntimeError, match="grader itself failed.*grader_error"):
            autograde.grade_modules({"ex1_ratio": "x = 2\n"}, "fast")
    assert len(calls) == 2
