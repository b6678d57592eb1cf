"""Per-test analytics of the class report (grader/reports/analytics.py), on stand-in gradings.

By hand, from the stand-in's rules (tests/batch/stand_in_grader.py: test_value fails on
BUG_VALUE with diagnosis max_instead_of_min, test_grad on BUG_GRAD with ratio_detached):
folders ann (BUG_GRAD), ann_2 (ok), ben (BUG_VALUE), cy (BUG_VALUE BUG_GRAD), dee (ok) on ex2,
graded with no attempt rule: five gradebook rows, five students (a folder named ann_2 is not
ann's attempt unless the TA says so, grader/intake/attempts.py). test_value fails for ben and cy:
3/5 = 60%; test_grad fails for ann and cy: 3/5 = 60%.
"""

from __future__ import annotations

import csv

import pytest

from ta_support import write_student
from grader.intake.attempts import AttemptRule
from grader.reports.analytics import graded_students, per_test_stats
from grader.batch import run_batch
from grader.intake.roster import read_roster

COHORT = {"ann": "BUG_GRAD", "ann_2": "ok", "ben": "BUG_VALUE", "cy": "BUG_VALUE BUG_GRAD", "dee": "ok"}


@pytest.fixture(scope="module")
def batch(tmp_path_factory, stand_in_module):
    base = tmp_path_factory.mktemp("analytics")
    subs = base / "subs"
    for sid, source in COHORT.items():
        write_student(subs, sid, {"ex2_clipped_loss.py": source})
    summary = run_batch(subs, base / "out", jobs=2, progress=False, log=lambda m: None,
                        exercises=["ex2_clipped_loss"])
    return base / "out", summary.records


def test_pass_rate_credit_and_diagnosis_per_hidden_test(batch):
    out, records = batch
    stats = per_test_stats(out, records)
    by_test = {s.test: s for s in stats}
    assert set(by_test) == {"test_value", "test_grad"}
    v, g = by_test["test_value"], by_test["test_grad"]
    assert (v.n, v.pass_rate, v.mean_credit, v.top_diagnosis) == (5, 0.6, 0.6, ("max_instead_of_min", 2))
    assert (g.n, g.pass_rate, g.top_diagnosis) == (5, 0.6, ("ratio_detached", 2))


def test_report_has_the_section_and_the_heat_map(batch):
    out, _ = batch
    md = (out / "report.md").read_text()
    assert "## Per hidden test" in md and "attempts to full marks" not in md
    assert "Rates over the gradebook's 5 graded students, one per row" in md
    assert ("| `ex2_clipped_loss` | `test_value` | 5 | 3 (60%) | 0 (0%) | 2 (40%) | 60% | 60% "
            "| `max_instead_of_min` (2 of 2 failing) |") in md
    png = (out / "report_tests.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 2000


def _gradebook(out) -> dict[str, float]:
    with open(out / "gradebook.csv", newline="") as fh:
        return {row["student_id"]: float(row["total"]) for row in csv.DictReader(fh) if row["status"] == "graded"}


def _analytics_scores(out, records) -> dict[str, float]:
    return {sid: sum(t.score for t in view.tests) for sid, view in graded_students(out, records).items()}


def test_gradebook_and_analytics_count_the_same_students_without_a_rule(batch):
    """Issue 21.5: a resubmitting class was 5 gradebook rows but 2 students in the analytics (a folder-name rule of
    its own). With no stated rule every folder is its own student in both, with the same score."""
    out, records = batch
    book = _gradebook(out)
    assert set(book) == set(COHORT)
    assert _analytics_scores(out, records) == pytest.approx(book)
    assert {s.n for s in per_test_stats(out, records)} == {len(book)}


def test_gradebook_and_analytics_follow_the_stated_rule(tmp_path, stand_in):
    """With a roster's attempts column and --latest-only, amy's two folders are one student in both: 2 students,
    amy scored on amy_2 (ok: both stand-in tests, 2 points), bob on bob (BUG_GRAD: test_value only, 1 point)."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    for sid, source in {"amy": "BUG_VALUE BUG_GRAD", "amy_2": "ok", "bob": "BUG_GRAD"}.items():
        write_student(subs, sid, {"ex2_clipped_loss.py": source})
    (tmp_path / "r.csv").write_text("student_id,attempts\namy,amy;amy_2\nbob,\n", encoding="utf-8")
    summary = run_batch(subs, out, jobs=1, progress=False, log=lambda m: None, exercises=["ex2_clipped_loss"],
                        latest_only=True, attempt_rule=AttemptRule(roster=read_roster(tmp_path / "r.csv")))
    book = _gradebook(out)
    assert book == {"amy": 2.0, "bob": 1.0}
    assert _analytics_scores(out, summary.records) == pytest.approx(book)
    assert {s.n for s in per_test_stats(out, summary.records)} == {2}
    assert "Rates over the gradebook's 2 graded students" in (out / "report.md").read_text()


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
    stats = per_test_stats(tmp_path, records, results)
    assert [(s.test, round(s.pass_rate, 2)) for s in stats] == [("test_step", 0.67)]
    assert "test_own_pieces" not in analytics_markdown(stats)
    summary = summarise(tmp_path, records, results)
    assert "ppo_step_own_pieces_differ" not in summary.diagnoses and "ppo_step_own_pieces_differ" not in \
        report_markdown(summary)
    assert summary.diagnoses == {"wrong_value": 1} and summary.diagnosis_points == {"wrong_value": 2.0}


def test_a_pass_without_full_marks_is_not_counted_as_a_pass(tmp_path):
    """Issue 21.5: "100%" beside "never reaches full marks". A test marked passed with 1 of its 2 points (a kept
    published score, a partial-credit test) is no pass: pass rate 1/2 over a (1 of 2) and a_2 (2 of 2), mean credit
    (0.5 + 1)/2 = 0.75; alone, b (1 of 2) passes nothing."""
    records, results = _typed({"a": (1.0, True), "a_2": (2.0, True)})
    (s,) = per_test_stats(tmp_path, records, results)
    assert (s.n, s.pass_rate, s.mean_credit) == (2, 0.5, 0.75)
    records, results = _typed({"b": (1.0, True)})
    (s,) = per_test_stats(tmp_path, records, results)
    assert s.pass_rate == 0.0 and s.mean_credit == 0.5


def _typed_states(rows: dict[str, tuple[float, str, str | None]]):
    """(records, results): one 2-point hidden test per student as (score, status, diagnosis)."""
    from grader.records.gradebook import StudentRecord
    from grader.records.results import ExerciseResult, GradeResult, TestResult

    results, records = {}, []
    for sid, (score, status, diagnosis) in rows.items():
        tests = [TestResult(exercise="ex4_gae", kind="hidden", test="test_gae", score=score, max_score=2.0,
                            status=status, output="", visibility="visible", diagnosis=diagnosis)]
        results[sid] = GradeResult(submission=sid, status="graded", grader_version="t", profile="full", tests=tests,
                                   exercises={"ex4_gae": ExerciseResult(score=score, max_score=2.0)})
        records.append(StudentRecord(student_id=sid, status="graded", submission_hash="h", grader_fingerprint="f",
                                     profile="full", score=score, max_score=2.0,
                                     exercise_scores={"ex4_gae": {"score": score, "max_score": 2.0}}))
    return records, results


def test_the_report_counts_the_states_results_json_gives(tmp_path):
    """Issue 30.6: report.md counted "passed, 0 points for now" as failed (62% where results.json gave 75%).
    By hand, four students on one 2-point hidden test: a and d passed 2/2, b passed 0/2 (waiting on its required
    tests: "passed, 0 points for now" in feedback.md), c failed. Columns: passed 2 (50%), passed 0 points for now
    1 (25%), failed 1 (25%); results.json's passed statuses are 3 = 2 + 1, so no state is folded into another.
    Issue 21's rule stays: full marks 2/4 = 50%."""
    from grader.reports.analytics import analytics_markdown

    records, results = _typed_states({"a": (2.0, "passed", None), "b": (0.0, "passed", None),
                                      "c": (0.0, "failed", "gae_no_bootstrap"), "d": (2.0, "passed", None)})
    (s,) = per_test_stats(tmp_path, records, results)
    assert (s.passed, s.gated, s.failed, s.pass_rate) == (2, 1, 1, 0.5)
    in_results = sum(t.status == "passed" for r in results.values() for t in r.tests)
    assert s.passed + s.gated == in_results == 3
    text = analytics_markdown([s])
    assert "| passed | passed, 0 points for now | failed | full marks |" in text
    assert "| 4 | 2 (50%) | 1 (25%) | 1 (25%) | 50% | 50% | `gae_no_bootstrap` (1 of 1 failing) |" in text


def test_a_tied_most_common_diagnosis_is_shown_as_a_tie(tmp_path):
    """Issue 30.6: a tie was broken by name (one id shown). By hand: five failing students, zeta_mistake 2,
    alpha_mistake 2, mid_mistake 1: the cell names both tied ids in id order with "2 each of 5 failing", in
    whichever order the students come."""
    from grader.reports.analytics import analytics_markdown

    rows = {"s1": "zeta_mistake", "s2": "alpha_mistake", "s3": "zeta_mistake", "s4": "mid_mistake",
            "s5": "alpha_mistake"}
    for order in (list(rows), list(reversed(rows))):
        records, results = _typed_states({sid: (0.0, "failed", rows[sid]) for sid in order})
        (s,) = per_test_stats(tmp_path, records, results)
        assert s.top_diagnoses == ("alpha_mistake", "zeta_mistake") and s.top_diagnosis == ("alpha_mistake", 2)
        assert "| `alpha_mistake`, `zeta_mistake` (2 each of 5 failing) |" in analytics_markdown([s])
    records, results = _typed_states({"s1": (0.0, "failed", "zeta_mistake"), "s2": (0.0, "failed", "zeta_mistake"),
                                      "s3": (0.0, "failed", "alpha_mistake")})
    (s,) = per_test_stats(tmp_path, records, results)
    assert s.top_diagnoses == ("zeta_mistake",) and s.diagnosis_text() == "`zeta_mistake` (2 of 3 failing)"
