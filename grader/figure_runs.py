"""Instructor side: small reference PPO runs on the toy task that feed two figures of the chapter.

The figures themselves (``ppo_course.lifecycle_plot``, ``ppo_course.plots``) are student-side and never
run PPO; these helpers run the trusted reference (``ppo_reference``) and return plain dicts that validate
as ``ppo_course.lifecycle_plot.LifecycleData`` / ``ppo_course.plots.DangerData`` (and can be saved as
JSON for ``ppo-course plot lifecycle|danger --data FILE.json``).

    python -m grader.figure_runs lifecycle --out lifecycle.json [--cycles 3]
    python -m grader.figure_runs danger --parameter init_kl_coef --out danger.json [--steps 40]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import math
import sys
import warnings
from pathlib import Path

import torch

# Too low / typical / too high on the toy task, per parameter of the stop-8 table (Book §5.9). The
# typical values are PPOConfig.toy()'s; the extremes are the ones measured in ppo_reference/train.py's
# docstring where it gives them (init_kl_coef 0.001 and 1, learning_rate 1e-2).
DANGER_VALUES: dict[str, tuple[float, float, float]] = {
    "init_kl_coef": (0.001, 0.05, 1.0),
    "learning_rate": (3e-6, 3e-4, 1e-2),
    "cliprange": (0.002, 0.2, 50.0),
    "ppo_epochs": (1, 4, 32),
    "temperature": (0.3, 1.0, 2.0),
    "target_kl": (0.5, 6.0, 60.0),
    "batch_size": (32, 64, 256),
}


# Steps per run that show the failure on the toy task (seed 0): reward hacking under a tiny KL coefficient
# only sets in after ~45 steps (score at its ceiling, gold score and EOS share collapse); forgetting under
# a huge learning rate shows from the first step.
DANGER_STEPS: dict[str, int] = {"init_kl_coef": 80, "learning_rate": 30}
DEFAULT_STEPS = 40


@contextlib.contextmanager
def _recording_ratio(records: list[dict[str, float]]):
    """Wrap the reference ppo_step's ``ppo_loss`` so that every mini-batch's ratio statistics are recorded.

    r = exp(logp_new − logp_old) over the real tokens, measured before the mini-batch's update.
    """
    module = importlib.import_module("ppo_reference.ppo_step")  # the module, not the re-exported function
    original = module.ppo_loss

    def wrapped(logp_new, logp_old, advantages, *args, **kwargs):
        mask = args[4].bool()  # (values, old_values, returns, logits, mask, ...) after the first three
        with torch.no_grad():
            ratio = torch.exp(logp_new - logp_old)[mask].double()  # (n_real,)
            eps = kwargs.get("clip_eps", 0.2)
            adv = advantages[mask].double()
            binds = (adv * ratio.clamp(1 - eps, 1 + eps) < adv * ratio).double()
            q = torch.quantile(ratio, torch.tensor([0.0, 0.1, 0.5, 0.9, 1.0], dtype=torch.float64)).tolist()
        records.append({"ratio_min": q[0], "ratio_p10": q[1], "ratio_median": q[2], "ratio_p90": q[3],
                        "ratio_max": q[4], "clipfrac": float(binds.mean())})
        return original(logp_new, logp_old, advantages, *args, **kwargs)

    module.ppo_loss = wrapped
    try:
        yield
    finally:
        module.ppo_loss = original


def lifecycle_data(cycles: int = 3, *, seed: int = 0, **overrides) -> dict:
    """Per-mini-batch ratio statistics over ``cycles`` reference PPO steps on the toy task.

    Args:
        cycles: number of collect → train → purge cycles (PPO steps), ≥ 1.
        seed: the run's seed (PPOConfig.seed).
        **overrides: PPOConfig fields on top of ``PPOConfig.toy()``.

    Returns:
        A dict validating as ``ppo_course.lifecycle_plot.LifecycleData``.

    Raises:
        ValueError: if cycles < 1.
    """
    from ppo_course.config import PPOConfig
    from ppo_reference.train import train

    if cycles < 1:
        raise ValueError(f"lifecycle_data: cycles must be ≥ 1, got {cycles}")
    config = PPOConfig.toy(seed=seed, **overrides)
    per_epoch = math.ceil(config.batch_size / config.mini_batch_size)
    records: list[dict[str, float]] = []
    with _recording_ratio(records):
        train(config, cycles, log_every=0, show_progress=False)
    per_cycle = per_epoch * config.ppo_epochs
    for i, rec in enumerate(records):
        rec.update(cycle=i // per_cycle, epoch=(i % per_cycle) // per_epoch, minibatch=i % per_epoch)
    return {"clip_eps": config.cliprange, "ppo_epochs": config.ppo_epochs, "minibatches": records,
            "source": f"reference PPO on the toy task: PPOConfig.toy(seed={seed}), batch {config.batch_size}, "
                      f"mini-batch {config.mini_batch_size}, lr {config.learning_rate:g}"}


def danger_data(parameter: str, values: tuple[float, float, float] | None = None, *, steps: int | None = None,
                seed: int = 0, progress: bool = False) -> dict:
    """Three toy runs with ``parameter`` too low / typical / too high (Book §5.9's danger table).

    Args:
        parameter: a PPOConfig field of the stop-8 table (see ``DANGER_VALUES``).
        values: (too low, typical, too high); default ``DANGER_VALUES[parameter]``.
        steps: PPO steps per run (default: ``DANGER_STEPS`` for the parameter, else 40).
        seed: the runs' seed.
        progress: say on stderr which run starts, and draw each run's progress bar (a command's view).

    Returns:
        A dict validating as ``ppo_course.plots.DangerData``.

    Raises:
        ValueError: on an unknown parameter or steps < 1.
    """
    from ppo_course.config import PPOConfig
    from ppo_reference.train import train

    if parameter not in DANGER_VALUES and values is None:
        raise ValueError(f"danger_data: no default values for {parameter!r}; known: {sorted(DANGER_VALUES)}")
    steps = steps if steps is not None else DANGER_STEPS.get(parameter, DEFAULT_STEPS)
    if steps < 1:
        raise ValueError(f"danger_data: steps must be ≥ 1, got {steps}")
    values = values or DANGER_VALUES[parameter]
    runs = []
    for k, (label, value) in enumerate(zip(("too low", "typical", "too high"), values), 1):
        if progress:
            print(f"danger board: run {k}/3, {parameter} = {value:g} ({label}), {steps} reference PPO steps "
                  "(--save-data FILE keeps the runs for --data FILE next time)", file=sys.stderr, flush=True)
        kind = int if parameter in ("ppo_epochs", "batch_size") else float
        overrides = {parameter: kind(value)}
        if parameter == "batch_size":  # keep mini_batch_size × accumulation dividing the batch
            overrides["mini_batch_size"] = min(16, int(value) // 2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the extremes are outside the band on purpose
            config = PPOConfig.toy(seed=seed, **overrides)
        history = train(config, steps, log_every=0, show_progress=progress)
        keep = ("step", "ppo/mean_scores", "toy/gold_score", "objective/kl", "toy/eos_frac")
        clean = lambda v: v if isinstance(v, float) and math.isfinite(v) else None  # noqa: E731
        runs.append({"label": label, "value": float(value),
                     "steps": [{k: clean(float(row[k])) for k in keep if k in row} for row in history]})
    return {"parameter": parameter, "runs": runs,
            "source": f"reference PPO on the toy task, {steps} steps per run; 'typical' is PPOConfig.toy(seed={seed})'s "
                      "value (a 0.1M-parameter toy needs other values than the book's 70B model)"}


def main(argv: list[str] | None = None) -> int:
    """Command-line entry (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    life = sub.add_parser("lifecycle")
    life.add_argument("--cycles", type=int, default=3)
    danger = sub.add_parser("danger")
    danger.add_argument("--parameter", default="init_kl_coef", choices=sorted(DANGER_VALUES))
    danger.add_argument("--steps", type=int, default=None, help="default: DANGER_STEPS, else 40")
    for p in (life, danger):
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    data = lifecycle_data(args.cycles, seed=args.seed) if args.what == "lifecycle" else \
        danger_data(args.parameter, steps=args.steps, seed=args.seed)
    args.out.write_text(json.dumps(data, indent=1), encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
