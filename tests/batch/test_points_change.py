"""A change of an exercise's maximum against the published batch is named by ``grade-batch``, refused without
``--accept-points-change``, and named again by ``export`` (grader/records/points_change.py).

By hand, from the stand-ins (tests/batch/stand_in_grader.py: two 1-point tests per module, so each exercise's
maximum is 2; tests/batch/stand_in_points.py: ``test_value`` worth 0.5, so 1.5). The points file's maxima are
what the batch compares (``grader.records.points_change.current_maxima``), set here to the stand-ins' own.
"""

from __future__ import annotations

import csv
import json
from contextlib import redirect_stderr, redirect_stdout
from io import StringIO

from conftest import write_student
from ppo_course.syllabus import EXERCISES

OK = {f"{stem}.py": "ok\n" for stem in ("ex1_ratio", "ex2_clipped_loss")}
V1 = dict.fromkeys(EXERCISES, 2.0)
V2 = dict.fromkeys(EXERCISES, 1.5)


def _cli(*argv: str) -> tuple[int, str]:
    from ppo_course.cli import main

    err = StringIO()
    with redirect_stderr(err), redirect_stdout(StringIO()):
        rc = main([str(a) for a in argv])
    return rc, err.getvalue()


def _grader(monkeypatch, fingerprint: str, maxima: dict[str, float]) -> None:
    import grader.records.points_change as points_change

    monkeypatch.setattr("grader.batch.grader_fingerprint", lambda: fingerprint)
    monkeypatch.setattr(points_change, "current_maxima", lambda: dict(maxima))


def test_a_changed_maximum_is_named_refused_then_accepted_and_exported_with_a_warning(tmp_path, monkeypatch, stand_in):
    """Issue 30.4: a points change that moved a maximum passed with no word from grade-batch or export. Now the
    rerun is refused (exit 1, nothing regraded) naming each exercise "maximum 2 → 1.5", also for a batch whose
    maxima are known from its records alone; --accept-points-change regrades and says so; export warns; and the
    fresh first run and a rerun at the accepted maxima say nothing."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    for sid in ("ana", "bo"):
        write_student(subs, sid, OK)
    batch = ("grade-batch", subs, "--out", out, "--jobs", "1", "--no-progress")
    _grader(monkeypatch, "v1", V1)
    rc, err = _cli(*batch)
    assert rc == 0 and "maximum" not in err, err  # the fresh first run: nothing to compare
    assert json.loads((out / ".batch" / "maxima.json").read_text()) == V1
    published = (out / "gradebook.csv").read_text()

    stand_in("stand_in_points:grade_submission")
    _grader(monkeypatch, "v2", V2)
    for how in ("maxima.json", "records only"):
        if how == "records only":  # a batch published before maxima.json existed: its batch.json records say 2
            (out / ".batch" / "maxima.json").unlink()
        rc, err = _cli(*batch)
        assert rc == 1, (how, rc, err)
        assert "ex1_ratio: maximum 2 → 1.5 since the published batch" in err, (how, err)
        assert "ex2_clipped_loss: maximum 2 → 1.5 since the published batch" in err and "--accept-points-change" in err
        assert (out / "gradebook.csv").read_text() == published  # nothing regraded
        assert not (out / ".batch" / "points_changes.json").exists()

    rc, err = _cli(*batch, "--accept-points-change")
    assert rc == 0 and "warning: ex1_ratio: maximum 2 → 1.5 since the published batch" in err, err
    book = {r["student_id"]: r for r in csv.DictReader((out / "gradebook.csv").open())}
    # regraded at the new points: 1.5 + 1.5 for ana's two modules, 7 x 1.5 = 10.5 possible (stand-ins grade all seven)
    assert (book["ana"]["total"], book["ana"]["max_total"]) == ("3", "10.5")
    rc, err = _cli("export", out, "--format", "csv", "--out", tmp_path / "grades.csv")
    assert rc == 0, err
    assert "warning: ex1_ratio: maximum 2 → 1.5 since the published batch" in err, err
    assert "warning: ex2_clipped_loss: maximum 2 → 1.5 since the published batch" in err
    rc, err = _cli(*batch)  # the accepted maxima are the published ones now
    assert rc == 0 and "maximum" not in err, err


def test_no_change_and_a_fresh_batch_say_nothing(tmp_path):
    """The unit: a fresh state (no file, no record) writes the maxima and returns no change; the same maxima again
    return none; export has nothing to warn about without an accepted change."""
    from grader.records.points_change import check_points_change, export_warnings

    state = tmp_path / ".batch"
    state.mkdir()
    assert check_points_change(state, [], accept=False, now=V1) == []
    assert check_points_change(state, [], accept=False, now=V1) == []
    assert export_warnings(tmp_path, V2) == []
    (change,) = check_points_change(state, [], accept=True, now=V1 | {"ex1_ratio": 11.0})
    assert change.line() == "ex1_ratio: maximum 2 → 11 since the published batch"
    check_points_change(state, [], accept=True, now=V1 | {"ex1_ratio": 12.0})  # the oldest published maximum stays
    assert json.loads((state / "points_changes.json").read_text())["ex1_ratio"] == {"published": 2.0, "now": 12.0}
    assert [w.split(" (")[0] for w in export_warnings(tmp_path, V1 | {"ex1_ratio": 12.0})] == [
        "ex1_ratio: maximum 2 → 12 since the published batch"]
