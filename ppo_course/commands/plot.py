"""``ppo-course plot {clip,lifecycle,walkthrough,danger} --out FILE.png``: the chapter's interactives as figures.

``clip`` and ``walkthrough`` need nothing. ``lifecycle`` and ``danger`` show PPO
runs on the toy task, so they take the run data as JSON (``--data``, the format
of ``ppo_course.plots.LifecycleData`` / ``DangerData``). Without ``--data``, on an
instructor's install (where the reference PPO is present), the data come from
``grader.figure_runs``: a few reference steps on the toy task (about half a
minute for ``lifecycle``, a few minutes for ``danger``); ``--save-data`` keeps
them for the next time. The student bundle has no PPO of its own to run, so
there ``--data`` is needed.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

HELP = "draw one of the chapter's figures: clip explorer, rollout-buffer lifecycle, PPO-step walkthrough, danger board"
KINDS = ("clip", "lifecycle", "walkthrough", "danger")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``plot``."""
    parser.add_argument("kind", choices=KINDS, help="which figure")
    parser.add_argument("--out", type=Path, required=True, metavar="FILE.png", help="where to write the PNG")
    parser.add_argument("--clip-eps", type=float, default=0.2, help="clip: ε (default: 0.2, the book's)")
    parser.add_argument("--data", type=Path, default=None, metavar="FILE.json",
                        help="lifecycle/danger: the run data (default: compute it, instructor install only)")
    parser.add_argument("--save-data", type=Path, default=None, metavar="FILE.json",
                        help="lifecycle/danger: also write the computed run data here")
    parser.add_argument("--parameter", default="init_kl_coef",
                        help="danger: the stop-8 parameter to vary when computing data (default: init_kl_coef)")
    parser.add_argument("--steps", type=int, default=None,
                        help="danger: PPO steps per run when computing (default: 80 for init_kl_coef, 30 for "
                             "learning_rate, else 40)")
    parser.add_argument("--cycles", type=int, default=3, help="lifecycle: PPO steps (cycles) when computing (default: 3)")


def _run_data(args: argparse.Namespace) -> dict | None:
    """The lifecycle/danger data: from --data, else from the instructor helper if installed (None if not)."""
    if args.data is not None:
        return json.loads(args.data.read_text(encoding="utf-8"))
    try:
        runs = importlib.import_module("grader.figure_runs")  # instructor side; absent from the student bundle
    except ModuleNotFoundError:
        return None
    import torch

    torch.set_num_threads(1)
    if args.kind == "lifecycle":
        data = runs.lifecycle_data(args.cycles)
    else:
        data = runs.danger_data(args.parameter, steps=args.steps)
    if args.save_data is not None:
        args.save_data.parent.mkdir(parents=True, exist_ok=True)
        args.save_data.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return data


def run(args: argparse.Namespace) -> int:
    """Draw the figure; exit 0, or 2 on unusable input (message says what and where)."""
    import pydantic

    from ppo_course import plots

    try:
        if args.kind == "clip":
            fig = plots.clip_explorer(args.clip_eps)
        elif args.kind == "walkthrough":
            fig = plots.ppo_step_walkthrough()
        else:
            data = _run_data(args)
            if data is None:
                print(f"ppo-course plot {args.kind}: pass --data FILE.json (the run data); computing it needs the "
                      "instructor's install (reference PPO), which this one does not have", file=sys.stderr)
                return 2
            fig = plots.buffer_lifecycle(data) if args.kind == "lifecycle" else plots.danger_board(data)
    except (ValueError, pydantic.ValidationError, OSError) as exc:  # JSON, schema and argument errors
        where = f" ({args.data})" if args.data else ""
        print(f"ppo-course plot {args.kind}{where}: {exc}", file=sys.stderr)
        return 2
    path = plots.save(fig, args.out)
    print(f"wrote {path}")
    return 0
