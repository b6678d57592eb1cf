"""gradebook.csv's message column names each exercise that was not really graded
(grader/records/outcome.py: exercise_reasons, from the typed ExerciseResult; nothing is parsed from text).

The end-to-end path (a real grading of a broken submission) is tests/grading/test_typed_states.py.
"""

from __future__ import annotations

from grader.records.outcome import StudentOutcome, exercise_reasons, join_why
from grader.records.results import ExerciseResult, GradeResult, TestResult


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
        "ex1_ratio: 3/10",  # graded below its maximum, no test listed: the score says it (issue 21)
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


def _test(stem: str, name: str, score: float, top: float, status: str, diagnosis: str | None) -> TestResult:
    return TestResult(exercise=stem, kind="hidden", test=name, score=score, max_score=top, status=status,
                      output="", visibility="after_published", diagnosis=diagnosis)


def test_a_graded_exercise_at_full_marks_gives_no_reason():
    assert exercise_reasons(_result(ex1_ratio=ExerciseResult(score=10, max_score=10, status="graded"))) == []


def test_every_graded_exercise_below_its_maximum_says_why():
    """Issue 21: the demo's ola had ex7 = 0 with an empty message (state graded, every test failed)."""
    result = _result(ex1_ratio=ExerciseResult(score=10, max_score=10),
                     ex7_ppo_step=ExerciseResult(score=0, max_score=20))
    result.tests += [
        _test("ex1_ratio", "t_ok", 10, 10, "passed", None),
        _test("ex7_ppo_step", "t_a", 0, 8, "failed", "advantages_not_whitened"),
        _test("ex7_ppo_step", "t_b", 0, 8, "failed", "advantages_not_whitened"),
        _test("ex7_ppo_step", "t_c", 0, 4, "passed", None),  # passed, worth 0 until its hidden twin passes
    ]
    assert exercise_reasons(result) == [
        "ex7_ppo_step: 0/20, failed: advantages_not_whitened; a passed public test counts once its hidden twins pass"]


def test_message_parts_join_cleanly_and_a_note_is_not_repeated_as_an_exception_name():
    """Issue 21: "...Save the file again as plain UTF-8 text.; ex2_clipped_loss: SyntaxError"."""
    note = ("ex2_clipped_loss.py contains a NUL byte, so Python cannot import it: that exercise scores 0. "
            "Save the file again as plain UTF-8 text.")
    result = _result(ex2_clipped_loss=ExerciseResult(score=0, max_score=10, state="syntax_error",
                                                     error_type="SyntaxError"),
                     ex4_gae=ExerciseResult(score=0, max_score=10, state="missing"))
    outcome = StudentOutcome(student_id="pia", status="graded", notes=[note], result=result)
    assert outcome.gradebook_message == (
        "ex2_clipped_loss.py contains a NUL byte, so Python cannot import it: that exercise scores 0. "
        "Save the file again as plain UTF-8 text; ex4_gae: missing")
    assert join_why(["a.", "", " b; ", "c"]) == "a; b; c"


def test_progress_in_a_log_is_plain_lines_first_then_paced_then_last():
    """Not on a terminal (a log, CI): one line at the first student, none within ``every_s``, one at the end."""
    import io

    from grader.runners.progress import LogProgress

    out = io.StringIO()
    with LogProgress(every_s=3600, stream=out) as bar:
        task = bar.add_task("grading", total=3, completed=0, tally="")
        for _ in range(3):
            bar.update(task, advance=1, tally="failed 0 · timed out 0")
    lines = out.getvalue().splitlines()
    assert [line.split(", ")[0] for line in lines] == ["grading: 1/3 done", "grading: 3/3 done"]
    assert all("failed 0 · timed out 0" in line for line in lines)


def test_the_progress_bar_never_counts_a_rejected_submission_as_a_failure():
    """A rejected submission is the student's (a corrupt zip), a grader fault the grader's: two counts."""
    from grader.runners.progress import tally_words

    words = tally_words({"rejected": 1, "timed-out": 2, "grader_fault": 0})
    assert words == "rejected 1 · timed out 2 · grader faults 0" and "failed" not in words
