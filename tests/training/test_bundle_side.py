"""The student-bundle side of ``train --mine``: shipped reference runs matched by config, stubs read from the source,
the public tests' verdict when every test passes. Expected values are hand-made files and the generated stubs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ppo_course.config import PPOConfig
from ppo_course.training.pieces import stub_pieces
from ppo_course.training.public_check import public_tests_finding
from ppo_course.training.shipped import shipped_reference, write_shipped

REPO = Path(__file__).resolve().parents[2]


def test_a_shipped_run_matches_only_its_config_on_the_cpu_and_gives_a_prefix(tmp_path):
    path = tmp_path / "reference_runs.json"
    rows = [{"step": float(i), "ppo/mean_scores": 0.5 * i} for i in range(1, 5)]
    write_shipped(path, [(PPOConfig.toy(), rows), (PPOConfig.toy(seed=3), rows[:2])])
    assert shipped_reference(PPOConfig.toy(), 2, "cpu", path) == rows[:2]
    assert shipped_reference(PPOConfig.toy(), 4, "cpu", path) == rows
    assert shipped_reference(PPOConfig.toy(), 5, "cpu", path) is None            # more steps than shipped
    assert shipped_reference(PPOConfig.toy(seed=3), 2, "cpu", path) == rows[:2]
    assert shipped_reference(PPOConfig.toy(seed=1), 2, "cpu", path) is None      # another seed
    assert shipped_reference(PPOConfig.toy(cliprange=0.1), 2, "cpu", path) is None
    assert shipped_reference(PPOConfig.toy(), 2, "cuda", path) is None           # the shipped runs are CPU runs
    path.write_text("{not json", encoding="utf-8")
    assert shipped_reference(PPOConfig.toy(), 2, "cpu", path) is None


def test_stub_pieces_reads_the_generated_stubs_and_a_solution_has_none(tmp_path):
    folder = tmp_path / "ex"
    shutil.copytree(REPO / "exercises", folder)
    shutil.copy(REPO / "solutions" / "ex4_gae.py", folder)
    (folder / "ex2_clipped_loss.py").unlink()
    (folder / "ex1_ratio.py").write_text("def logprobs_from_logits(:\n", encoding="utf-8")
    got = stub_pieces(folder)
    assert got["ex5_rollout_buffer"] == ["RolloutBuffer"] and got["ex7_ppo_step"] == ["ppo_step"]
    assert got["ex2_clipped_loss"] == ["(missing)"] and got["ex1_ratio"] == ["(syntax error)"]
    assert "ex4_gae" not in got
    assert stub_pieces(REPO / "solutions") == {}


@pytest.mark.slow
def test_when_every_public_test_passes_the_finding_says_so(tmp_path):
    folder = tmp_path / "ex"
    shutil.copytree(REPO / "solutions", folder)
    finding = public_tests_finding(folder, 4, stems=("ex1_ratio",))
    assert finding.exercise is None and finding.error is None
    assert "public tests (what ppo-course check runs) all pass" in finding.words()
