"""`ppo-course grade` and `ppo-course check` from the command line: exit codes and files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ppo_course.cli import main

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.xdist_group("grader")


@pytest.mark.slow
def test_grade_writes_results_and_feedback(tmp_path, capsys):
    out, feedback = tmp_path / "r" / "results.json", tmp_path / "feedback.md"
    code = main(["grade", str(REPO / "solutions"), "--out", str(out), "--feedback", str(feedback),
                 "--exercises", "ex1_ratio", "--profile", "fast"])
    assert code == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["score"] == data["extra_data"]["max_score"] == 10
    assert "ex1_ratio" in feedback.read_text(encoding="utf-8")
    assert "10 / 10" in capsys.readouterr().out


def test_grade_exit_zero_for_unreadable_submission(tmp_path):
    """A corrupt zip is still 'graded' (0 points, the reason in results.json): exit 0."""
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"not a zip")
    out = tmp_path / "results.json"
    assert main(["grade", str(bad), "--out", str(out), "--exercises", "ex1_ratio", "--quiet"]) == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["score"] == 0 and data["extra_data"]["status"] == "rejected"
    # The batch's shape (one per-student step): the status and the intake's reason lead the output.
    assert data["output"].startswith("Status: rejected. ") and "not a readable zip archive" in data["output"]
    assert data["extra_data"]["batch_status"] == "rejected"


def test_grade_usage_errors_exit_2(tmp_path):
    assert main(["grade", str(tmp_path), "--out", str(tmp_path / "r.json"), "--exercises", "ex9"]) == 2
    assert main(["grade", str(tmp_path), "--out", str(tmp_path)]) == 2  # --out is a folder
    # a path that does not exist is a typo, not a submission: no results.json of 0 points
    assert main(["grade", str(tmp_path / "nothere"), "--out", str(tmp_path / "n.json")]) == 2
    assert not (tmp_path / "n.json").exists()
    with pytest.raises(SystemExit) as exc:  # argparse: missing --out
        main(["grade", str(tmp_path)])
    assert exc.value.code == 2


@pytest.mark.slow
def test_check_passes_on_solutions_and_fails_on_stubs(tmp_path):
    """`ppo-course check` in a child: exit 0 for solutions, 1 with "not implemented" feedback for stubs."""
    cmd = [sys.executable, "-m", "ppo_course.cli", "check"]
    ok = subprocess.run([*cmd, str(REPO / "solutions"), "-e", "ex1_ratio"], capture_output=True,
                        text=True, timeout=300)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "All public tests passed" in ok.stdout
    bad = subprocess.run([*cmd, str(REPO / "exercises"), "-e", "ex1_ratio"], capture_output=True, text=True,
                         timeout=300)
    assert bad.returncode == 1
    assert "not_implemented" in bad.stdout


def test_check_defaults_to_exercises_folder(tmp_path):
    from ppo_course.commands.check import default_dir

    assert default_dir(tmp_path) == tmp_path
    (tmp_path / "exercises").mkdir()
    assert default_dir(tmp_path) == tmp_path / "exercises"


def test_check_usage_errors_exit_2(tmp_path):
    assert main(["check", str(tmp_path / "missing")]) == 2
    assert main(["check", str(tmp_path), "-e", "ex9_nope"]) == 2


def test_check_reports_a_missing_module(tmp_path, capsys):
    """A folder without the module: exit 1 and 'module not found' (no test run needed)."""
    assert main(["check", str(tmp_path), "-e", "ex2_clipped_loss"]) == 1
    assert "module not found" in capsys.readouterr().out


def test_plot_says_where_it_wrote(tmp_path, capsys, monkeypatch):
    """Issue 21 item 14: `plot clip` prints the absolute path of the PNG it wrote (and its size)."""
    monkeypatch.chdir(tmp_path)
    assert main(["plot", "clip", "--out", "figs/clip.png"]) == 0
    out = capsys.readouterr().out
    written = (tmp_path / "figs" / "clip.png").resolve()
    assert written.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert out.strip() == f"wrote {written} ({written.stat().st_size:,} bytes)"
