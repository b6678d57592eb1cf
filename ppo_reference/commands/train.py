"""``ppo-course train``: the reference PPO on the toy RLHF task, with progress, a JSON log and a plot (see ``ppo_reference.train``)."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "run the reference PPO on the toy RLHF task (progress bar, per-step stats, JSON log and PNG plot)"

# CLI option -> PPOConfig field; only options given on the command line override PPOConfig.toy().
_OVERRIDES = {
    "learning_rate": float,
    "init_kl_coef": float,
    "cliprange": float,
    "cliprange_value": float,
    "target_kl": float,
    "ppo_epochs": int,
    "batch_size": int,
    "mini_batch_size": int,
    "gradient_accumulation_steps": int,
    "temperature": float,
    "top_p": float,
    "vf_coef": float,
    "ent_coef": float,
    "kl_horizon": float,
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``train``: run length, seed, output folder and any PPOConfig override."""
    parser.add_argument("--steps", type=int, default=60, metavar="N", help="PPO steps (default: 60; ~20 s on an idle core, ~1 min on a busy 2-core machine)")
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the SFT policy, sampling and mini-batch order (default: 0)")
    parser.add_argument("--out", type=Path, default=None, metavar="DIR", help="where train_log.json and train.png go (default: runs/train-<timestamp>)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu)")
    parser.add_argument("--log-every", type=int, default=10, metavar="K", help="print a stats line every K steps (default: 10; 0 = none)")
    parser.add_argument("--kl-placement", choices=["per_token", "last_token"], default=None, help="where the KL penalty goes (default: per_token, as TRL)")
    parser.add_argument("--no-whiten-rewards", action="store_true", help="do not rescale the shaped rewards before GAE")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    for field, kind in _OVERRIDES.items():
        parser.add_argument(f"--{field.replace('_', '-')}", type=kind, default=None, metavar="X",
                            help=f"override PPOConfig.toy().{field}")


def run(args: argparse.Namespace) -> int:
    """Train, print the summary, write the log and the plot; exit 0 on success, 2 on a usage error."""
    import warnings

    import pydantic
    import torch
    from rich.console import Console

    from ppo_course.config import HyperparameterWarning, PPOConfig
    from ppo_reference.train import default_out_dir, plot_run, summarise, train, write_log

    console = Console()
    err = Console(stderr=True)
    overrides = {f: getattr(args, f) for f in _OVERRIDES if getattr(args, f) is not None}
    overrides["seed"] = args.seed
    if args.kl_placement:
        overrides["kl_placement"] = args.kl_placement
    if args.no_whiten_rewards:
        overrides["whiten_rewards"] = False
    if args.steps < 1:
        err.print(f"[red]error:[/] --steps must be at least 1 (got {args.steps})")
        return 2
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        err.print("[red]error:[/] --device cuda asked for, but torch sees no CUDA device")
        return 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", HyperparameterWarning)
        try:
            config = PPOConfig.toy(**overrides)
        except pydantic.ValidationError as exc:
            err.print(f"[red]error:[/] invalid PPO config: {exc}")
            return 2
    for w in caught:
        err.print(f"[yellow]warning:[/] {w.message}")

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
