"""``ppo-course train``: the reference PPO on the toy RLHF task, with progress, a JSON log and a plot (see ``ppo_reference.train``)."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "run the reference PPO on the toy RLHF task (progress bar, per-step stats, JSON log and PNG plot)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``train``: run length, seed, output folder and any PPOConfig override
    (``ppo_course.commands.train.add_run_arguments``, shared with ``train --mine``)."""
    from ppo_course.commands.train import add_run_arguments

    add_run_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Train, print the summary, write the log and the plot; exit 0 on success, 2 on a usage error."""
    import torch
    from rich.console import Console

    from ppo_course.commands.train import config_from_args
    from ppo_reference.train import default_out_dir, plot_run, summarise, train, write_log

    console = Console()
    err = Console(stderr=True)
    config = config_from_args(args, err)
    if config is None:
        return 2

    # The toy model is far too small to gain from intra-op threads; extra threads
    # only spin against each other (and against other jobs) on a busy machine.
    torch.set_num_threads(1)
    out_dir = args.out or default_out_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    console.print(f"PPO on the toy task: {args.steps} steps, batch {config.batch_size}, lr {config.learning_rate:g}, "
                  f"init_kl_coef {config.init_kl_coef:g}, cliprange {config.cliprange:g}, seed {config.seed}, device {args.device}")
    history = train(config, args.steps, device=args.device, log_every=args.log_every, console=console,
                    show_progress=not args.no_progress)
    summary = summarise(history, config)
    write_log(out_dir / "train_log.json", history, config, summary)
    plot_run(out_dir / "train.png", history, config)
    console.print(
        f"score {summary['score_start']:.3f} → {summary['score_end']:.3f} (first {summary['steps_start']} vs last {summary['steps_end']} steps), "
        f"gold {summary['gold_start']:.3f} → {summary['gold_end']:.3f}, KL {summary['kl_end']:.2f} nats; "
        f"{summary['seconds']:.1f} s, {100 * summary['generation_frac']:.0f}% generating"
    )
    console.print(f"[bold]{summary['verdict']}[/]")
    console.print(f"log: {out_dir / 'train_log.json'}\nplot: {out_dir / 'train.png'}")
    return 0
