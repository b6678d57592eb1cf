"""Issue 13 item 7: the small things a TA notices (report, grade, grade-batch, demo, danger plot)."""

from __future__ import annotations

import os
import stat
from collections import Counter
from pathlib import Path

import pytest

from ppo_course.cli import main

# Twelve diagnosis ids known to the report (re-teachable ones, not run/echo/catch-all ids), 1..12 students.
MISTAKES = ["ratio_inverted", "ratio_detached", "log_of_softmax", "logprobs_misaligned", "ratio_in_probability_space",
            "modifies_input", "wrong_dtype", "mask_dtype_unsupported", "not_finite", "placement_ignored",
            "wrong_device", "out_of_memory"]


def _summary(n_students: int = 3):
    from grader.reports.report import ClassSummary

    return ClassSummary(n_students=n_students, status_counts={"graded": n_students}, max_total=80.0,
                        totals=[10.0, 40.0, 75.0][:n_students], exercise_max={"ex1_ratio": 10.0},
                        exercise_scores={"ex1_ratio": [1.0, 5.0, 10.0][:n_students]},
                        diagnoses=Counter({d: 1 + i % n_students for i, d in enumerate(MISTAKES)}),
                        diagnosis_stems={d: {"ex1_ratio"} for d in MISTAKES},
                        diagnosis_points=Counter({d: 0.5 * (i + 1) for i, d in enumerate(MISTAKES)}))


def test_report_png_lists_the_same_mistakes_as_report_md_with_whole_student_counts():
    from grader.reports.report import report_figure, report_markdown

    summary = _summary()
    md = report_markdown(summary)
    md_rows = [line.split("`")[1] for line in md.splitlines() if line.startswith("| ") and "`" in line
               and line.split("|")[1].strip().isdigit()]
    fig = report_figure(summary)
    hist, _, mistakes = fig.axes[:3]
    png_rows = [t.get_text() for t in mistakes.get_yticklabels()]
    assert len(md_rows) == 10 and png_rows == md_rows
    fig.canvas.draw()
    ticks = [t for t in hist.yaxis.get_ticklocs() if t >= 0]  # students are counted in whole numbers
    assert ticks and all(float(t).is_integer() for t in ticks), ticks
    # The mistakes panel: bars are the points the class lost to each mistake (not ten bars of one student
    # each), the students written beside them.
    assert mistakes.get_xlabel() == "points lost by the class"
    widths = [round(p.get_width(), 6) for p in mistakes.patches]
    assert widths == [summary.diagnosis_points[d] for d in md_rows]
    said = [t.get_text().strip() for t in mistakes.texts]
    assert said == [f"{n} student{'s' if n != 1 else ''}" for n in (summary.diagnoses[d] for d in md_rows)]


def test_batch_outputs_share_one_file_mode(tmp_path: Path):
    """report.md (atomic_write_text) and report.png get the same mode, the one a plain open() gives."""
    from grader.reports.report import plot_report
    from ppo_course.atomic_files import atomic_write_text

    old = os.umask(0o022)
    try:
        md = atomic_write_text(tmp_path / "report.md", "# Class report\n")
        png = plot_report(_summary(), tmp_path / "report.png")
        plain = tmp_path / "plain.txt"
        plain.write_text("x")
    finally:
        os.umask(old)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (md, png, plain)}
    assert modes == {"report.md": 0o644, "report.png": 0o644, "plain.txt": 0o644}
    os.chmod(md, 0o600)  # a TA who made a file private keeps it private when it is rewritten
    atomic_write_text(md, "again\n")
    assert stat.S_IMODE(md.stat().st_mode) == 0o600


def test_grade_on_an_empty_folder_says_why(tmp_path: Path, capsys):
    empty = tmp_path / "alice"
    empty.mkdir()
    assert main(["grade", str(empty), "--out", str(tmp_path / "results.json")]) == 0
    out = capsys.readouterr().out
    assert "0 / 80 points" in out and "holds no Python file" in out  # the batch's words for an empty folder


def test_grade_batch_says_where_the_nbgrader_csv_went(tmp_path: Path, capsys):
    subs = tmp_path / "subs"
    (subs / "alice").mkdir(parents=True)
    out = tmp_path / "out"
    assert main(["grade-batch", str(subs), "--out", str(out), "--format", "nbgrader", "--no-progress",
                 "--exercises", "ex1_ratio"]) == 0
    printed = capsys.readouterr().out
    assert f"nbgrader grades: {out / 'grades.csv'}" in printed and (out / "grades.csv").is_file()


def test_grade_batch_after_ctrl_c_says_rerun_to_resume(tmp_path: Path, capsys, monkeypatch):
    import grader.batch

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(grader.batch, "run_batch", interrupted)
    subs = tmp_path / "subs"
    (subs / "alice").mkdir(parents=True)
    assert main(["grade-batch", str(subs), "--out", str(tmp_path / "out"), "--no-progress"]) == 130
    err = capsys.readouterr().err
    assert "interrupted" in err and "rerun the same command to resume" in err


def test_demo_writes_under_the_working_directory(tmp_path: Path, monkeypatch):
    import grader.batch

    seen = {}

    class Stop(Exception):
        pass

    def record(submissions, out, **kwargs):
        seen["out"], seen["force"] = Path(out), kwargs.get("force")
        raise Stop

    monkeypatch.setattr(grader.batch, "run_batch", record)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(Stop):
        main(["demo", "--no-progress"])
    assert seen["out"] == tmp_path / "demo-out" and seen["force"] is True


def test_danger_plot_never_draws_a_negative_kl():
    from ppo_course import plots

    steps = [{"step": i, "ppo/mean_scores": 0.1, "toy/gold_score": 0.1, "objective/kl": kl, "toy/eos_frac": 1.0}
             for i, kl in enumerate([0.0, -0.3, 0.5, -0.05, 2.0], 1)]
    fig = plots.danger_board({"parameter": "init_kl_coef", "runs": [
        {"label": "typical", "value": 0.05, "steps": steps}]})
    kl_ax = fig.axes[2]
    ys = [y for line in kl_ax.get_lines() for y in line.get_ydata()]
    assert ys and min(ys) >= 0.0 and kl_ax.get_ylim()[0] >= 0.0
    assert "drawn at 0" in kl_ax.get_title()


def test_feedback_says_a_reported_test_once_and_a_shared_test_name_once():
    """A 0-point test whose docstring starts "(0 points, reported)" gets that said once; a public and a hidden
    test sharing a name are listed once under "Passed:" (issue 21 item 7)."""
    from grader.records.results import ExerciseResult, GradeResult, TestResult

    def test(kind, name, passed, points, doc=""):
        return TestResult(exercise="ex7_ppo_step", kind=kind, test=name, score=points if passed else 0.0,
                          max_score=points, status="passed" if passed else "failed", output="",
                          visibility="visible", diagnosis=None if passed else "ppo_step_own_pieces_differ", doc=doc)

    result = GradeResult(submission="s", status="graded", grader_version="t", profile="full",
                         exercises={"ex7_ppo_step": ExerciseResult(score=2, max_score=3, state="graded")},
                         tests=[test("public", "test_step_runs", True, 1), test("hidden", "test_step_runs", True, 1),
                                test("hidden", "test_step_matches", False, 1),
                                test("hidden", "test_own", False, 0, "(0 points, reported) The step with YOUR ex1-ex6.")])
    md = result.feedback_markdown()
    assert "Passed: `test_step_runs`\n" in md
    assert md.count("(0 points") == 1 and "did not pass: The step with YOUR ex1-ex6." in md


def test_demo_and_grade_batch_print_the_same_summary_line(tmp_path: Path):
    """Both commands print ``BatchSummary.line()`` (issue 21 item 7: their summaries differed)."""
    import inspect

    from grader.batch import BatchSummary
    from grader.commands import demo, grade_batch

    summary = BatchSummary(tmp_path, [], ["a"], ["b"], [], 1.25)
    assert summary.line() == "0 students (); graded now 1, up to date 1; 1.2 s"
    for command in (demo, grade_batch):  # the command's module (grade-batch prints it from a helper of run)
        assert "print(summary.line()" in inspect.getsource(command)


def test_the_demo_table_in_a_log_shows_every_score_whole(tmp_path: Path):
    """Outside a terminal `demo` prints at width 160: the widest gradebook (full profile, half points, the longest
    status) keeps every score cell whole; only the "why" column is cut (``…``)."""
    import csv
    import inspect
    import io

    from rich.console import Console

    from grader.commands import demo

    stems = ["ex1_ratio", "ex2_clipped_loss", "ex3_full_loss", "ex4_gae", "ex5_rollout_buffer", "ex6_kl_reward",
             "ex7_ppo_step"]
    row = {"student_id": "maximilian", **{s: "17.5" for s in stems}, "total": "100.0", "max_total": "100",
           "status": "grader_fault", "message": "why " * 40}
    with open(tmp_path / "gradebook.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(row))
        writer.writeheader()
        writer.writerow(row)
    assert "Console(width=160)" in inspect.getsource(demo.run)
    buf = io.StringIO()
    Console(file=buf, width=160).print(demo.gradebook_table(tmp_path))
    body = buf.getvalue()
    assert body.count("17.5") == 7 and "100.0" in body and "total /100" in body and "grader_fault" in body
    assert "maximilian" in body and "…" in body and "why " * 40 not in body
