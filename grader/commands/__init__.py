"""The instructor's commands of ``ppo-course`` (the student bundle has none of them).

``ppo_course.cli`` reads ``COMMANDS`` when this package is installed and adds
these to the student's commands (``check``, ``plot``, ``quiz``); a name that
is also a student command replaces it (``plot`` here can also compute the run
data of its figures with the reference PPO). Each module defines ``HELP``,
``add_arguments(parser)`` and ``run(args) -> int`` and imports its heavy
dependencies inside ``run``. The public commands are CONTRACT.md's "Command
line".
"""

from __future__ import annotations

#: Instructor command name -> module that implements it, in the order ``ppo-course --help`` lists them.
COMMANDS: dict[str, str] = {
    "demo": "grader.commands.demo",
    "grade": "grader.commands.grade",
    "grade-batch": "grader.commands.grade_batch",
    "secret": "grader.commands.secret",
    "gradescope-bundle": "grader.commands.gradescope_bundle",
    "nbgrader": "grader.commands.nbgrader_course",
    "release": "grader.commands.release",
    "similarity": "grader.commands.similarity",
    "export": "grader.commands.export",
    "lti": "grader.commands.lti",
    "train": "grader.commands.train",
    "plot": "grader.commands.plot",
}
