"""A grader fault is never a student's grade: ``grade`` exits 3 and writes nothing, ``grade-batch`` records
``grader_fault`` with every score cell empty and exits 3 naming the students, ``export`` refuses the batch (or,
with ``--allow-grader-faults``, leaves the faulted cells empty, never 0), Gradescope sees a failed run.

The batch tests use the stand-in grader (tests/batch/stand_in_grader.py): ``STANDIN_GRADER_ERROR`` makes a
module's tests fail with ``grader_error``, which is what the real grader reports when its sandbox cannot
import torch or a module the hidden tests import is missing; ``STANDIN_CRASH`` kills the worker (a lost worker).
The ``grade`` test runs the real grader with hypothesis hidden from its Python.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from io import StringIO
from pathlib import Path

import pytest

from conftest import write_student

ROOT = Path(__file__).resolve().parents[2]
OK = {f"{stem}.py": "ok\n" for stem in ("ex1_ratio", "ex2_clipped_loss")}


def _cli(*argv: str) -> tuple[int, str]:
    from ppo_course.cli import main

    err = StringIO()
    with redirect_stderr(err), redirect_stdout(StringIO()):
        rc = main(list(argv))
    return rc, err.getvalue()


def test_grade_with_a_package_missing_from_the_graders_python_exits_3_and_writes_no_score(tmp_path):
    """hypothesis (which the hidden tests import) hidden from the grader's Python: before, `grade` printed
    "0 / 10 points", exited 0 and wrote results.json `status: graded`, score 0. Now: exit 3, the reason names
    hypothesis, and no results.json or feedback.md (a stale one from an earlier run is removed)."""
    sub = tmp_path / "alice"
    sub.mkdir()
    (sub / "ex1_ratio.py").write_text((ROOT / "solutions" / "ex1_ratio.py").read_text())
    out, feedback = tmp_path / "results.json", tmp_path / "feedback.md"
    out.write_text('{"score": 7}')  # an earlier run's: must not stand for this grading
    code = ("import sys; sys.modules['hypothesis'] = None\n"
            "from ppo_course.cli import main\n"
            f"sys.exit(main(['grade', {str(sub)!r}, '--out', {str(out)!r}, '--feedback', {str(feedback)!r}, "
            "'--exercises', 'ex1_ratio']))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 3, (proc.returncode, proc.stdout, proc.stderr[-2000:])
    assert "grader fault" in proc.stderr and "hypothesis" in proc.stderr, proc.stderr[-2000:]
    assert not out.exists() and not feedback.exists()
    assert "points" not in proc.stdout


def _faulted_batch(tmp_path: Path, monkeypatch, marker: str) -> tuple[Path, int, str]:
    monkeypatch.setattr("grader.batch.grader_fingerprint", lambda: "v1")
    subs = tmp_path / "subs"
    write_student(subs, "ana", OK)
    write_student(subs, "bo", OK | {"ex3_full_loss.py": marker})
    write_student(subs, "cy", OK | {"ex4_gae.py": marker})
    out = tmp_path / "out"
    rc, err = _cli("grade-batch", str(subs), "--out", str(out), "--jobs", "1", "--no-progress")
    return out, rc, err


@pytest.mark.parametrize("marker", ["STANDIN_GRADER_ERROR\n", "STANDIN_CRASH\n"])
def test_a_faulted_batch_publishes_no_score_for_the_faulted_and_exits_3_naming_them(tmp_path, monkeypatch, stand_in,
                                                                                   marker):
    """A sandbox that cannot import torch (every test grader_error) or a lost worker: before, the students were
    `crashed` with 0 in every cell, the batch exited 0, and feedback.md said "Total: 0 / 80"."""
    out, rc, err = _faulted_batch(tmp_path, monkeypatch, marker)
    assert rc == 3 and "bo, cy" in err, (rc, err)
    book = {r["student_id"]: r for r in csv.DictReader((out / "gradebook.csv").open())}
    assert book["ana"]["status"] == "graded" and book["ana"]["total"] == "4"  # 2 modules x 2 points (stand-in)
    nb = {r["student_id"]: r for r in csv.DictReader((out / "grades.csv").open())} if (out / "grades.csv").exists() else {}
    for sid in ("bo", "cy"):
        row = book[sid]
        assert row["status"] == "grader_fault", row
        assert row["total"] == "" and all(row[s] == "" for s in row if s.startswith("ex")), row
        assert row["max_total"] not in ("", "0")
        results = json.loads((out / sid / "results.json").read_text())
        assert "score" not in results and results["tests"] == [], results
        assert results["extra_data"]["status"] == "grader_fault"
        assert all(e["score"] is None for e in results["extra_data"]["exercises"].values())
        feedback = (out / sid / "feedback.md").read_text()
        assert "Total" not in feedback and "Grading failed" in feedback and "rerun" in feedback, feedback
        assert json.loads((out / sid / "batch.json").read_text())["score"] is None
        assert sid not in nb or nb[sid]["score"] == ""


def test_export_refuses_a_faulted_batch_and_the_flag_leaves_the_cells_empty(tmp_path, monkeypatch, stand_in):
    out, rc, _ = _faulted_batch(tmp_path, monkeypatch, "STANDIN_GRADER_ERROR\n")
    assert rc == 3
    for fmt in ("csv", "canvas", "moodle"):
        target = tmp_path / f"{fmt}.csv"
        rc, err = _cli("export", str(out), "--format", fmt, "--out", str(target))
        assert rc == 1 and "grader_fault" in err and "bo, cy" in err and not target.exists(), (fmt, rc, err)
        rc, err = _cli("export", str(out), "--format", fmt, "--out", str(target), "--allow-grader-faults")
        assert rc == 0, err
        rows = list(csv.reader(target.open()))
        header = rows[0]
        body = {r[0] if fmt != "canvas" else r[2]: r for r in rows[1:] if r[0] != "Points Possible"}
        grades = [i for i, h in enumerate(header) if "ex" in h or h in ("total", "chapter_complete")
                  or h.endswith("chapter_complete")]
        for sid in ("bo", "cy"):
            assert all(body[sid][i] == "" for i in grades), (fmt, header, body[sid])
        # ana is graded: every exercise cell holds her score (chapter_complete is empty: no quiz data was given).
        assert all(body["ana"][i] != "" for i in grades if not header[i].endswith("chapter_complete")), body["ana"]


def test_a_rerun_regrades_the_faulted_students(tmp_path, monkeypatch, stand_in):
    """A fault has no score to keep: the same command, once the grader is fixed, grades them (not "up to date")."""
    out, rc, _ = _faulted_batch(tmp_path, monkeypatch, "STANDIN_GRADER_ERROR\n")
    assert rc == 3
    for sid, stem in (("bo", "ex3_full_loss"), ("cy", "ex4_gae")):  # the grader is fixed: the marker means "ok" now
        (tmp_path / "subs" / sid / f"{stem}.py").write_text("ok\n")
    rc, err = _cli("grade-batch", str(tmp_path / "subs"), "--out", str(out), "--jobs", "1", "--no-progress")
    assert rc == 0, err
    book = {r["student_id"]: r for r in csv.DictReader((out / "gradebook.csv").open())}
    assert {sid: (r["status"], r["total"]) for sid, r in book.items()} == {
        "ana": ("graded", "4"), "bo": ("graded", "6"), "cy": ("graded", "6")}


def test_lti_publishing_refuses_a_faulted_batch_through_the_shared_check(tmp_path, monkeypatch, stand_in):
    """``grader.records.gradebook.refuse_grader_faults`` is the one check of every publishing command."""
    from grader.records.gradebook import read_records
    from grader.records.faults import GraderFaultRefused, refuse_grader_faults

    out, rc, _ = _faulted_batch(tmp_path, monkeypatch, "STANDIN_GRADER_ERROR\n")
    records = read_records(out, ["ana", "bo", "cy"])
    with pytest.raises(GraderFaultRefused, match="bo, cy"):
        refuse_grader_faults(records, out)
    assert refuse_grader_faults(records, out, allowed=True) == ["bo", "cy"]
