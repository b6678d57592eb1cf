"""Per-test analytics of the class report (grader/analytics.py), on stand-in gradings.

By hand, from the stand-in's rules (tests/batch/stand_in_grader.py: test_value fails on
BUG_VALUE with diagnosis max_instead_of_min, test_grad on BUG_GRAD with ratio_detached):
latest attempts ann_2 (ok), ben (BUG_VALUE), cy (BUG_VALUE BUG_GRAD), dee (ok) on ex2:
test_value passes 2/4 = 50%, test_grad 3/4 = 75%. History: ann (BUG_GRAD) then ann_2 (ok):
ann reaches full marks on test_grad at attempt 2, everyone else at attempt 1 or never.
"""

from __future__ import annotations

import pytest

from ta_support import write_student
from grader.analytics import per_test_stats
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
