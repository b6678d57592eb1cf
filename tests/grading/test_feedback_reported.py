"""feedback.md: a 0-point ("Reported") test of a missing or broken module adds no line (grader/records/results.py)."""

from __future__ import annotations

from grader.records.results import ExerciseResult, GradeResult, TestResult


def _result(status: str, diagnosis: str) -> GradeResult:
    tests = [
        TestResult(exercise="ex7_ppo_step", kind="hidden", test="test_ppo_step_matches_reference", score=0.0,
                   max_score=5.0, status="failed", output="", visibility="after_published", diagnosis=diagnosis),
        TestResult(exercise="ex7_ppo_step", kind="hidden", test="test_ppo_step_with_own_pieces", score=0.0,
                   max_score=0.0, status="failed", output="", visibility="after_published", diagnosis=diagnosis,
                   doc="ppo_step on your own ex1-ex6"),
    ]
    return GradeResult(submission="s", status="graded", grader_version="t", profile="fast",
                       exercises={"ex7_ppo_step": ExerciseResult(score=0.0, max_score=5.0, status=status,
                                                                 message="ex7_ppo_step.py is not in the submission.")},
                       tests=tests)


def test_no_reported_line_when_the_module_is_missing_or_broken():
    for status, diagnosis in (("missing", "module_missing"), ("broken", "module_broken")):
        md = _result(status, diagnosis).feedback_markdown()
        assert "Reported (0 points)" not in md and "test_ppo_step_with_own_pieces" not in md
        assert "ex7_ppo_step.py is not in the submission." in md


def test_reported_line_stays_for_a_graded_module():
    md = _result("graded", "ppo_step_own_pieces_differ").feedback_markdown()
    assert "Reported (0 points): `test_ppo_step_with_own_pieces` did not pass" in md


def _ex1(tests: list[TestResult], score: float) -> GradeResult:
    return GradeResult(submission="s", status="graded", grader_version="t", profile="fast",
                       exercises={"ex1_ratio": ExerciseResult(score=score, max_score=10.0, status="graded")},
                       tests=tests)


def _t(test: str, kind: str, score: float, max_score: float, status: str, **extra) -> TestResult:
    return TestResult(exercise="ex1_ratio", kind=kind, test=test, score=score, max_score=max_score, status=status,
                      output="", visibility="visible", diagnosis=None if status == "passed" else "wrong_value",
                      doc=f"what {test} checks", **extra)


def test_a_passed_test_worth_0_for_now_is_named_with_what_it_waits_for():
    """Hand case (a new user's finding): 10 points, a hidden test failed (−1) and a passed public test waits
    for it (−0.5): the feedback shows both, so 10 − 1 − 0.5 = 8.5 adds up; it is not listed as plainly passed."""
    md = _ex1([_t("test_twin", "hidden", 0, 1, "failed"),
               _t("test_props", "public", 0, 0.5, "passed", waits_for=["test_twin"]),
               _t("test_ok", "hidden", 8.5, 8.5, "passed")], 8.5).feedback_markdown()
    assert "Passed, 0 / 0.5 points for now: public `test_props` counts once `test_twin` passes too." in md
    assert "Passed: `test_ok`" in md and "`test_props`," not in md.split("Passed: ", 2)[-1]
    assert "All graded tests passed" not in md


def test_all_passed_says_when_a_reported_test_follows():
    """A 0-point (reported) test that failed under "All graded tests passed." is announced in that line."""
    md = _ex1([_t("test_ok", "hidden", 10, 10, "passed"), _t("test_rep", "hidden", 0, 0, "failed")],
              10).feedback_markdown()
    assert "All graded tests passed. One 0-point test is reported below." in md
    assert "Reported (0 points): `test_rep` did not pass" in md


def test_doc_summary_keeps_a_wrapped_first_sentence_whole():
    """The first sentence across source lines, not the first line; a long one ends at a word with " …"."""
    from ppo_course.grading_kit.collect import doc_summary

    assert doc_summary("The ratio is 1 when both\n    log-probs are equal. More detail.") == \
        "The ratio is 1 when both log-probs are equal."
    assert doc_summary("Uses eq. 5.20 here (e.g. a case). Next.") == "Uses eq. 5.20 here (e.g. a case)."
    long = doc_summary("word " * 100, limit=30)
    assert long.endswith(" …") and len(long) <= 30 and not long.endswith("wo …")
    assert doc_summary(None) == ""


def test_a_hidden_tests_finding_reaches_feedback_md_capped():
    """The fitted value (or where the outputs differ) of a failed hidden test is in feedback.md, not only
    in results.json; a passed or public test adds no finding line."""
    finding = "Fitted to your output: ε (clip_eps) = 0.3 is used where the call passed ε (clip_eps) = 0.2."
    md = _ex1([_t("test_surrogate_matches_reference", "hidden", 0.0, 2.0, "failed", finding=finding),
               _t("test_logprobs_gradient", "hidden", 1.0, 1.0, "passed")], 8.0).feedback_markdown()
    assert f"  {finding}" in md
    long = _ex1([_t("test_surrogate_matches_reference", "hidden", 0.0, 2.0, "failed", finding="x" * 50_000)],
                8.0).feedback_markdown()
    assert len(long) < 20_000  # capped like every output


def test_a_stub_exercise_is_one_line_not_one_per_test():
    """A released stub fails every test with NotImplementedError: the table says "not implemented" and the
    section says so once, instead of repeating the same failure for each of its tests."""
    tests = [TestResult(exercise="ex1_ratio", kind=kind, test=f"test_{i}", score=0.0, max_score=2.0, status="failed",
                        output="not implemented: NotImplementedError", visibility="visible",
                        diagnosis="not_implemented", doc=f"check {i}")
             for i, kind in enumerate(["public", "hidden", "hidden"])]
    result = GradeResult(submission="s", status="graded", grader_version="t", profile="fast",
                         exercises={"ex1_ratio": ExerciseResult(score=0.0, max_score=6.0, state="not_implemented")},
                         tests=tests)
    md = result.feedback_markdown()
    assert "| `ex1_ratio` | 0 / 6 | not implemented |" in md
    assert md.count("Not implemented yet: each of its 3 graded tests raised `NotImplementedError`") == 1
    assert "Failed tests:" not in md and "test_1" not in md
