"""``ppo-course train`` (ppo_reference.commands.train and ppo_reference.train), in a fast profile."""

from __future__ import annotations

import argparse
import json

import pytest

from ppo_course.config import PPOConfig
from ppo_reference.commands import train as train_command
from ppo_reference.train import summarise

pytestmark = pytest.mark.slow


def _run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="ppo-course train")
    train_command.add_arguments(parser)
    return train_command.run(parser.parse_args(argv))


def test_a_short_run_writes_the_json_log_and_the_plot(tmp_path, capsys):
    out = tmp_path / "run"
    assert _run(["--steps", "3", "--seed", "0", "--out", str(out), "--no-progress", "--log-every", "1"]) == 0
    log = json.loads((out / "train_log.json").read_text())
    assert [row["step"] for row in log["steps"]] == [1.0, 2.0, 3.0]
    for key in ("ppo/mean_scores", "objective/kl", "objective/kl_coef", "ppo/policy/clipfrac", "toy/gold_score"):
        assert all(isinstance(row[key], float) for row in log["steps"]), key
    assert log["config"] == PPOConfig.toy().model_dump()
    assert set(log["summary"]) >= {"score_start", "score_end", "kl_end", "verdict"}
    assert (out / "train.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    printed = capsys.readouterr().out
    assert "score" in printed and "KL" in printed and "clipfrac" in printed and "kl_coef" in printed


def test_an_invalid_config_is_a_usage_error(tmp_path, capsys):
    assert _run(["--batch-size", "40", "--out", str(tmp_path / "x"), "--no-progress"]) == 2
    assert "divisible" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_leaving_the_danger_table_band_is_reported(tmp_path, capsys):
    assert _run(["--steps", "1", "--init-kl-coef", "0.001", "--out", str(tmp_path), "--no-progress", "--log-every", "0"]) == 0
    assert "init_kl_coef=0.001 is outside the book's typical value" in capsys.readouterr().err.replace("\n", " ")


def _history(scores, golds, kls, eos=1.0):
    return [{"ppo/mean_scores": s, "toy/gold_score": g, "objective/kl": k, "toy/eos_frac": eos,
             "time/ppo/generation": 1.0, "time/ppo/total": 4.0} for s, g, k in zip(scores, golds, kls)]


@pytest.mark.parametrize("scores, golds, kls, eos, verdict", [
    ([0.05] * 5 + [0.3] * 10, [0.05] * 5 + [0.2] * 10, [0.0] * 5 + [3.0] * 10, 1.0, "learned"),
    ([0.05] * 5 + [1.6] * 10, [0.05] * 5 + [-0.4] * 10, [0.0] * 5 + [50.0] * 10, 0.0, "reward hacking"),
    ([0.05] * 5 + [0.5] * 10, [0.05] * 5 + [0.1] * 10, [0.0] * 5 + [20.0] * 10, 0.3, "catastrophic forgetting"),
    ([0.05] * 15, [0.05] * 15, [0.0] * 15, 1.0, "stuck at SFT"),
])
def test_summary_names_the_danger_table_row(scores, golds, kls, eos, verdict):
    summary = summarise(_history(scores, golds, kls, eos), PPOConfig.toy())
    assert verdict in summary["verdict"]
    assert summary["generation_frac"] == pytest.approx(0.25)
