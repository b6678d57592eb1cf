"""The reference PPO run on the toy RLHF task: ``ppo-course train`` (Book fig. 5.1 looped; §5.9 danger table).

Starts from the toy SFT policy (``ppo_course.toy_task.sft_policy``), keeps a
frozen copy as the KL anchor, and repeats the reference ``ppo_step`` on
batches of toy prompts. Every step's TRL-named stats, plus the toy task's
monitoring numbers (``toy/gold_score``, ``toy/repeat_frac``, ``toy/eos_frac``,
``toy/response_len`` of the rollout just scored), go to a JSON log; score and
KL against step go to a PNG plot.

With ``PPOConfig.toy()`` the score rises well above the SFT baseline while
the KL stays near a few nats; a tiny ``init_kl_coef`` shows reward hacking
(score at its ceiling, gold score falling, KL in the tens of nats) and a much
larger ``learning_rate`` shows catastrophic forgetting (the first update
moves the policy so far that it forgets to end its answers). Measured, seed
0, 100 steps: the toy preset takes the score from 0.08 to 0.37 at a KL of
~4 nats; ``--init-kl-coef 0.001`` to 1.60 (its ceiling) while the gold score
falls from 0.05 to −0.24 and the KL reaches ~49 nats; ``--learning-rate 1e-2``
has approx_kl 12.9 and clipfrac 0.51 in its first step, after which the KL is
80 nats and only 12% of answers end with EOS (100% before);
``--init-kl-coef 1`` stays at the SFT score (0.06 to 0.04, KL 0.06 nats).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from ppo_course.config import PPOConfig
from ppo_course.training.loop import run_loop
from ppo_course.training.report import default_out_dir, write_log
from ppo_reference.kl import AdaptiveKLController
from ppo_reference.ppo_step import ppo_step

__all__ = ["train", "write_log", "plot_run", "summarise", "default_out_dir"]

def train(
    config: PPOConfig,
    steps: int,
    *,
    device: str | torch.device = "cpu",
    log_every: int = 10,
    console: Any = None,
    show_progress: bool = True,
    watch: Any = None,
) -> list[dict[str, float]]:
    """Run ``steps`` reference PPO steps on the toy task and return one stats dict per step.

    The loop is ``ppo_course.training.loop.run_loop`` (shared with ``ppo-course train --mine``) with
    the reference's ``ppo_step`` and ``AdaptiveKLController``. Seeding: ``config.seed`` seeds the SFT
    policy, the ppo_step generator (sampling and mini-batch order) and, with seed + 1, a separate
    generator for the prompts. Bit-for-bit repeatable on CPU.

    Args:
        config:        a ``PPOConfig`` (usually ``PPOConfig.toy(...)``).
        steps:         number of PPO steps (≥ 1).
        device:        where the policies live ("cpu" or "cuda").
        log_every:     print a line every this many steps (and the first and last); 0 = never.
        console:       a ``rich.console.Console`` (a new one if None).
        show_progress: draw a rich progress bar.
        watch:         ``run_loop``'s watcher (None: none).

    Returns:
        A list of dicts of floats: ``step`` (1-based) and every key of
        ``ppo_step``'s stats and of ``toy_task.response_stats``.

    Raises:
        ValueError: if steps < 1.
    """
    return run_loop(config, steps, ppo_step, AdaptiveKLController, device=device, log_every=log_every,
                    console=console, show_progress=show_progress, watch=watch)


#: Fewest steps for a verdict on learning: 5 start steps and 10 end steps that do not overlap.
MIN_VERDICT_STEPS = 15


def summarise(history: list[dict[str, float]], config: PPOConfig) -> dict[str, Any]:
    """Start-versus-end numbers of a run and the danger-table row it shows, if any (Book §5.9).

    Start = mean of the first 5 steps (the SFT policy's own score: step 1 samples
    before any update), end = mean of the last 10 steps. A run shorter than
    `MIN_VERDICT_STEPS` (15) uses two non-overlapping halves instead (first
    min(5, n // 2) steps against the rest, at most 10), and its verdict says it is
    too short to judge learning; only the danger signs it can show (a large KL, a
    policy that stops ending its responses) are still named.

    Returns:
        dict with ``score_start``, ``score_end``, ``gold_start``, ``gold_end``,
        ``kl_end``, ``eos_frac_end``, ``generation_frac`` (share of the step time
        spent generating), ``seconds``, ``steps_start`` and ``steps_end`` (the
        windows' lengths) and ``verdict`` (a sentence).

    Raises:
        ValueError: if `history` is empty.
    """
    def mean(key: str, rows: list[dict[str, float]]) -> float:
        return sum(r[key] for r in rows) / len(rows)

    if not history:
        raise ValueError("summarise: the run has no steps")
    n = len(history)
    n_head = min(5, n // 2) if n > 1 else 1
    n_tail = min(10, n - n_head) if n > 1 else 1
    head, tail = history[:n_head], history[n - n_tail:]  # disjoint whenever n >= 2
    out = {
        "steps_start": n_head,
        "steps_end": n_tail,
        "score_start": mean("ppo/mean_scores", head),
        "score_end": mean("ppo/mean_scores", tail),
        "gold_start": mean("toy/gold_score", head),
        "gold_end": mean("toy/gold_score", tail),
        "kl_end": mean("objective/kl", tail),
        "eos_frac_end": mean("toy/eos_frac", tail),
        "generation_frac": sum(r["time/ppo/generation"] for r in history) / sum(r["time/ppo/total"] for r in history),
        "seconds": sum(r["time/ppo/total"] for r in history),
    }
    hacked = out["score_end"] > out["score_start"] and out["gold_end"] < out["gold_start"]
    if out["kl_end"] > 3 * config.target_kl and hacked:
        verdict = ("reward hacking: the reward model's score rose but the gold score fell, far from the reference "
                   "(Book §5.9: init_kl_coef too low)")
    elif out["kl_end"] > 3 * config.target_kl or out["eos_frac_end"] < 0.5:
        verdict = ("the policy drifted far from the SFT reference (Book §5.9: learning_rate too high → "
                   "catastrophic forgetting; init_kl_coef too low → reward hacking)")
    elif n < MIN_VERDICT_STEPS:
        verdict = (f"too short to judge learning: {n} step{'s' if n != 1 else ''} (a verdict needs at least "
                   f"{MIN_VERDICT_STEPS}: the first 5 against the last 10); the score went "
                   f"{out['score_start']:.3f} → {out['score_end']:.3f} and the KL stayed bounded; "
                   f"rerun with --steps {MIN_VERDICT_STEPS} or more")
    elif out["score_end"] - out["score_start"] < 0.05:
        verdict = "little learning: the score barely moved (Book §5.9: init_kl_coef too high → stuck at SFT; cliprange too low)"
    else:
        verdict = "learned: the score rose while the KL to the SFT reference stayed bounded"
    out["verdict"] = verdict
    return out


def plot_run(path: Path, history: list[dict[str, float]], config: PPOConfig) -> None:
    """Save a PNG: the reward model's score and the gold score (top) and the KL in nats per sequence (bottom) against step."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    step = [r["step"] for r in history]
    fig, (ax_score, ax_kl) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    ax_score.plot(step, [r["ppo/mean_scores"] for r in history], label="score (reward model)")
    ax_score.plot(step, [r["toy/gold_score"] for r in history], label="gold score (intended)", linestyle="--")
    ax_score.set_ylabel("mean score")
    ax_score.legend(loc="best")
    ax_score.set_title(f"PPO on the toy task: lr {config.learning_rate:g}, init_kl_coef {config.init_kl_coef:g}, "
                       f"cliprange {config.cliprange:g}", fontsize=9)
    ax_kl.plot(step, [r["objective/kl"] for r in history], color="tab:red", label="KL to reference")
    ax_kl.axhline(config.target_kl, color="grey", linestyle=":", label=f"target_kl {config.target_kl:g}")
    ax_kl.set_ylabel("KL (nats / sequence)")
    ax_kl.set_xlabel("PPO step")
    ax_kl.legend(loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
