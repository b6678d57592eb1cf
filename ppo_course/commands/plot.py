"""``ppo-course plot {clip,lifecycle,walkthrough,danger} --out FILE.png``: the chapter's interactives as figures.

``clip`` and ``walkthrough`` need nothing. ``lifecycle`` and ``danger`` show PPO
runs on the toy task, so they take the run data as JSON (``--data``, the format
of ``ppo_course.lifecycle_plot.LifecycleData`` / ``ppo_course.plots.DangerData``). The student bundle has
no PPO of its own to run, so there ``--data`` is needed; an instructor's install
replaces this command with ``grader.commands.plot``, which can also compute the
data with the reference PPO (and save it for students).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

HELP = "draw one of the chapter's figures: clip explorer, rollout-buffer lifecycle, PPO-step walkthrough, danger board"
KINDS = ("clip", "lifecycle", "walkthrough", "danger")

#: Computes the run data of ``lifecycle``/``danger`` from the parsed arguments (an instructor's install has one).
DataSource = Callable[[argparse.Namespace], dict]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``plot``."""
    parser.add_argument("kind", choices=KINDS, help="which figure")
    parser.add_argument("--out", type=Path, required=True, metavar="FILE.png", help="where to write the PNG")
    parser.add_argument("--clip-eps", type=float, default=0.2, help="clip: ε (default: 0.2, the book's)")
    parser.add_argument("--data", type=Path, default=None, metavar="FILE.json",
                        help="lifecycle/danger: the run data (JSON, as `plot --save-data` writes it on an instructor's install)")


def run(args: argparse.Namespace, compute_data: DataSource | None = None) -> int:
    """Draw the figure; exit 0, or 2 on unusable input (message says what and where).

    Args:
        args: the parsed options (``add_arguments``).
        compute_data: where ``lifecycle``/``danger`` data come from without ``--data`` (None: nowhere, the
            student bundle).
    """
    import pydantic

    from ppo_course import lifecycle_plot, plots

    try:
        if args.kind == "clip":
            fig = plots.clip_explorer(args.clip_eps)
        elif args.kind == "walkthrough":
            fig = plots.ppo_step_walkthrough()
        else:
            if args.data is not None:
                data = json.loads(args.data.read_text(encoding="utf-8"))
            elif compute_data is not None:
                data = compute_data(args)
            else:
                print(f"ppo-course plot {args.kind}: pass --data FILE.json (the run data); computing it needs the "
                      "instructor's install (reference PPO), which this one does not have", file=sys.stderr)
                return 2
            fig = lifecycle_plot.buffer_lifecycle(data) if args.kind == "lifecycle" else plots.danger_board(data)
    except (ValueError, pydantic.ValidationError, OSError) as exc:  # JSON, schema and argument errors
        where = f" ({args.data})" if args.data else ""
        print(f"ppo-course plot {args.kind}{where}: {exc}", file=sys.stderr)
        return 2
    path = plots.save(fig, args.out).resolve()
    print(f"wrote {path} ({path.stat().st_size:,} bytes)", flush=True)
    return 0
