"""The class report ranks real diagnoses only; catch-alls (wrong_value, raises_error, ...) get a line
of their own (grader/reports/report.py)."""

from __future__ import annotations

from collections import Counter

from grader.reports.report import ClassSummary, report_markdown


def test_catch_alls_are_listed_apart_from_the_ranked_mistakes():
    s = ClassSummary(n_students=7, status_counts={"graded": 7}, max_total=20.0, totals=[10.0] * 7,
                     exercise_max={"ex2_clipped_loss": 10.0}, exercise_scores={"ex2_clipped_loss": [5.0] * 7},
                     diagnoses=Counter({"wrong_value": 5, "raises_error": 2, "max_instead_of_min": 1}),
                     diagnosis_stems={"wrong_value": {"ex2_clipped_loss", "ex3_full_loss"},
                                      "raises_error": {"ex4_gae"}, "max_instead_of_min": {"ex2_clipped_loss"}},
                     diagnosis_students={"wrong_value": ["a", "b", "c", "d", "e"], "raises_error": ["e", "f"],
                                         "max_instead_of_min": ["g"]})
    md = report_markdown(s, png_name=None)
    table = [ln for ln in md.splitlines() if ln.startswith("| 1 |") or ln.startswith("| 2 |")]
    # The one real diagnosis ranks first although two catch-alls have more students.
    assert table == ["| 1 | `max_instead_of_min` | `ex2_clipped_loss` | 1 | "
                     + md.split("| 1 | `max_instead_of_min` | `ex2_clipped_loss` | 1 | ")[1].splitlines()[0]]
    assert "`wrong_value` |" not in md and "`raises_error` |" not in md
    # a..f: 6 distinct students (e has both catch-alls), on ex2, ex3, ex4.
    assert ("Not matched to a known mistake: 6 students on ex2, ex3, ex4 (`raises_error` 2, `wrong_value` 5)"
            in md)
