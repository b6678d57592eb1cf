"""Gradescope: a grader fault is a failed autograder run, never a graded 0 (Gradescope's autograder
troubleshooting page: a run that leaves no valid results.json is shown as "The autograder failed to execute
correctly"); the environment check is derived from what the graders import, not a hand list."""

from __future__ import annotations

from pathlib import Path

from grader.environment import imported_modules, required_modules
from grader.platforms.gradescope import run as gs_run

ROOT = Path(__file__).resolve().parents[2]


def test_a_broken_environment_writes_no_results_and_fails_the_run(tmp_path, monkeypatch, capsys):
    """Before: results.json with score 0.0 (recorded by Gradescope's gradebook) telling the student "the course
    staff has been told" while nothing told them."""
    results = tmp_path / "results.json"
    results.write_text('{"score": 0.0}')
    (tmp_path / "submission").mkdir()
    monkeypatch.setattr(gs_run, "environment_problem", lambda: "the grader's Python cannot import hypothesis")
    rc = gs_run.main(["--submission", str(tmp_path / "submission"), "--results", str(results)])
    out = capsys.readouterr().out
    assert rc == 1 and not results.exists()
    assert "hypothesis" in out and "NOT graded" in out and "told" not in out


def test_a_grader_fault_in_the_grading_fails_the_run(tmp_path, monkeypatch, capsys):
    """A grading whose tests the grader itself failed (grader_error) is a fault: no results.json, exit 1."""
    from grader.records.outcome import StudentOutcome
    from grader.student import zero_result

    fault = StudentOutcome(student_id="submission", status="grader_fault", message="the grader itself failed",
                           result=zero_result("fast", None, "x"), graded=False)
    monkeypatch.setattr(gs_run, "environment_problem", lambda: None)
    monkeypatch.setattr("grader.student.grade_entry", lambda *a, **k: fault)
    (tmp_path / "submission").mkdir()
    rc = gs_run.main(["--submission", str(tmp_path / "submission"), "--results", str(tmp_path / "results.json")])
    assert rc == 1 and not (tmp_path / "results.json").exists()
    assert "the grader itself failed" in capsys.readouterr().out


def test_the_run_autograder_script_leaves_no_zero_on_a_fault():
    text = (ROOT / "grader" / "platforms" / "gradescope" / "run_autograder").read_text()
    assert '"score": 0.0' not in text and 'rm -f "$RESULTS"' in text and 'exit "$status"' in text


def test_the_environment_check_is_read_from_the_graders_imports(tmp_path):
    """hypothesis (imported by the hidden tests only) was missing from the hand list; an import guarded by
    ``except ImportError`` is optional; the standard library is never required."""
    needed = required_modules()
    assert {"hypothesis", "torch", "pytest", "pydantic", "yaml"} <= set(needed), needed
    assert needed.index("hypothesis") < needed.index(next(n for n in needed if n.startswith("grader")))
    src = "import os\nimport newpkg.sub\ntry:\n    import optional_pkg\nexcept ImportError:\n    pass\nfrom .rel import x\n"
    assert imported_modules(src) == {"os", "newpkg.sub"}
    (tmp_path / "grader" / "hidden").mkdir(parents=True)
    (tmp_path / "grader" / "hidden" / "test_x.py").write_text(src)
    assert required_modules.__wrapped__(tmp_path, ("grader/hidden",)) == ("newpkg",)
