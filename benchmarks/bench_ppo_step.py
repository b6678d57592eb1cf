"""Where a toy PPO step spends its time: generation versus training (Book §5.5: "generation is 60–70% of wall-clock").

Runs the reference ``ppo_step`` on the toy task (one thread, after a warm-up
step) and prints a rich table of the split between

* generation: ``policy.generate`` (sampling, one full forward pass per new
  token, no KV cache, plus one scoring pass),
* forward pass: reward model, log π_old / V_old / log π_ref, rewards, GAE,
* training: ppo_epochs × mini-batches of forward + backward + Adam, KL
  controller, purge.

Then the same for longer responses (a randomly initialised policy with room
for 64 new tokens), to show how the generation share grows with length.

Usage: ``python benchmarks/bench_ppo_step.py [--steps 5] [--threads 1]``.
"""

from __future__ import annotations

import argparse
import copy
import time
import warnings

import torch
from rich.console import Console
from rich.table import Table

from ppo_course import toy_task
from ppo_course.config import PPOConfig
from ppo_course.model import CausalLMWithValueHead
from ppo_reference.kl import AdaptiveKLController
from ppo_reference.ppo_step import ppo_step

PHASES = ("time/ppo/generation", "time/ppo/forward_pass", "time/ppo/training")


def measure(policy: CausalLMWithValueHead, config: PPOConfig, steps: int) -> dict[str, float]:
    """Mean seconds per phase over ``steps`` PPO steps after one warm-up step (seeded)."""
    ref_policy = copy.deepcopy(policy).requires_grad_(False)
    optimizer = torch.optim.Adam(policy.parameters(), lr=config.learning_rate)
    kl_ctl = AdaptiveKLController(config.init_kl_coef, config.target_kl, config.kl_horizon)
    generator, prompts = torch.Generator().manual_seed(0), torch.Generator().manual_seed(1)
    totals = dict.fromkeys(PHASES + ("ppo/response_len",), 0.0)
    for step in range(steps + 1):
        stats = ppo_step(policy, ref_policy, optimizer, toy_task.sample_queries(config.batch_size, prompts),
                         toy_task.score, kl_ctl, config, generator)
        if step:  # the first step pays one-off costs (allocator, kernel selection)
            for key in totals:
                totals[key] += stats[key] / steps
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5, help="measured PPO steps per row (default 5)")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    console = Console()

    table = Table(title=f"toy ppo_step time split (batch 64, 4 epochs × 4 mini-batches of 16, {args.threads} thread(s))")
    for column in ("policy", "new tokens", "mean len", "generation s", "forward s", "training s", "generation %"):
        table.add_column(column, justify="right")

    rows = [("SFT toy policy", toy_task.sft_policy(seed=0), 16)]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        for length in (32, 64):
            rows.append(("random init", CausalLMWithValueHead(toy_task.policy_config(max_seq_len=8 + length)), length))
    for name, policy, length in rows:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            config = PPOConfig.toy(max_new_tokens=length)
        t = measure(policy, config, args.steps)
        total = sum(t[p] for p in PHASES)
        table.add_row(name, str(length), f"{t['ppo/response_len']:.1f}", *(f"{t[p]:.3f}" for p in PHASES),
                      f"{100 * t['time/ppo/generation'] / total:.0f}%")
    console.print(table)
    console.print(
        "The book's 60–70% is for 512-token responses from a 70B model: decoding is sequential and memory-bound "
        "(every new token re-reads the weights), while training runs whole sequences in parallel and is compute-bound. "
        "Here responses are 16 tokens and every pass is a few tiny CPU kernels dominated by per-call overhead, so time "
        "goes roughly with the number of passes: 16 sampling passes + 1 scoring pass against 16 forward+backward passes "
        "(4 epochs × 4 mini-batches, backward ≈ 2 forwards). Longer responses shift the split towards generation, "
        "faster than linearly here because generate() has no KV cache (each new token re-runs the whole prefix)."
    )


if __name__ == "__main__":
    main()
