"""gradebook.csv's message column names each exercise that was not really graded
(grader/records/outcome.py: exercise_reasons, from the typed ExerciseResult; nothing is parsed from text).

The end-to-end path (a real grading of a broken submission) is tests/grading/test_typed_states.py.
"""

from __future__ import annotations

from grader.records.outcome import exercise_reasons
from grader.records.results import ExerciseResult, GradeResult


def _result(**exercises: ExerciseResult) -> GradeResult:
    return GradeResult(submission="s", status="graded", grader_version="t", profile="full", exercises=exercises,
                       tests=[])


def test_reasons_for_missing_broken_and_unimplemented_modules():
    result = _result(
        ex1_ratio=ExerciseResult(score=3, max_score=10, status="graded"),
        ex2_clipped_loss=ExerciseResult(score=0, max_score=10, status="broken", state="syntax_error",
                                        error_type="SyntaxError"),  # a NUL byte: no place
        ex3_full_loss=ExerciseResult(score=0, max_score=10, status="broken", state="import_error", error_type=""),
        ex4_gae=ExerciseResult(score=0, max_score=10, status="broken", state="syntax_error", error_type="SyntaxError",
                               error_line=12, error_file="ex4_gae.py"),
        ex5_rollout_buffer=ExerciseResult(score=0, max_score=10, status="graded", state="not_implemented"),
        ex6_kl_reward=ExerciseResult(score=0, max_score=10, status="broken", state="syntax_error",
                                     error_type="IndentationError", error_line=7, error_file="ex4_gae.py"),
        ex7_ppo_step=ExerciseResult(score=0, max_score=20, status="missing"),
    )
    assert exercise_reasons(result) == [
        "ex2_clipped_loss: SyntaxError",
        "ex3_full_loss: does not import",  # a time-out or crash at import: no exception name
        "ex4_gae: SyntaxError line 12",
        "ex5_rollout_buffer: not implemented",
        "ex6_kl_reward: IndentationError in ex4_gae.py line 7",
        "ex7_ppo_step: missing",
    ]


def test_state_follows_status_when_not_given():
    assert ExerciseResult(score=0, max_score=1, status="missing").state == "missing"
    assert ExerciseResult(score=0, max_score=1, status="broken").state == "import_error"
    assert ExerciseResult(score=1, max_score=1, status="graded").state == "graded"


def test_a_graded_exercise_gives_no_reason():
    assert exercise_reasons(_result(ex1_ratio=ExerciseResult(score=5, max_score=10, status="graded"))) == []
