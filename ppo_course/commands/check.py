"""``ppo-course check [EXERCISES_DIR] [--watch]``: run the public tests on your own exercise modules, with feedback.

The public tests (``ppo_course/public_tests/``: hand-computed small cases and
property checks, no hidden input) run in a child process so that a hang or a
crash in your code cannot take this command down (``check_support.launch``:
a CPU-time limit per child and a wall-clock backstop; on Windows only the
wall clock). Each failure names the likely mistake (a diagnosis), shows
expected vs got and, for generated inputs, the smallest failing example
(``check_support.summary`` prints it from typed results,
``check_support.results``). ``--watch`` stays running and re-checks an
exercise each time it is saved (``check_support.watch``).

Exit status: 0 when every public test passed, 1 when some failed (or a module
is missing), 2 on a usage error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ppo_course.syllabus import EXERCISES

HELP = "run the public tests on your exercise modules (default: ./exercises or the current folder)"



def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``check``."""
    parser.add_argument("exercises_dir", nargs="?", type=Path, default=None, metavar="EXERCISES_DIR",
                        help="folder holding ex1_ratio.py ... (default: ./exercises if present, else the current folder)")
    parser.add_argument("-e", "--exercise", action="append", default=[], metavar="STEM",
                        help="check only this exercise (e.g. ex4_gae, or a unique prefix such as ex4); repeatable")
    parser.add_argument("--cpu-seconds", type=int, default=120, metavar="S",
                        help="CPU-time limit of the test run (default: 120)")
    parser.add_argument("--timeout", type=float, default=600.0, metavar="S",
                        help="wall-clock backstop of the test run (default: 600)")
    parser.add_argument("--call-seconds", type=float, default=None, metavar="S",
                        help="CPU-time limit of one call into your code (default: 10; a whole PPO step of "
                             "exercise 7 gets 120)")
    parser.add_argument("--show-output", action="store_true",
                        help="show what your code printed in every test, passing ones included "
                             "(failing tests always show it)")
    parser.add_argument("--watch", action="store_true",
                        help="stay running: re-run an exercise's public tests each time you save it (or a helper "
                             "it imports); Ctrl-C stops")
    parser.add_argument("--max-runs", type=int, default=None, metavar="N",
                        help="with --watch: stop after N runs (for scripts and tests; default: until Ctrl-C)")


def default_dir(cwd: Path | None = None) -> Path:
    """./exercises when it exists, else the current folder."""
    cwd = Path.cwd() if cwd is None else cwd
    return cwd / "exercises" if (cwd / "exercises").is_dir() else cwd


def resolve_stems(requested: list[str]) -> tuple[list[str], list[str]]:
    """(stems, problems): each requested name as a full stem; a unique prefix ("ex4") is accepted.

    A name that matches no stem, or (as a prefix) more than one, goes to `problems`.
    """
    stems: list[str] = []
    problems: list[str] = []
    for name in requested:
        matches = [name] if name in EXERCISES else [s for s in EXERCISES if s.startswith(name)]
        if len(matches) == 1:
            stems.append(matches[0])
        else:
            problems.append(f"{name!r} ({'ambiguous: ' + ', '.join(matches) if matches else 'unknown'})")
    return list(dict.fromkeys(stems)), problems


def check_once(exercises_dir: Path, stems: list[str], args: argparse.Namespace, forked: bool = False,
               console=None) -> int:
    """One check of ``stems`` (the requested exercises) on ``exercises_dir``: run, print; 0 all passed, else 1.

    ``forked``: run the tests in a fork of this warm process (``check --watch``) rather than a fresh one.
    """
    from ppo_course.check_support.launch import run_public_tests
    from ppo_course.check_support.results import CheckRun
    from ppo_course.check_support.summary import render
    from ppo_course.grading_kit.signatures import signature_problems

    present = [s for s in stems if (exercises_dir / f"{s}.py").is_file()]
    # Compared with the stubs' before anything runs (the files are parsed, never imported here).
    signatures = {stem: signature_problems(stem, exercises_dir / f"{stem}.py") for stem in present}
    got = run_public_tests(exercises_dir, present, args.cpu_seconds, args.timeout,
                           getattr(args, "call_seconds", None), forked=forked) if present else CheckRun()
    return render(got, exercises_dir, stems, console=console, show_output=getattr(args, "show_output", False),
                  signatures=signatures)


def run(args: argparse.Namespace) -> int:
    """Check the given (or default) folder; 0 all passed, 1 some failed, 2 usage error.

    With ``--watch``: check once, then again after every save (``check_support.watch``) until Ctrl-C or
    ``--max-runs``; the exit status is the last run's.
    """
    exercises_dir = (args.exercises_dir or default_dir()).resolve()
    if not exercises_dir.is_dir():
        print(f"error: {exercises_dir} is not a folder", file=sys.stderr)
        return 2
    stems, problems = resolve_stems(args.exercise)
    if problems:
        print(f"error: exercise(s) {', '.join(problems)}; known: {', '.join(EXERCISES)}", file=sys.stderr)
        return 2
    if getattr(args, "max_runs", None) is not None and (not args.watch or args.max_runs < 1):
        print("error: --max-runs needs --watch and a count of at least 1", file=sys.stderr)
        return 2
    if getattr(args, "watch", False):
        from ppo_course.check_support.watch import watch

        return watch(exercises_dir, stems or list(EXERCISES), lambda todo, forked: check_once(
            exercises_dir, todo, args, forked=forked), max_runs=args.max_runs)
    return check_once(exercises_dir, stems or list(EXERCISES), args)
