"""``train --mine``'s console side: run (``mine.train_mine``), then print the table and write the log and the figure."""

from __future__ import annotations

import argparse
import time
from dataclasses import asdict
from typing import Any

__all__ = ["run_and_show", "summary_of"]


def summary_of(run: Any, seconds: float) -> dict[str, Any]:
    """The log's ``summary``: last-window means of both runs, how the run ended, the fallbacks and the findings."""
    from ppo_course.training.report import window_means

    out: dict[str, Any] = {"steps_run": len(run.history), "seconds": seconds,
                           "stopped": run.stopped.text if run.stopped else None,
                           "fallbacks": list(run.notes), "never_called": list(run.never_ran),
                           "findings": [f.words() for f in run.findings]}
    out.update({f"mine_last/{k}": v for k, v in window_means(run.history).items()})
    if run.reference:
        out.update({f"reference_last/{k}": v for k, v in window_means(run.reference[:len(run.history)]).items()})
    return out


def _shipped_for(config: Any, args: argparse.Namespace, console: Any) -> list[dict[str, float]] | None:
    """Without a reference: the bundle's reference run for this config and steps (said either way), or None."""
    from ppo_course.training.shipped import shipped_reference, shipped_runs

    got = shipped_reference(config, args.steps, args.device)
    if got is not None:
        console.print("the reference's run from the same seed and config came with this bundle: drawn beside yours; "
                      "if the run goes wrong, your public tests (ppo-course check) name the piece at fault")
        return got
    runs = shipped_runs()
    what = "; ".join(_flags(r["config"], len(r["steps"])) for r in runs) or "none in this install"
    console.print(f"no reference run for these flags, steps and device comes with this install, so your curve is "
                  f"drawn alone (reference runs shipped, on the CPU: {what}); if the run goes wrong, your public "
                  f"tests (ppo-course check) name the piece at fault")
    return None


def _flags(config: dict[str, Any], steps: int) -> str:
    """The ``train`` flags that give ``config`` from ``PPOConfig.toy()`` (e.g. "--init-kl-coef 0.001 --steps <= 100")."""
    from ppo_course.config import PPOConfig

    base = PPOConfig.toy().model_dump()
    parts = [f"--{k.replace('_', '-')} {v}" for k, v in config.items() if k != "seed" and base.get(k) != v]
    if config.get("seed", 0) != 0:
        parts.append(f"--seed {config['seed']}")
    return " ".join(parts + [f"--steps <= {steps}"])


def _stubs_message(folder: Any) -> str:
    """Which exercises are still stubs (read from the source), and that ``train --mine`` here needs them done."""
    from ppo_course.training.pieces import stub_pieces

    stubs = stub_pieces(folder)
    listed = "; ".join(f"{stem} ({', '.join(names)})" for stem, names in stubs.items())
    return (f"still stubs (or missing) in {folder}: {listed or 'none found in the source'}.\n"
            "This install has no reference implementation to run in a stub's place: train --mine needs all seven "
            "exercises implemented. ppo-course check shows where each one stands.")


def _title(config: Any, steps: int) -> str:
    return (f"your PPO vs the reference: {steps} steps, lr {config.learning_rate:g}, init_kl_coef "
            f"{config.init_kl_coef:g}, cliprange {config.cliprange:g}, ppo_epochs {config.ppo_epochs}, seed {config.seed}")


def run_and_show(args: argparse.Namespace, config: Any, reference: Any, console: Any, err: Any) -> int:
    """Run the student's pieces beside the reference, print the table, write ``train_log.json`` and ``train.png``.

    Returns:
        0 when the run went through, 1 when it was stopped or a piece was missing.
    """
    import torch

    from ppo_course import plots
    from ppo_course.training.mine import train_mine
    from ppo_course.training.pieces import MissingPiece
    from ppo_course.training.report import compare_figure, default_out_dir, last_window_table, write_log

    torch.set_num_threads(1)  # the toy model gains nothing from intra-op threads (see ppo-course train)
    out_dir = args.out or default_out_dir()
    console.print(f"your PPO on the toy task: {args.steps} steps, batch {config.batch_size}, lr {config.learning_rate:g}, "
                  f"init_kl_coef {config.init_kl_coef:g}, cliprange {config.cliprange:g}, seed {config.seed}, "
                  f"device {args.device}; your exercises: {args.mine}")
    shipped = None if reference is not None else _shipped_for(config, args, console)
    started = time.process_time()
    try:
        run = train_mine(args.mine, config, args.steps, reference=reference, device=args.device, console=console,
                         show_progress=not args.no_progress, log_every=args.log_every, shipped=shipped)
    except MissingPiece as exc:
        err.print(f"[red]error:[/] {exc}", markup=True, highlight=False, soft_wrap=True)
        if reference is None:
            err.print(_stubs_message(args.mine), markup=False, highlight=False, soft_wrap=True)
        return 1
    seconds = time.process_time() - started
    out_dir.mkdir(parents=True, exist_ok=True)
    extra = {"reference_steps": run.reference or [], "alarms": [asdict(a) for a in run.alarms]}
    write_log(out_dir / "train_log.json", run.history, config, summary_of(run, seconds), extra)
    plots.save(compare_figure(run.history, run.reference, run.alarms, _title(config, args.steps)), out_dir / "train.png",
               dpi=100)
    console.print(last_window_table(run.history, run.reference))
    if run.never_ran:
        console.print(f"[yellow]never called in your run:[/] {', '.join(run.never_ran)}: this run says nothing about "
                      f"them (ppo-course check {args.mine} tests them)", highlight=False, soft_wrap=True)
    if run.stopped:
        console.print(f"[bold red]stopped at step {run.stopped.step}[/] ({run.stopped.statistic}): {run.stopped.text}")
    console.print(f"{len(run.history)} steps, {seconds:.1f} CPU-s"
                  + (" (the reference run from the cache)" if run.reference_cached else "")
                  + (" (the reference run shipped with the bundle)" if run.reference_shipped else ""))
    console.print(f"log: {out_dir / 'train_log.json'}\nplot: {out_dir / 'train.png'}")
    return 1 if run.stopped else 0
