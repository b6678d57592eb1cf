"""``ppo-course train`` on an instructor's install: the reference run, or ``--mine`` beside it.

Without ``--mine`` it is ``ppo_reference.commands.train``; with ``--mine`` it is the student
side's ``ppo_course.commands.train`` given the reference (``grader.mistakes.train_reference``):
fallbacks for stubs, the reference's run beside the student's, and the piece named when a run
goes wrong.
"""

from __future__ import annotations

import argparse

from ppo_course.commands.train import HELP, add_arguments

__all__ = ["HELP", "add_arguments", "run"]


def run(args: argparse.Namespace) -> int:
    """The reference's run (no ``--mine``) or the student's beside it; the exit status of the one run."""
    if args.mine is None:
        from ppo_reference.commands import train as reference_train

        return reference_train.run(args)
    from grader.mistakes.train_reference import ReferenceTrainSide
    from ppo_course.commands import train as mine_train

    return mine_train.run(args, reference=ReferenceTrainSide())
