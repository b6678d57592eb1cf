"""A batch graded with ``grade-batch --profile fast`` is a preview, never published as a grade (issue 21).

The batch records are written by hand (``StudentRecord``, as ``grade-batch --profile fast`` writes them):
exercise 7's fast tier leaves out ``test_training_run_raises_mean_score`` (4 points in grader/points.yaml),
so a student right on everything the fast profile ran has ex7 = 16 / 16 and every other exercise 10 / 10.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from grader.reports.export import export_batch
from grader.platforms.lti_publish import publish_gradebook
from grader.records.gradebook import RECORD, FastPreviewRefused, StudentRecord, gradebook_csv
from grader.points import EXERCISES

# grader/points.yaml by hand: every exercise 10, ex7 20 (16 in the fast profile).
FAST_MAX = {stem: 10.0 for stem in EXERCISES} | {"ex7_ppo_step": 16.0}
FULL_EX7 = 20.0


def _write_batch(out: Path, profile: str) -> Path:
    records = []
    for sid in ("amy", "bob"):
        scores = {s: {"score": m, "max_score": m} for s, m in FAST_MAX.items()}
        rec = StudentRecord(student_id=sid, status="graded", submission_hash="h", grader_fingerprint="f",
                            profile=profile, score=76.0, max_score=76.0, exercise_scores=scores)
        (out / sid).mkdir(parents=True)
        (out / sid / RECORD).write_text(rec.model_dump_json(), encoding="utf-8")
        records.append(rec)
    (out / "gradebook.csv").write_text(gradebook_csv(records), encoding="utf-8")
    return out


@pytest.mark.parametrize("fmt", ["canvas", "moodle", "csv"])
def test_every_export_format_refuses_a_fast_profile_batch(tmp_path, fmt):
    batch = _write_batch(tmp_path / "out", "fast")
    target = tmp_path / f"export.{fmt}.csv"
    with pytest.raises(FastPreviewRefused) as err:
        export_batch(batch, fmt, target)
    message = str(err.value)
    assert "--profile fast" in message and "grade-batch" in message and "amy, bob" in message
    assert "--allow-fast-preview" in message
    assert not target.exists()


def test_lti_post_grades_refuses_a_fast_profile_batch(tmp_path):
    batch = _write_batch(tmp_path / "out", "fast")
    with pytest.raises(FastPreviewRefused):  # refused before any platform call (services are never touched)
        publish_gradebook(batch / "gradebook.csv", {"ex7_ppo_step": FULL_EX7}, None, None,
                          lineitems_url="http://x/l", memberships_url="http://x/m")


def test_allowed_preview_is_labelled_never_complete_and_out_of_the_full_maximum(tmp_path):
    batch = _write_batch(tmp_path / "out", "fast")
    canvas = export_batch(batch, "canvas", tmp_path / "c.csv", allow_fast_preview=True)
    rows = list(csv.reader(canvas.path.open(encoding="utf-8")))
    header, possible = rows[0], rows[1]
    assert possible[0] == "Points Possible"
    titles = dict(zip(header[5:], possible[5:]))
    assert titles == {f"ppo (fast preview) {s}": ("20" if s == "ex7_ppo_step" else "10") for s in EXERCISES}
    assert not any("chapter_complete" in h for h in header)
    assert any("preview" in note for note in canvas.notes)
    plain = export_batch(batch, "csv", tmp_path / "p.csv", allow_fast_preview=True)
    book = {r["student_id"]: r for r in csv.DictReader(plain.path.open(encoding="utf-8"))}
    assert book["amy"]["max_total"] == "80" and book["amy"]["total"] == "76"  # 6 x 10 + 20; 6 x 10 + 16
    assert book["amy"]["chapter_complete"] == "" and book["amy"]["status"] == "graded (fast preview)"


def test_a_full_profile_batch_still_exports(tmp_path):
    batch = _write_batch(tmp_path / "out", "full")
    plain = export_batch(batch, "csv", tmp_path / "p.csv")
    book = {r["student_id"]: r for r in csv.DictReader(plain.path.open(encoding="utf-8"))}
    assert book["amy"]["status"] == "graded" and book["amy"]["max_total"] == "76"


def test_cli_export_of_a_fast_batch_exits_1_and_says_how_to_grade_in_full(tmp_path, capsys):
    from ppo_course.cli import main

    batch = _write_batch(tmp_path / "out", "fast")
    assert main(["export", str(batch), "--format", "canvas", "--out", str(tmp_path / "c.csv")]) == 1
    assert "--profile fast" in capsys.readouterr().err and not (tmp_path / "c.csv").exists()
    assert main(["export", str(batch), "--format", "canvas", "--out", str(tmp_path / "c.csv"),
                 "--allow-fast-preview"]) == 0


def test_grade_batch_refuses_to_write_nbgrader_grades_in_the_fast_profile(tmp_path, capsys):
    from grader.batch import run_batch
    from ppo_course.cli import main

    subs = tmp_path / "subs"
    (subs / "amy").mkdir(parents=True)
    (subs / "amy" / "ex1_ratio.py").write_text("x = 1\n", encoding="utf-8")
    with pytest.raises(FastPreviewRefused, match="--format nbgrader"):
        run_batch(subs, tmp_path / "out", profile="fast", formats=["nbgrader"], progress=False, report=False,
                  log=lambda m: None)
    assert not (tmp_path / "out").exists()  # refused before anything is graded or written
    assert main(["grade-batch", str(subs), "--out", str(tmp_path / "out"), "--profile", "fast", "--format",
                 "nbgrader", "--no-progress"]) == 2
    assert "preview" in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_a_fast_profile_record_is_never_complete_even_at_full_marks(tmp_path):
    from grader.reports.export import exercises_complete
    from grader.records.gradebook import read_records

    fast = read_records(_write_batch(tmp_path / "fast", "fast"), ["amy"])[0]
    full = read_records(_write_batch(tmp_path / "full", "full"), ["amy"])[0]
    assert not exercises_complete(fast) and exercises_complete(full)  # the same scores, 16 / 16 on ex7
