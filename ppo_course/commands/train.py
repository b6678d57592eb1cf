"""``ppo-course train --mine [EXERCISES_DIR]``: your own PPO on the toy RLHF task, beside the reference's run.

Your ex1–ex7 (imported from EXERCISES_DIR as ``ppo-course check`` imports
them, in this process: your own code on your own machine) train the toy
policy with the same seed, config and steps as the reference run
(``ppo_course.training``). Writes ``train_log.json`` (the format of
``ppo-course train``'s log, with the reference's steps and the alarms) and
``train.png`` (reward, KL, entropy, clip fraction and value loss per step,
both runs), and prints the last-window means side by side. A run that goes
wrong stops with the step, the statistic and the first of your pieces that
differs from the reference's on that step's batch.

The flags that set the run (``add_run_arguments``) are shared with the
instructor's ``ppo-course train`` (the reference run alone). The student
bundle has no reference implementation: there ``--mine`` runs your pieces
alone (no curve beside yours, no fallback for a stub, no piece named);
an instructor's or self-learner's install passes its reference
(``grader.commands.train``).

Exit status: 0 when the run went through, 1 when it was stopped or a piece was
missing, 2 on a usage error.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

HELP = ("train the toy policy with PPO: the reference's (instructor's install), or yours with --mine "
        "[EXERCISES_DIR], beside the reference's run")

#: ``--mine`` given without a folder: ``check``'s default (./exercises if present, else the current folder).
DEFAULT_DIR = Path("<check's default>")

#: CLI option -> PPOConfig field; only options given on the command line override PPOConfig.toy().
OVERRIDES: dict[str, type] = {
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


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """The options that set a run (length, seed, output, device, any PPOConfig override)."""
    parser.add_argument("--steps", type=int, default=60, metavar="N",
                        help="PPO steps (default: 60; ~20 s on an idle core, ~1 min on a busy 2-core machine)")
    parser.add_argument("--seed", type=int, default=0, metavar="S",
                        help="seed of the SFT policy, sampling and mini-batch order (default: 0)")
    parser.add_argument("--out", type=Path, default=None, metavar="DIR",
                        help="where train_log.json and train.png go (default: runs/train-<timestamp>)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu)")
    parser.add_argument("--log-every", type=int, default=10, metavar="K",
                        help="print a stats line every K steps (default: 10; 0 = none)")
    parser.add_argument("--kl-placement", choices=["per_token", "last_token"], default=None,
                        help="where the KL penalty goes (default: per_token, as TRL)")
    parser.add_argument("--no-whiten-rewards", action="store_true", help="do not rescale the shaped rewards before GAE")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    for name, kind in OVERRIDES.items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=kind, default=None, metavar="X",
                            help=f"override PPOConfig.toy().{name}")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``train``: ``--mine [EXERCISES_DIR]`` and the run's options (``add_run_arguments``)."""
    parser.add_argument("--mine", nargs="?", const=DEFAULT_DIR, type=Path, default=None, metavar="EXERCISES_DIR",
                        help="train with your own ex1-ex7 from EXERCISES_DIR (default: ./exercises if present, else "
                             "the current folder, as check), beside the reference's run from the same seed")
    add_run_arguments(parser)


def config_from_args(args: argparse.Namespace, err: Any) -> Any:
    """The run's ``PPOConfig.toy(...)`` with the options given, or None after printing what is wrong (usage error).

    Args:
        args: parsed ``add_run_arguments`` options.
        err: a ``rich.console.Console`` on stderr (for errors and the config's warnings).
    """
    import warnings

    import pydantic
    import torch

    from ppo_course.config import HyperparameterWarning, PPOConfig

    overrides = {f: getattr(args, f) for f in OVERRIDES if getattr(args, f) is not None}
    overrides["seed"] = args.seed
    if args.kl_placement:
        overrides["kl_placement"] = args.kl_placement
    if args.no_whiten_rewards:
        overrides["whiten_rewards"] = False
    if args.steps < 1:
        err.print(f"[red]error:[/] --steps must be at least 1 (got {args.steps})")
        return None
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        err.print("[red]error:[/] --device cuda asked for, but torch sees no CUDA device")
        return None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", HyperparameterWarning)
        try:
            config = PPOConfig.toy(**overrides)
        except pydantic.ValidationError as exc:
            err.print(f"[red]error:[/] invalid PPO config: {exc}")
            return None
    for w in caught:
        err.print(f"[yellow]warning:[/] {w.message}")
    return config


def run(args: argparse.Namespace, reference: Any = None) -> int:
    """``train --mine``: run, print, write the log and the figure; the exit status (module docstring).

    Args:
        args: the parsed options (``add_arguments``).
        reference: a ``ppo_course.training.pieces.ReferenceSide`` (None in the student bundle).
    """
    from rich.console import Console

    err = Console(stderr=True)
    if args.mine is None:
        err.print("[red]error:[/] this install has no reference PPO to train; train your own with "
                  "[bold]ppo-course train --mine [EXERCISES_DIR][/]")
        return 2
    config = config_from_args(args, err)
    if config is None:
        return 2
    if args.mine == DEFAULT_DIR:
        from ppo_course.commands.check import default_dir

        args.mine = default_dir()
    if not Path(args.mine).is_dir():
        err.print(f"[red]error:[/] {args.mine} is not a folder: give your exercises folder (ppo-course train --mine DIR)")
        return 2
    from ppo_course.training.show import run_and_show

    return run_and_show(args, config, reference, Console(), err)
