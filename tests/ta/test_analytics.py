"""Per-test analytics of the class report (grader/reports/analytics.py), on stand-in gradings.

By hand, from the stand-in's rules (tests/batch/stand_in_grader.py: test_value fails on
BUG_VALUE with diagnosis max_instead_of_min, test_grad on BUG_GRAD with ratio_detached):
latest attempts ann_2 (ok), ben (BUG_VALUE), cy (BUG_VALUE BUG_GRAD), dee (ok) on ex2:
test_value passes 2/4 = 50%, test_grad 3/4 = 75%. History: ann (BUG_GRAD) then ann_2 (ok):
ann reaches full marks on test_grad at attempt 2, everyone else at attempt 1 or never.
"""

from __future__ import annotations

import pytest

from ta_support import write_student
from grader.reports.analytics import per_test_stats
from grader.batch import run_batch


@pytest.fixture(scope="module")
def batch(tmp_path_factory, stand_in_module):
    base = tmp_path_factory.mktemp("analytics")
    subs = base / "subs"
    for sid, source in {"ann": "BUG_GRAD", "ann_2": "ok", "ben": "BUG_VALUE", "cy": "BUG_VALUE BUG_GRAD",
                        "dee": "ok"}.items():
        write_student(subs, sid, {"ex2_clipped_loss.py": source})
    summary = run_batch(subs, base / "out", jobs=2, progress=False, log=lambda m: None,
                        exercises=["ex2_clipped_loss"])
    return base / "out", summary.records


def test_pass_rate_credit_and_diagnosis_per_hidden_test(batch):
    out, records = batch
    stats, resubmissions = per_test_stats(out, records)
    assert resubmissions
    by_test = {s.test: s for s in stats}
    assert set(by_test) == {"test_value", "test_grad"}
    v, g = by_test["test_value"], by_test["test_grad"]
    assert (v.n, v.pass_rate, v.mean_credit, v.top_diagnosis) == (4, 0.5, 0.5, ("max_instead_of_min", 2))
    assert (g.pass_rate, g.top_diagnosis) == (0.75, ("ratio_detached", 1))
    # attempts to full marks: test_grad: ann 2, ben 1, dee 1 (cy never) -> mean 4/3
    assert g.reached_full == 3 and g.attempts_to_full == pytest.approx(4 / 3)
    assert v.reached_full == 2 and v.attempts_to_full == pytest.approx(1.0)  # ann 1, dee 1


def test_report_has_the_section_and_the_heat_map(batch):
    out, _ = batch
    md = (out / "report.md").read_text()
    assert "## Per hidden test" in md and "attempts to full marks" in md
    assert "| `ex2_clipped_loss` | `test_value` | 4 | 50% | 50% | `max_instead_of_min` (2 of 2 failing) | 1.0 (2 students) |" in md
    png = (out / "report_tests.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 2000


def test_no_resubmissions_no_attempts_column(tmp_path, stand_in):
    subs = tmp_path / "subs"
    write_student(subs, "solo", {"ex2_clipped_loss.py": "ok"})
    summary = run_batch(subs, tmp_path / "out", jobs=1, progress=False, log=lambda m: None,
                        exercises=["ex2_clipped_loss"])
    stats, resubmissions = per_test_stats(tmp_path / "out", summary.records)
    assert not resubmissions and all(s.attempts_to_full is None for s in stats)
    assert "attempts to full marks" not in (tmp_path / "out" / "report.md").read_text()


def _typed(sid_scores: dict[str, tuple[float, bool]]):
    """{student: typed result}: one 2-point hidden test (score, passed) and a 0-point informational test failed."""
    from grader.records.gradebook import StudentRecord
    from grader.records.results import ExerciseResult, GradeResult, TestResult

    results, records = {}, []
    for sid, (score, passed) in sid_scores.items():
        tests = [TestResult(exercise="ex7_ppo_step", kind="hidden", test="test_step", score=score, max_score=2.0,
                            status="passed" if passed else "failed", output="", visibility="visible",
                            diagnosis=None if passed else "wrong_value"),
                 TestResult(exercise="ex7_ppo_step", kind="hidden", test="test_own_pieces", score=0.0, max_score=0.0,
                            status="failed", output="", visibility="visible", diagnosis="ppo_step_own_pieces_differ")]
        results[sid] = GradeResult(submission=sid, status="graded", grader_version="t", profile="full", tests=tests,
                                   exercises={"ex7_ppo_step": ExerciseResult(score=score, max_score=2.0)})
        records.append(StudentRecord(student_id=sid, status="graded", submission_hash="h", grader_fingerprint="f",
                                     profile="full", score=score, max_score=2.0,
                                     exercise_scores={"ex7_ppo_step": {"score": score, "max_score": 2.0}}))
    return records, results


def test_a_zero_point_test_is_no_cell_and_no_mistake(tmp_path):
    """Issue 21.5: the 0-point informational test failed by all three students was the class's worst cell (0%)
    and a mistake of report.md; it is neither now. By hand: test_step passed by 2 of 3 (67%)."""
    from grader.reports.analytics import analytics_markdown
    from grader.reports.report import report_markdown, summarise

    records, results = _typed({"a": (2.0, True), "b": (2.0, True), "c": (0.0, False)})
    stats, _ = per_test_stats(tmp_path, records, results)
    assert [(s.test, round(s.pass_rate, 2)) for s in stats] == [("test_step", 0.67)]
    assert "test_own_pieces" not in analytics_markdown(stats, False)
    summary = summarise(tmp_path, records, results)
    assert "ppo_step_own_pieces_differ" not in summary.diagnoses and "ppo_step_own_pieces_differ" not in \
        report_markdown(summary)
    assert summary.diagnoses == {"wrong_value": 1} and summary.diagnosis_points == {"wrong_value": 2.0}


def test_a_pass_without_full_marks_is_not_counted_as_a_pass(tmp_path):
    """Issue 21.5: "100%" beside "never reaches full marks". A test marked passed with 1 of its 2 points (a kept
    published score, a partial-credit test) counts for neither: pass rate 1/2 and attempts from the full one."""
    records, results = _typed({"a": (1.0, True), "a_2": (2.0, True)})
    (s,), resubmissions = per_test_stats(tmp_path, records, results)
    assert resubmissions and (s.n, s.pass_rate) == (1, 1.0)  # a's latest attempt (a_2) has full marks
    assert (s.attempts_to_full, s.reached_full) == (2.0, 1)
    records, results = _typed({"b": (1.0, True)})
    (s,), _ = per_test_stats(tmp_path, records, results)
    assert s.pass_rate == 0.0 and s.mean_credit == 0.5


def test_the_analytics_say_how_a_resubmitting_class_is_counted(tmp_path):
    """Issue 21.5: the gradebook has one row per submission folder, the analytics one per student: both counts
    are said (3 submissions of 2 students)."""
    from grader.reports.analytics import per_test_section

    records, results = _typed({"a": (0.0, False), "a_2": (2.0, True), "b": (2.0, True)})
    md = per_test_section(tmp_path, records, results)
    assert "The gradebook's 3 graded submissions are 2 students' attempts" in md
