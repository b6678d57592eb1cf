"""The TA features end to end on the demo cohort (examples/cohort/submissions) with the real graders.

One grading of exercise 4 only, fast profile (the features, not the graders, are under test), and
a regrade of three students after a change of one hidden test's points (``real_grader_v2``).
Expected by hand from examples/make_cohort.py (see tests/batch/test_demo.py's BY_HAND): on ex4,
eli reads V past the last real token (GAE tests fail, whiten passes), noor whitens with the
biased variance (whiten tests fail), ivan's module has a syntax error (everything fails), lea's
folder is empty (not graded); the 12 others are right. So 15 graded students, and e.g.
``test_gae_no_bootstrap_past_last_token`` passes for 13/15, ``test_whiten_matches_reference``
for 13/15, ``test_gae_carries_no_gradient`` for 13/15 (ivan's broken module, and eli: the check's answer is the
advantages' and returns' values at real positions, which eli's are not; grader/hidden/tied.py).
"""

from __future__ import annotations

import csv

import pytest

from ta_support import ROOT
from grader.reports.analytics import per_test_stats
from grader.reports.export import export_batch
from grader.records.gradebook import FastPreviewRefused
from grader.reports.similarity import run_similarity

COHORT = ROOT / "examples" / "cohort" / "submissions"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def demo_batch(tmp_path_factory):
    from grader.batch import run_batch

    out = tmp_path_factory.mktemp("demo") / "out"
    summary = run_batch(COHORT, out, jobs=2, profile="fast", exercises=["ex4_gae"], progress=False,
                        log=lambda m: None)
    return out, summary.records


def test_per_test_analytics_on_the_demo(demo_batch):
    out, records = demo_batch
    stats = {s.test: s for s in per_test_stats(out, records)}
    assert stats["test_gae_no_bootstrap_past_last_token"].pass_rate == pytest.approx(13 / 15)
    assert stats["test_whiten_matches_reference"].pass_rate == pytest.approx(13 / 15)
    assert stats["test_gae_carries_no_gradient"].pass_rate == pytest.approx(13 / 15)
    assert stats["test_whiten_matches_reference"].top_diagnosis[0] in {"whiten_biased_variance", "module_broken"}
    md = (out / "report.md").read_text()
    assert "## Per hidden test" in md and (out / "report_tests.png").is_file()


def test_canvas_export_of_the_demo_reads_back(demo_batch, tmp_path):
    out, _ = demo_batch
    # Graded in the fast profile: a preview, refused unless asked for, then labelled and never complete.
    with pytest.raises(FastPreviewRefused):
        export_batch(out, "canvas", tmp_path / "canvas.csv")
    done = export_batch(out, "canvas", tmp_path / "canvas.csv", allow_fast_preview=True)
    with open(tmp_path / "canvas.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "ppo (fast preview) ex4_gae"]
    assert any("chapter_complete" in n for n in done.notes)
    assert rows[1][0] == "Points Possible" and float(rows[1][5]) == 10
    by_id = {r[2]: r for r in rows[2:]}  # no roster: the student id is the SIS User ID, and only that
    assert len(by_id) == 16
    assert float(by_id["ada"][5]) == 10 and by_id["ada"][3] == ""
    assert float(by_id["ivan"][5]) == 0
    assert 0 < float(by_id["eli"][5]) < 10 and 0 < float(by_id["noor"][5]) < 10


def test_similarity_on_the_demo(tmp_path):
    """Every demo student was generated from solutions/, so their modules are copies: flagged; ben's
    untouched ex5 stub is boilerplate: never flagged; lea (empty) is counted but has nothing to compare."""
    report = run_similarity(COHORT, tmp_path / "sim", stubs_dir=ROOT / "exercises")
    assert report.n_students == 16
    flagged = {(p.a.owner, p.b.owner, p.a.module) for p in report.flagged}
    assert ("ada", "chen", "ex1_ratio") in flagged
    assert not any("ben" in (a, b) and m == "ex5_rollout_buffer" for a, b, m in flagged)
    assert (tmp_path / "sim" / "similarity.html").is_file()


def test_regrade_of_demo_students_after_a_points_change(tmp_path, monkeypatch):
    """Three demo students on ex4, graded, then regraded by ``real_grader_v2`` (one test 1 → 2 points).

    By hand: ada passes the test: 1 → 2 points, total +1; eli fails it (GAE reads the padding:
    gae_bootstraps_from_padding, 0 → 0); ivan's module does not import: 0 → 0. So one student
    moves, up by 1, on that test only.
    """
    import shutil

    from grader import batch

    subs = tmp_path / "subs"
    for sid in ("ada", "eli", "ivan"):
        shutil.copytree(COHORT / sid, subs / sid)
    kw = dict(jobs=2, profile="fast", exercises=["ex4_gae"], progress=False, log=lambda m: None, report=False)
    first = batch.run_batch(subs, tmp_path / "out", **kw)
    before = {r.student_id: r.score for r in first.records}
    monkeypatch.setattr(batch, "grader_fingerprint", lambda: "points-changed")
    import stand_in_grader

    stand_in_grader.install("real_grader_v2:grade_submission", monkeypatch)
    second = batch.run_batch(subs, tmp_path / "out", **kw)
    after = {r.student_id: r.score for r in second.records}
    assert {s: after[s] - before[s] for s in before} == {"ada": 1, "eli": 0, "ivan": 0}
    with open(tmp_path / "out" / "regrade.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {(r["student_id"], r["test"].rsplit(" · ", 1)[-1], r["old_score"], r["new_score"]) for r in rows} == {
        ("ada", "test_gae_no_bootstrap_past_last_token", "1", "2")}
    md = (tmp_path / "out" / "regrade.md").read_text()
    assert "3 students regraded, 1 with a changed test; 1 up, 0 down" in md
    assert "the test's points changed: 1 → 2" in md
