"""``ppo-course plot`` on an instructor's install: the student's command, able to compute its run data.

The student's ``ppo_course.commands.plot`` draws ``lifecycle`` and ``danger``
from run data given as JSON (``--data``). Here, without ``--data``, the data
come from ``grader.figure_runs``: a few reference PPO steps on the toy task
(about half a minute for ``lifecycle``, a few minutes for ``danger``);
``--save-data`` keeps them as the JSON to hand to students.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ppo_course.commands import plot as student_plot

HELP = student_plot.HELP


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The student's options of ``plot``, and those that compute the run data."""
    student_plot.add_arguments(parser)
    parser.add_argument("--save-data", type=Path, default=None, metavar="FILE.json",
                        help="lifecycle/danger: also write the computed run data here (JSON for students' --data)")
    parser.add_argument("--parameter", default="init_kl_coef",
                        help="danger: the stop-8 parameter to vary when computing data (default: init_kl_coef)")
    parser.add_argument("--steps", type=int, default=None,
                        help="danger: PPO steps per run when computing (default: 80 for init_kl_coef, 30 for "
                             "learning_rate, else 40)")
    parser.add_argument("--cycles", type=int, default=3, help="lifecycle: PPO steps (cycles) when computing (default: 3)")


def compute_data(args: argparse.Namespace) -> dict:
    """The lifecycle/danger run data from reference PPO runs on the toy task (saved to ``--save-data`` if given).

    Raises:
        ValueError: on an unknown parameter or a step/cycle count below 1 (``grader.figure_runs``).
        OSError: if ``--save-data`` cannot be written.
    """
    import torch

    from grader import figure_runs
    from ppo_course.atomic_files import atomic_write_text

    torch.set_num_threads(1)
    if args.kind == "lifecycle":
        data = figure_runs.lifecycle_data(args.cycles)
    else:
        data = figure_runs.danger_data(args.parameter, steps=args.steps, progress=True)
    if args.save_data is not None:
        atomic_write_text(args.save_data, json.dumps(data, indent=1))
    return data


def run(args: argparse.Namespace) -> int:
    """Draw the figure (see ``ppo_course.commands.plot.run``), computing missing run data."""
    return student_plot.run(args, compute_data=compute_data)
