"""The class report reads typed results: the GradeResult the batch holds, else the published results.json
through the one loader (grader/records/gradebook.py: load_result); both give the same numbers."""

from __future__ import annotations

from grader.reports.analytics import per_test_stats
from grader.records.gradebook import StudentRecord, atomic_write_json, load_result
from grader.reports.report import diagnoses_in, summarise
from grader.records.results import ExerciseResult, GradeResult, TestResult


def _test(name: str, kind: str, passed: bool, diagnosis: str | None = None) -> TestResult:
    return TestResult(exercise="ex2_clipped_loss", kind=kind, test=name, score=1.0 if passed else 0.0, max_score=1.0,
                      status="passed" if passed else "failed", output="", visibility="visible",
                      diagnosis=diagnosis, tags=["extra_tag"])


def _result() -> GradeResult:
    tests = [_test("test_a", "hidden", False, "max_instead_of_min"), _test("test_b", "hidden", True),
             _test("test_c", "public", False, "max_instead_of_min"), _test("test_d", "hidden", False)]
    return GradeResult(submission="s", status="graded", grader_version="t", profile="full",
                       exercises={"ex2_clipped_loss": ExerciseResult(score=1, max_score=4, status="graded")},
                       tests=tests)


def _record(sid: str) -> StudentRecord:
    return StudentRecord(student_id=sid, status="graded", submission_hash="h", grader_fingerprint="f", profile="full",
                         score=1.0, max_score=4.0,
                         exercise_scores={"ex2_clipped_loss": {"score": 1.0, "max_score": 4.0}})


def test_published_results_read_back_with_the_typed_names(tmp_path):
    result = _result()
    atomic_write_json(tmp_path / "ana" / "results.json", result.to_results_json())
    back = load_result(tmp_path, "ana")
    assert back is not None
    assert [(t.exercise, t.kind, t.test, t.status, t.diagnosis) for t in back.tests] == \
        [(t.exercise, t.kind, t.test, t.status, t.diagnosis) for t in result.tests]
    # Hand count: test_a and test_c carry max_instead_of_min, test_d failed without a diagnosis.
    assert diagnoses_in(back) == diagnoses_in(result) == [("max_instead_of_min", "ex2_clipped_loss", 1.0)] * 2
    assert back.score == result.score and back.max_score == result.max_score  # the totals read back too
    assert load_result(tmp_path, "nobody") is None


def test_the_report_uses_the_result_the_batch_holds_without_reading_a_file(tmp_path):
    """No results.json on disk: the typed result passed in is all the report needs."""
    records = [_record("ana")]
    summary = summarise(tmp_path, records, {"ana": _result()})
    assert summary.diagnoses == {"max_instead_of_min": 1}  # one student, counted once
    assert summarise(tmp_path, records).diagnoses == {}  # nothing held, nothing on disk
    stats = per_test_stats(tmp_path, records, {"ana": _result()})
    # Hidden tests only, in order: a failed, b passed, d failed.
    assert [(s.test, s.pass_rate) for s in stats] == [("test_a", 0.0), ("test_b", 1.0), ("test_d", 0.0)]


def test_a_fast_profile_report_says_it_is_a_preview(tmp_path):
    """report.md of a batch graded with --profile fast opens by saying it is a preview, not a grade."""
    from grader.reports.report import report_markdown

    full = report_markdown(summarise(tmp_path, [_record("ana")], {"ana": _result()}), png_name=None)
    fast_record = _record("ana").model_copy(update={"profile": "fast"})
    fast = report_markdown(summarise(tmp_path, [fast_record], {"ana": _result()}), png_name=None)
    assert "Fast preview, not a grade" in fast and "Fast preview" not in full
