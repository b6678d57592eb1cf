"""The invariant of what a TA publishes, over any sequence of grade-batch runs (hypothesis).

After plain runs, ``--never-lower`` regrades, a points change (another grader version), a changed
submission and an interrupted batch, in any order: for every student in the gradebook, the
gradebook, the student's results.json (its exercises, its tests and its total), feedback.md, the
class report and the csv export agree on every exercise score and total, and no score (test,
exercise, total) exceeds its maximum.

The graders are the stand-ins (tests/batch/stand_in_grader.py: 2 points per module, 1 per test;
stand_in_points.py: ``test_value`` worth 0.5), so one batch takes well under a second; the cohort
has three students and two exercises.
"""

from __future__ import annotations

import csv
import json
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import write_student
from grader import batch
from grader.batch import run_batch

EXERCISES = ["ex1_ratio", "ex2_clipped_loss"]
GRADERS = {"v1": "stand_in_grader:grade_submission", "points": "stand_in_points:grade_submission"}
SOURCES = ["ok", "BUG_VALUE", "BUG_GRAD", "BUG_VALUE BUG_GRAD"]
STEPS = st.one_of(
    st.tuples(st.just("plain")),
    st.tuples(st.just("never_lower")),
    st.tuples(st.just("grader"), st.sampled_from(sorted(GRADERS))),  # a points change (or back)
    st.tuples(st.just("change"), st.integers(0, 2), st.integers(0, 1), st.sampled_from(SOURCES)),
    st.tuples(st.just("interrupt"), st.booleans()),  # a batch stopped after its first student (never-lower or not)
)


class _Stop(KeyboardInterrupt):
    """Ctrl-C after the first student's files were written, before their record (the worst moment)."""


def _rows(path: Path) -> dict[str, dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return {r["student_id"]: r for r in csv.DictReader(fh)}


def _close(a: float, b: float) -> bool:
    return abs(a - b) < 1e-6


def check_published(out: Path) -> None:
    """Assert the invariant on a batch folder (see the module docstring)."""
    from ppo_course.cli import main

    book = _rows(out / "gradebook.csv")
    assert main(["export", str(out), "--format", "csv", "--out", str(out.parent / "export.csv")]) == 0
    export = _rows(out.parent / "export.csv")
    assert set(export) == set(book)
    for sid, row in book.items():
        results = json.loads((out / sid / "results.json").read_text(encoding="utf-8"))
        extra = results["extra_data"]
        total, max_total = float(row["total"]), float(row["max_total"])
        assert _close(total, results["score"]) and _close(max_total, extra["max_score"]), sid
        assert total <= max_total + 1e-9, sid
        assert _close(float(export[sid]["total"]), total) and _close(float(export[sid]["max_total"]), max_total)
        assert _close(sum(t["score"] for t in results["tests"]), total), sid  # the total is its tests'
        for t in results["tests"]:
            assert -1e-9 <= t["score"] <= t["max_score"] + 1e-9, (sid, t["name"])
        feedback = (out / sid / "feedback.md").read_text(encoding="utf-8")
        assert not feedback.startswith("\n")
        if row["status"] == "graded":
            assert f"**Total: {total:g} / {max_total:g} points**" in feedback, sid
        for stem in [c for c in row if c not in ("student_id", "total", "max_total", "status", "message")]:
            score, ex = float(row[stem]), extra["exercises"][stem]
            assert _close(score, ex["score"]) and _close(score, float(export[sid][stem])), (sid, stem)
            assert score <= ex["max_score"] + 1e-9, (sid, stem)
            tests = [t for t in results["tests"] if t["tags"][0] == stem]
            assert _close(sum(t["score"] for t in tests), score), (sid, stem)  # an exercise is its tests
            if row["status"] == "graded":
                assert f"| `{stem}` | {score:g} / {ex['max_score']:g} |" in feedback, (sid, stem)
    report = (out / "report.md").read_text(encoding="utf-8")
    totals = [float(r["total"]) for r in book.values()]
    match = re.search(r"min (\S+), max (\S+)\.", report)
    assert match and _close(float(match[1]), min(totals)) and _close(float(match[2]), max(totals))


def _run(subs: Path, out: Path, monkeypatch, grader: str, step: tuple, last: bool) -> None:
    kind = step[0]
    kw = dict(jobs=1, progress=False, log=lambda m: None, exercises=EXERCISES, report=last,
              never_lower=kind == "never_lower" or (kind == "interrupt" and step[1]))
    if kind == "interrupt":
        real = batch.write_student  # the batch's one publication of a student's files
        calls = []

        def publish_then_stop(outcome, **where):
            real(outcome, **where)
            calls.append(where["results"].parent)
            raise _Stop

        monkeypatch.setattr(batch, "write_student", publish_then_stop)
        try:
            with pytest.raises(KeyboardInterrupt):
                run_batch(subs, out, force=True, **kw)
        finally:
            monkeypatch.setattr(batch, "write_student", real)
        if last:
            run_batch(subs, out, **kw)  # the rerun a TA makes (and the report with it)
        return
    run_batch(subs, out, **kw)


@pytest.mark.slow
@settings(max_examples=3, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(STEPS, min_size=1, max_size=3), first=st.lists(st.sampled_from(SOURCES), min_size=6,
                                                                      max_size=6))
@example(steps=[("interrupt", False)], first=["ok"] * 6)  # a kill right after a publication, every run
def test_published_files_agree_after_any_sequence_of_runs(steps, first, monkeypatch, stand_in):
    with tempfile.TemporaryDirectory() as tmp:
        subs, out = Path(tmp) / "subs", Path(tmp) / "out"
        for i, sid in enumerate(("ana", "bo", "cy")):
            write_student(subs, sid, {f"{stem}.py": first[2 * i + j] for j, stem in enumerate(EXERCISES)})
        grader = "v1"
        stand_in(GRADERS[grader])
        monkeypatch.setattr(batch, "grader_fingerprint", lambda: grader)
        run_batch(subs, out, jobs=1, progress=False, log=lambda m: None, exercises=EXERCISES, report=not steps)
        for n, step in enumerate(steps):
            if step[0] == "grader":
                grader = step[1]
                stand_in(GRADERS[grader])
                monkeypatch.setattr(batch, "grader_fingerprint", lambda g=grader: g)
            elif step[0] == "change":
                sid = ("ana", "bo", "cy")[step[1]]
                (subs / sid / f"{EXERCISES[step[2]]}.py").write_text(step[3] + f" # edit {n}\n")
            _run(subs, out, monkeypatch, grader, step, last=n == len(steps) - 1)
        if steps and steps[-1][0] in ("grader", "change"):
            run_batch(subs, out, jobs=1, progress=False, log=lambda m: None, exercises=EXERCISES)
        check_published(out)


def test_never_lower_after_a_points_change_clamps_to_the_new_maximum_and_says_so(tmp_path, monkeypatch, stand_in):
    """By hand: ana's ex1 scores 2 / 2 under v1; under the points change test_value is worth 0.5, so the
    regrade gives 1.5 / 1.5. Never lower keeps the published tests, each clamped to its new points:
    test_value 1 -> 0.5, test_grad 1: 1.5, not the published 2 (which would exceed the maximum)."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    write_student(subs, "ana", {"ex1_ratio.py": "ok"})
    write_student(subs, "bo", {"ex1_ratio.py": "BUG_VALUE"})
    monkeypatch.setattr(batch, "grader_fingerprint", lambda: "v1")
    run_batch(subs, out, jobs=1, progress=False, log=lambda m: None, exercises=["ex1_ratio"], report=False)
    stand_in(GRADERS["points"])
    monkeypatch.setattr(batch, "grader_fingerprint", lambda: "points")
    run_batch(subs, out, jobs=1, progress=False, log=lambda m: None, exercises=["ex1_ratio"], never_lower=True)
    book = _rows(out / "gradebook.csv")
    assert (book["ana"]["ex1_ratio"], book["ana"]["max_total"]) == ("1.5", "1.5")
    # bo: v1 gave 1 / 2 (test_value failed); the regrade gives 0 + 1 = 1 / 1.5: not lower, nothing kept.
    assert book["bo"]["ex1_ratio"] == "1" and "never lower" not in book["bo"]["message"]
    check_published(out)


def test_a_changed_submission_under_never_lower_is_said_in_regrade_md_and_feedback(tmp_path, monkeypatch, stand_in):
    """bo's ex1 goes from right (2) to BUG_VALUE (1): regraded in full (1), said in feedback.md and regrade.md."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    write_student(subs, "ana", {"ex1_ratio.py": "ok"})
    write_student(subs, "bo", {"ex1_ratio.py": "ok"})
    monkeypatch.setattr(batch, "grader_fingerprint", lambda: "v1")
    kw = dict(jobs=1, progress=False, log=lambda m: None, exercises=["ex1_ratio"])
    run_batch(subs, out, report=False, **kw)
    (subs / "bo" / "ex1_ratio.py").write_text("BUG_VALUE\n")
    run_batch(subs, out, never_lower=True, **kw)
    assert _rows(out / "gradebook.csv")["bo"]["total"] == "1"
    feedback = (out / "bo" / "feedback.md").read_text()
    assert feedback.startswith("**Regrade:** your submission changed since the published grading (2 / 2)")
    regrade_md = (out / "regrade.md").read_text()
    assert "### bo: 2 → 1 (the submission changed" in regrade_md and "### ana" not in regrade_md
    check_published(out)


def test_a_removed_student_leaves_the_out_folder_and_is_said(tmp_path, stand_in):
    subs, out = tmp_path / "subs", tmp_path / "out"
    write_student(subs, "ana", {"ex1_ratio.py": "ok"})
    write_student(subs, "bo", {"ex1_ratio.py": "ok"})
    kw = dict(jobs=1, progress=False, exercises=["ex1_ratio"], report=False)
    run_batch(subs, out, log=lambda m: None, **kw)
    import shutil

    shutil.rmtree(subs / "bo")
    said: list[str] = []
    run_batch(subs, out, log=said.append, **kw)
    assert not (out / "bo").exists() and (out / ".batch" / "removed" / "bo" / "results.json").is_file()
    assert any("no longer in the submissions folder" in m and "bo" in m for m in said)
    assert list(_rows(out / "gradebook.csv")) == ["ana"]
    write_student(subs, "bo", {"ex1_ratio.py": "ok"})  # back (the same submission): the folder comes back
    again = run_batch(subs, out, log=said.append, **kw)
    assert (out / "bo" / "results.json").is_file() and sorted(again.skipped) == ["ana", "bo"]


def _result(scores: dict[tuple[str, str], tuple[float, float]]):
    """A typed result of {(stem, test): (score, max)}: every test hidden, each exercise the sum of its tests."""
    from grader.records.results import ExerciseResult, GradeResult, TestResult

    tests = [TestResult(exercise=stem, kind="hidden", test=name, score=s, max_score=m,
                        status="passed" if s >= m else "failed", output="", visibility="visible",
                        diagnosis=None if s >= m else "wrong_value") for (stem, name), (s, m) in scores.items()]
    stems = dict.fromkeys(stem for stem, _ in scores)
    exercises = {stem: ExerciseResult(score=sum(t.score for t in tests if t.exercise == stem),
                                      max_score=sum(t.max_score for t in tests if t.exercise == stem))
                 for stem in stems}
    return GradeResult(submission="s", status="graded", grader_version="t", profile="full", exercises=exercises,
                       tests=tests)


def test_never_lower_on_typed_results_keeps_each_exercise_and_clamps_by_hand():
    """By hand. Published: ex1 a=1/1 b=1/1 (2), ex2 c=1/1 (1), ex4 d=0/1 (0). Regrade after a points change:
    ex1 a=0/0.5 b=1/1 (1), ex2 c=0/1 (0), ex4 d=1/1 (1). ex1 is kept: a clamped to 0.5, b 1 -> 1.5 (> 1, and
    not the published 2, which is above the new max 1.5); ex2 kept at 1; ex4 not (the regrade gives more)."""
    from grader.reports.regrade import never_lower

    old = _result({("ex1_ratio", "a"): (1, 1), ("ex1_ratio", "b"): (1, 1), ("ex2_clipped_loss", "c"): (1, 1),
                   ("ex4_gae", "d"): (0, 1)})
    new = _result({("ex1_ratio", "a"): (0, 0.5), ("ex1_ratio", "b"): (1, 1), ("ex2_clipped_loss", "c"): (0, 1),
                   ("ex4_gae", "d"): (1, 1)})
    kept, notes, replaced = never_lower(new, old)
    assert {stem: e.score for stem, e in kept.exercises.items()} == {"ex1_ratio": 1.5, "ex2_clipped_loss": 1,
                                                                   "ex4_gae": 1}
    assert {stem: e.max_score for stem, e in kept.exercises.items()} == {"ex1_ratio": 1.5, "ex2_clipped_loss": 1,
                                                                       "ex4_gae": 1}
    assert [(t.test, t.score, t.max_score) for t in kept.tests] == [("a", 0.5, 0.5), ("b", 1, 1), ("c", 1, 1),
                                                                    ("d", 1, 1)]
    assert kept.score == 3.5 and all(t.score <= t.max_score for t in kept.tests)
    assert [n.split(" ")[0] for n in notes] == ["ex1_ratio", "ex2_clipped_loss"]
    assert "clamped" in notes[0] and notes[1] == "ex2_clipped_loss kept at its published 1 (the regrade gives 0)"
    assert sorted(t.test for t in replaced) == ["a", "b", "c"]
    assert never_lower(old, old)[1] == []  # nothing lower: nothing kept
