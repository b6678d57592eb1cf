"""The `ppo-course` command line (argparse): the student's commands, and the instructor's where installed.

Each sub-command lives in the module that owns it; this file only dispatches.
A command module defines ``HELP`` (one line), ``add_arguments(parser)`` and
``run(args) -> int``, and keeps its heavy imports inside ``run`` so that
``ppo-course --help`` stays fast.

The student package owns the student commands (``COMMANDS``: ``check``,
``plot``, ``quiz``, ``submit``, ``train`` (``--mine`` only); they ship in the student bundle). It names no instructor
command: an instructor's install adds its own through one module,
``INSTRUCTOR_COMMANDS`` (``grader.commands``), whose ``COMMANDS`` table maps
more names to modules and may replace a student command by a richer one
(``plot`` that can also compute its run data, ``train`` that also runs the reference). The student bundle has no
``grader``; there a command it lacks is answered with a clear message
(``INSTRUCTOR_ONLY``) and exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Mapping

#: The student's commands: name -> module that implements it (all ship in the student bundle).
COMMANDS: dict[str, str] = {
    "check": "ppo_course.commands.check",
    "plot": "ppo_course.commands.plot",
    "quiz": "quiz_bank.commands",
    "submit": "ppo_course.commands.submit",
    "train": "ppo_course.commands.train",
}

#: The one module through which an instructor's install adds commands (its ``COMMANDS``: name -> module).
INSTRUCTOR_COMMANDS = "grader.commands"

#: What a student install says for a command it does not have (``{command}``, ``{known}`` filled in).
INSTRUCTOR_ONLY = ("ppo-course: '{command}' is not a command of this install (the student bundle), which has: "
                   "{known}. Grading, the demo, the release and the other instructor commands come with the "
                   "instructor's install of ppo-course.")


def instructor_installed() -> bool:
    """Whether the instructor package (``grader``) is importable here (False in the student bundle)."""
    return importlib.util.find_spec(INSTRUCTOR_COMMANDS.split(".")[0]) is not None


def command_table() -> dict[str, str]:
    """The commands of this install, name -> module: the instructor's (when installed), then the student's.

    An instructor command of the same name as a student command replaces it (and keeps its place).

    Raises:
        ModuleNotFoundError: if the instructor package is installed but one of its own imports is missing
            (a broken install is reported, never hidden).
    """
    if not instructor_installed():
        return dict(COMMANDS)  # the student bundle
    table = dict(importlib.import_module(INSTRUCTOR_COMMANDS).COMMANDS)
    for name, module_name in COMMANDS.items():
        table.setdefault(name, module_name)
    return table


def _load(module_name: str):
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        # Only hide a command whose own package is absent (e.g. the reference in a partial install);
        # a missing dependency inside an installed module is a real error.
        top = module_name.split(".")[0]
        if exc.name and (exc.name == top or module_name.startswith(exc.name)):
            return None
        raise


def build_parser(commands: Mapping[str, str] | None = None) -> argparse.ArgumentParser:
    """The argument parser with one sub-command per entry of ``commands`` (default: ``command_table()``).

    Commands whose module's package is not installed are left out.
    """
    from ppo_course import __version__

    parser = argparse.ArgumentParser(
        prog="ppo-course",
        description="Exercises, hidden graders and the quiz for the PPO chapter (Book ch. 5).",
    )
    parser.add_argument("--version", action="version", version=f"ppo-course {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module_name in (command_table() if commands is None else commands).items():
        module = _load(module_name)
        if module is None:
            continue
        # argparse %-formats help strings (not descriptions): a literal "100%" must reach it as "100%%".
        p = sub.add_parser(name, help=module.HELP.replace("%", "%%"), description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def _unknown_command(parser: argparse.ArgumentParser, argv: list[str]) -> str | None:
    """The first word of ``argv`` when it names no command of ``parser`` (None for options and known ones)."""
    if not argv or argv[0].startswith("-"):
        return None
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return None if argv[0] in sub.choices else argv[0]


def main(argv: list[str] | None = None) -> int:
    """Run one ``ppo-course`` command; its exit status (2 on a usage error, 130 on Ctrl-C)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    table = command_table()
    # A named command needs only its own module: importing every command's module (some pull in torch
    # and the reference) cost `ppo-course check` ~4 CPU-s on an instructor's install before any test ran.
    parser = build_parser({argv[0]: table[argv[0]]} if argv and argv[0] in table else table)
    unknown = _unknown_command(parser, argv)
    if unknown is not None and not instructor_installed():
        print(INSTRUCTOR_ONLY.format(command=unknown, known=", ".join(table)), file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    if getattr(args, "_run", None) is None:
        parser.print_help()
        return 2
    try:
        return int(args._run(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def entry_point() -> None:
    """The ``ppo-course`` console script: :func:`main`, then a fast exit once its files are written
    (``ppo_course.process_exit``: torch's teardown costs ~0.5 CPU-s)."""
    from ppo_course.process_exit import run_and_exit

    run_and_exit(main)


if __name__ == "__main__":  # pragma: no cover
    entry_point()
