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


def test_mistakes_past_the_table_are_counted_not_dropped():
    """Twelve diagnoses and a table of ten: the two left (1 student each) are named under the table."""
    ids = ["max_instead_of_min", "ratio_inverted", "entropy_sign", "gae_missing_gamma", "kl_wrong_direction",
           "whiten_biased_variance", "value_loss_min_instead_of_max", "log_of_softmax", "score_on_padding",
           "approx_kl_wrong", "clipfrac_wrong", "entropy_unmasked"]
    counts = Counter({d: (3 if i < 10 else 1) for i, d in enumerate(ids)})
    s = ClassSummary(n_students=3, status_counts={"graded": 3}, max_total=20.0, totals=[10.0] * 3,
                     exercise_max={"ex2_clipped_loss": 10.0}, exercise_scores={"ex2_clipped_loss": [5.0] * 3},
                     diagnoses=counts, diagnosis_stems={d: {"ex2_clipped_loss"} for d in ids},
                     diagnosis_students={d: ["a"] for d in ids})
    md = report_markdown(s, png_name=None, top=10)
    assert "| 10 |" in md and "| 11 |" not in md
    assert "… and 2 more diagnosed mistakes, each of at most 1 student: `clipfrac_wrong` (1), `entropy_unmasked` (1)." in md
