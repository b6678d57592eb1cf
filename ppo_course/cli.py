"""The `ppo-course` command line (argparse).

Each sub-command lives in the module that owns it; this file only dispatches.
A command module defines ``HELP`` (one line), ``add_arguments(parser)`` and
``run(args) -> int``, and keeps its heavy imports inside ``run`` so that
``ppo-course --help`` stays fast. Commands whose module is not installed
(the student bundle has no ``grader`` or ``ppo_reference``) are left out.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# command name -> module that implements it (instructor-side modules are
# simply absent from the student bundle).
COMMANDS: dict[str, str] = {
    "demo": "grader.commands.demo",
    "grade": "grader.commands.grade",
    "grade-batch": "grader.commands.grade_batch",
    "gradescope-bundle": "grader.commands.gradescope_bundle",
    "nbgrader": "grader.commands.nbgrader_course",
    "release": "grader.commands.release",
    "similarity": "grader.commands.similarity",
    "export": "grader.commands.export",
    "check": "ppo_course.commands.check",
    "train": "ppo_reference.commands.train",
    "quiz": "quiz_bank.commands",
    "plot": "ppo_course.commands.plot",
}


def _load(module_name: str):
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        # Only hide a command whose own package is absent (student bundle);
        # a missing dependency inside an installed module is a real error.
        top = module_name.split(".")[0]
        if exc.name and (exc.name == top or module_name.startswith(exc.name)):
            return None
        raise


def build_parser() -> argparse.ArgumentParser:
    from ppo_course import __version__

    parser = argparse.ArgumentParser(
        prog="ppo-course",
        description="Exercises, hidden graders and the quiz for the PPO chapter (Book ch. 5).",
    )
    parser.add_argument("--version", action="version", version=f"ppo-course {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module_name in COMMANDS.items():
        module = _load(module_name)
        if module is None:
            continue
        # argparse %-formats help strings (not descriptions): a literal "100%" must reach it as "100%%".
        p = sub.add_parser(name, help=module.HELP.replace("%", "%%"), description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "_run", None) is None:
        parser.print_help()
        return 2
    try:
        return int(args._run(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
