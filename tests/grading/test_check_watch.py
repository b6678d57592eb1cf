"""Issue 22 item 5: `ppo-course check --watch` re-runs the changed exercise's public tests on save, warm.

The watch loop's pieces are tested in-process (which files changed, which exercises they affect); the
command itself is run end to end with `--max-runs 2`: a first check of a wrong module, a save that
fixes it, and the second check, which must name only the saved exercise and pass.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ppo_course.check_support.watch import affected, changed, snapshot

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.xdist_group("grader")

RATIO = '''import torch


def logprobs_from_logits(logits, tokens):
    return torch.log_softmax(logits, dim=-1).gather(-1, tokens.long().unsqueeze(-1)).squeeze(-1)


def probability_ratio(logp_new, logp_old):
    return {body}
'''


def test_snapshot_sees_saves_and_skips_tool_folders(tmp_path):
    (tmp_path / "ex1_ratio.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / ".venv" / "lib").mkdir(parents=True)
    (tmp_path / ".venv" / "lib" / "site.py").write_text("", encoding="utf-8")
    before = snapshot(tmp_path)
    assert set(before) == {Path("ex1_ratio.py")}
    (tmp_path / "ex1_ratio.py").write_text("x = 22\n", encoding="utf-8")  # a different size: seen at once
    (tmp_path / "helper.py").write_text("", encoding="utf-8")
    assert changed(before, snapshot(tmp_path)) == {Path("ex1_ratio.py"), Path("helper.py")}


def test_a_saved_helper_reruns_the_exercises_that_import_it(tmp_path):
    (tmp_path / "ex1_ratio.py").write_text("import shared\n", encoding="utf-8")
    (tmp_path / "ex2_clipped_loss.py").write_text("from tools import shared as s\n", encoding="utf-8")
    (tmp_path / "ex4_gae.py").write_text("import torch\n", encoding="utf-8")
    (tmp_path / "shared.py").write_text("", encoding="utf-8")
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "shared.py").write_text("", encoding="utf-8")
    stems = ["ex1_ratio", "ex2_clipped_loss", "ex4_gae"]
    assert affected(tmp_path, stems, {Path("shared.py")}) == ["ex1_ratio"]
    assert affected(tmp_path, stems, {Path("tools/shared.py")}) == ["ex2_clipped_loss"]
    assert affected(tmp_path, stems, {Path("ex4_gae.py")}) == ["ex4_gae"]
    assert affected(tmp_path, stems, {Path("notes.py")}) == []


@pytest.mark.slow
def test_watch_reruns_the_saved_exercise_warm(tmp_path):
    folder = tmp_path / "exercises"
    folder.mkdir()
    (folder / "ex1_ratio.py").write_text(RATIO.format(body="logp_new - logp_old"), encoding="utf-8")  # no exp
    env = dict(os.environ, COLUMNS="200", PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-m", "ppo_course.cli", "check", str(folder), "-e", "ex1",
                             "--watch", "--max-runs", "2"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=env)
    lines: list[str] = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("watching "):
                break
        first = "".join(lines)
        assert "1/4 passed" in first or re.search(r"ex1_ratio\s+│\s+\d/\d", first), first
        time.sleep(0.05)
        (folder / "ex1_ratio.py").write_text(RATIO.format(body="(logp_new - logp_old).exp()"), encoding="utf-8")
        rest = proc.stdout.read()
        assert proc.wait(timeout=300) == 0, first + rest
    finally:
        proc.kill()
    assert "changed: ex1_ratio.py; checking ex1_ratio" in rest, rest
    assert "All public tests passed" in rest, rest
    seconds = [float(s) for s in re.findall(r"checked in ([\d.]+) s", first + rest)]
    assert len(seconds) == 2
