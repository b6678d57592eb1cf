"""Issue 13 item 5: `ppo-course train --steps 8` must not call a rising score "little learning"."""

from __future__ import annotations

import argparse

import pytest

from ppo_course.config import PPOConfig
from ppo_reference.commands import train as train_command
from ppo_reference.train import summarise

MIN_VERDICT_STEPS = 15  # 5 start steps + 10 end steps that do not overlap


def _history(scores, kl=0.1, eos=1.0):
    return [{"ppo/mean_scores": s, "toy/gold_score": s, "objective/kl": kl, "toy/eos_frac": eos,
             "time/ppo/generation": 1.0, "time/ppo/total": 4.0} for s in scores]


def test_eight_rising_steps_are_too_short_to_judge_not_stuck():
    """The complaint's run: 8 steps, the score rising 0.047 -> 0.205."""
    scores = [0.047, 0.06, 0.08, 0.10, 0.13, 0.16, 0.19, 0.205]
    summary = summarise(_history(scores), PPOConfig.toy())
    assert "little learning" not in summary["verdict"] and "stuck at SFT" not in summary["verdict"]
    assert summary["verdict"].startswith("too short to judge learning: 8 steps")
    # Non-overlapping windows: first 4 and last 4 steps (hand means).
    assert (summary["steps_start"], summary["steps_end"]) == (4, 4)
    assert summary["score_start"] == pytest.approx((0.047 + 0.06 + 0.08 + 0.10) / 4)
    assert summary["score_end"] == pytest.approx((0.13 + 0.16 + 0.19 + 0.205) / 4)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 14, 15, 30])
def test_windows_never_overlap(n):
    summary = summarise(_history([0.1 * i for i in range(n)]), PPOConfig.toy())
    assert summary["steps_start"] + summary["steps_end"] <= max(n, 2)
    assert ("too short" in summary["verdict"]) == (n < MIN_VERDICT_STEPS)


def test_a_short_run_still_names_a_visible_danger():
    """A KL far above the target is visible in 8 steps: it is still reported."""
    summary = summarise(_history([0.05] * 8, kl=60.0), PPOConfig.toy())
    assert "drifted far from the SFT reference" in summary["verdict"]


@pytest.mark.slow
def test_the_command_says_so(tmp_path, capsys):
    parser = argparse.ArgumentParser(prog="ppo-course train")
    train_command.add_arguments(parser)
    args = parser.parse_args(["--steps", "2", "--seed", "0", "--out", str(tmp_path), "--no-progress",
                              "--log-every", "0"])
    assert train_command.run(args) == 0
    printed = capsys.readouterr().out.replace("\n", " ")
    assert "first 1 vs last 1 steps" in printed and "too short to judge learning: 2 steps" in printed
    assert "little learning" not in printed
