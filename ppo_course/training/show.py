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
                           "fallbacks": list(run.notes),
                           "findings": [f.words() for f in run.findings]}
    out.update({f"mine_last/{k}": v for k, v in window_means(run.history).items()})
    if run.reference:
        out.update({f"reference_last/{k}": v for k, v in window_means(run.reference[:len(run.history)]).items()})
    return out


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
    if reference is None:
        console.print("this install has no reference implementation: your run alone (no curve beside it, no "
                      "fallback for a stub, no piece named)")
    started = time.process_time()
    try:
        run = train_mine(args.mine, config, args.steps, reference=reference, device=args.device, console=console,
                         show_progress=not args.no_progress, log_every=args.log_every)
    except MissingPiece as exc:
        err.print(f"[red]error:[/] {exc}", markup=True, highlight=False, soft_wrap=True)
        return 1
    seconds = time.process_time() - started
    out_dir.mkdir(parents=True, exist_ok=True)
    extra = {"reference_steps": run.reference or [], "alarms": [asdict(a) for a in run.alarms]}
    write_log(out_dir / "train_log.json", run.history, config, summary_of(run, seconds), extra)
    plots.save(compare_figure(run.history, run.reference, run.alarms, _title(config, args.steps)), out_dir / "train.png",
               dpi=100)
    console.print(last_window_table(run.history, run.reference))
    if run.stopped:
        console.print(f"[bold red]stopped at step {run.stopped.step}[/] ({run.stopped.statistic}): {run.stopped.text}")
    console.print(f"{len(run.history)} steps, {seconds:.1f} CPU-s"
                  + (" (the reference run from the cache)" if run.reference_cached else ""))
    console.print(f"log: {out_dir / 'train_log.json'}\nplot: {out_dir / 'train.png'}")
    return 1 if run.stopped else 0
