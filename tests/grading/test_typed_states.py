"""Typed exercise states end to end (issue 11): the sandbox's import failure → ExerciseResult → gradebook.

A real ``grade_submission`` on a tiny submission under tmp_path (no mock): every way a module can fail
to be graded is one file of it. The expected states, lines and files are read off the sources written
here (the line of the broken statement is counted by hand in each literal).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.grade import grade_submission
from ppo_course.submission_rules import Entry, SubmissionLimits
from grader.records.outcome import exercise_reasons
from grader.student import grade_entry, grader_errors
from grader.records.results import ExerciseResult, GradeResult
from grader.runners.runner import WorkerOutcome

STUBS = Path(__file__).resolve().parents[2] / "exercises"
SELECTED = ["ex1_ratio", "ex2_clipped_loss", "ex3_full_loss", "ex4_gae", "ex5_rollout_buffer"]


def _submission(root: Path) -> Path:
    """ex1 the stub (not implemented); ex2 imports helper.py whose line 3 is a syntax error; ex3 raises an
    ImportError whose text looks like a syntax error's place (a decoy nothing may parse); ex4 has a syntax
    error at line 4; ex5 is absent."""
    root.mkdir(parents=True)
    (root / "ex1_ratio.py").write_text((STUBS / "ex1_ratio.py").read_text(encoding="utf-8"), encoding="utf-8")
    (root / "ex2_clipped_loss.py").write_text("import torch\nimport helper\n", encoding="utf-8")
    (root / "helper.py").write_text("x = 1\ny = 2\ndef broken(:\n    pass\n", encoding="utf-8")  # line 3
    (root / "ex3_full_loss.py").write_text('raise ImportError("no (ex3_full_loss.py, line 99)")\n', encoding="utf-8")
    (root / "ex4_gae.py").write_text("import torch\n\n\ndef compute_gae(:\n    return 0\n", encoding="utf-8")  # line 4
    return root


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> GradeResult:
    sub = _submission(tmp_path_factory.mktemp("typed") / "student")
    return grade_submission(sub, exercises=SELECTED, profile="fast")


def test_states_come_typed_from_the_sandbox(graded):
    ex = graded.exercises
    assert ex["ex1_ratio"].state == "not_implemented" and ex["ex1_ratio"].status == "graded"
    assert (ex["ex2_clipped_loss"].state, ex["ex2_clipped_loss"].error_type) == ("syntax_error", "SyntaxError")
    assert (ex["ex2_clipped_loss"].error_file, ex["ex2_clipped_loss"].error_line) == ("helper.py", 3)
    # The message's "(ex3_full_loss.py, line 99)" is the student's text: never read as a place.
    assert (ex["ex3_full_loss"].state, ex["ex3_full_loss"].error_type) == ("import_error", "ImportError")
    assert (ex["ex3_full_loss"].error_file, ex["ex3_full_loss"].error_line) == (None, None)
    assert (ex["ex4_gae"].state, ex["ex4_gae"].error_file, ex["ex4_gae"].error_line) == ("syntax_error", "ex4_gae.py", 4)
    assert ex["ex5_rollout_buffer"].state == "missing" and ex["ex5_rollout_buffer"].status == "missing"


def test_gradebook_reasons_from_typed_fields(graded):
    assert exercise_reasons(graded) == [
        "ex1_ratio: not implemented",
        "ex2_clipped_loss: SyntaxError in helper.py line 3",
        "ex3_full_loss: ImportError",
        "ex4_gae: SyntaxError line 4",
        "ex5_rollout_buffer: missing",
    ]
    assert grader_errors(graded) == 0


def test_the_typed_result_survives_the_worker_boundary(graded):
    """What a worker writes (result.json) validates back into an equal GradeResult, states included."""
    back = GradeResult.model_validate_json(graded.model_dump_json())
    assert back == graded and back.exercises["ex4_gae"].error_line == 4


def test_a_child_cannot_smuggle_a_name_or_a_huge_line():
    with pytest.raises(ValueError):
        ExerciseResult(score=0, max_score=1, status="broken", state="import_error", error_type="EvilError")
    with pytest.raises(ValueError):
        ExerciseResult(score=0, max_score=1, status="broken", state="syntax_error", error_type="SyntaxError",
                       error_line=10**9, error_file="ex4_gae.py")
    with pytest.raises(ValueError):
        ExerciseResult(score=0, max_score=1, status="broken", state="syntax_error", error_type="SyntaxError",
                       error_line=3, error_file="../../etc/passwd.py")


def test_grader_error_makes_the_entry_crashed(tmp_path, monkeypatch):
    """A test that points.yaml lists but no grader file holds never runs: diagnosis grader_error, status crashed."""
    from grader import grade
    from grader.points import TestPoints, load_points

    points = load_points().model_copy(deep=True)
    points.exercises["ex1_ratio"].hidden["test_that_does_not_exist"] = TestPoints(points=1.0)
    monkeypatch.setattr(grade, "load_points", lambda: points)
    sub = tmp_path / "ada"
    sub.mkdir()
    (sub / "ex1_ratio.py").write_text((STUBS / "ex1_ratio.py").read_text(encoding="utf-8"), encoding="utf-8")

    def runner(request, scratch, *, workers=None):
        # The worker's step in this process (so that the patched points apply), through the typed file.
        result = grade_submission(request.submission, exercises=request.exercises, profile=request.profile)
        return WorkerOutcome(status="graded", result=GradeResult.model_validate_json(result.model_dump_json()))

    entry = Entry("ada", [sub], "dir")
    graded = grade_entry(entry, tmp_path / "staging", tmp_path / "work", limits=SubmissionLimits(), profile="fast",
                         exercises=["ex1_ratio"], runner=runner)
    assert graded.status == "grader_fault"
    assert graded.message.startswith("the grader itself failed on 1 test(s) (diagnosis grader_error)")
    assert graded.result is not None and grader_errors(graded.result) == 1


@pytest.mark.parametrize("header, echo, place", [
    ({"type": "SyntaxError", "message": "m", "lineno": 12, "filename": "ex4_gae.py"}, True, (12, "ex4_gae.py")),
    ({"type": "IndentationError", "base": "SyntaxError", "message": "m", "lineno": 3, "filename": "h.py"}, True,
     (3, "h.py")),
    # A child with known-good pieces: a raised SyntaxError's line could carry what the reference computed.
    ({"type": "SyntaxError", "message": "m", "lineno": 12, "filename": "ex4_gae.py"}, False, (None, None)),
    # Only a SyntaxError has a place; only bounded ints and plain module file names cross.
    ({"type": "ValueError", "message": "m", "lineno": 12, "filename": "ex4_gae.py"}, True, (None, None)),
    ({"type": "SyntaxError", "message": "m", "lineno": True, "filename": "ex4_gae.py"}, True, (None, None)),
    ({"type": "SyntaxError", "message": "m", "lineno": 10**12, "filename": "ex4_gae.py"}, True, (None, None)),
    ({"type": "SyntaxError", "message": "m", "lineno": "12", "filename": "ex4_gae.py"}, True, (None, None)),
    ({"type": "SyntaxError", "message": "m", "lineno": 12, "filename": "x.py\nStatus: graded"}, True, (None, None)),
    ({"type": "SyntaxError", "message": "m", "lineno": 12, "filename": "/etc/x.py"}, True, (None, None)),
    ({"type": "SyntaxError", "message": "m", "lineno": 12}, True, (None, None)),
])
def test_the_parent_filters_the_childs_syntax_location(header, echo, place):
    from grader.sandbox.errors import StudentImportError

    exc = StudentImportError.from_reply(header, "ex4_gae", echo=echo)
    assert (exc.lineno, exc.filename) == place
