"""``ppo-course nbgrader COURSE_DIR``: write a ready nbgrader course (see ``grader.platforms.nbgrader_course``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = "write an nbgrader course: nbgrader_config.py and source/ppo_ch5/ (one notebook per exercise, the quiz)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``nbgrader``."""
    parser.add_argument("course_dir", type=Path, metavar="COURSE_DIR", help="the nbgrader course root (created if absent)")
    parser.add_argument("--profile", choices=["full", "fast"], default="full",
                        help="grading profile of the autograde step and of the points (default: full)")
    parser.add_argument("--execute", action="store_true",
                        help="keep nbgrader's Execute step (outputs in the feedback; runs student code unsandboxed)")
    parser.add_argument("--execute-timeout", type=int, default=120, metavar="SECONDS",
                        help="nbgrader's per-cell kernel timeout (default: 120)")


def run(args: argparse.Namespace) -> int:
    """Write the course; exit 0, or 2 when the source tree or the quiz keys are missing."""
    from grader.course_secret import GraderSecretError
    from grader.platforms.nbgrader_course import ASSIGNMENT, build_course
    from quiz_bank.engine import KeysUnavailable

    try:
        files = build_course(args.course_dir, profile=args.profile, execute=args.execute, execute_timeout=args.execute_timeout)
    except (FileNotFoundError, KeysUnavailable, GraderSecretError) as exc:
        print(f"ppo-course nbgrader: {exc}", file=sys.stderr)
        return 2
    notebooks = [f.name for f in files if f.suffix == ".ipynb"]
    exercise_points, quiz_points = notebook_points(files)
    print(f"nbgrader's total for {ASSIGNMENT} is {exercise_points + quiz_points:g} points: the exercises' "
          f"{exercise_points:g} (profile {args.profile}, as grade-batch and Gradescope) plus the quiz notebook's "
          f"{quiz_points:g} (one per question). `nbgrader export` reports that sum; use the exercise notebooks' "
          "scores for the exercises' grade (docs/ta_guide.md §4).")
    print(f"wrote the nbgrader course in {args.course_dir}: {len(notebooks)} notebooks in source/{ASSIGNMENT}/ "
          f"({', '.join(notebooks)}) and nbgrader_config.py (profile {args.profile}).\n"
          f"Next, in {args.course_dir}: nbgrader generate_assignment {ASSIGNMENT}; collect submissions into "
          f"submitted/<student>/{ASSIGNMENT}/; nbgrader autograde {ASSIGNMENT}; nbgrader generate_feedback "
          f"{ASSIGNMENT}; nbgrader export.")
    print(f"The course's grader secret is {args.course_dir / 'grader_secret'} (mode 0600): only the staff may read "
          "it; `ppo-course secret rotate --secret-file` on it makes a new one (docs/ta_guide.md).")
    return 0


def notebook_points(files) -> tuple[float, float]:
    """(exercise points, quiz points): the sum of the nbgrader ``points`` of the grade cells, read from the notebooks."""
    import nbformat

    totals = {"exercise": 0.0, "quiz": 0.0}
    for path in (f for f in files if f.suffix == ".ipynb"):
        nb = nbformat.read(str(path), as_version=4)
        points = sum(float(c.metadata.get("nbgrader", {}).get("points", 0) or 0) for c in nb.cells
                     if c.metadata.get("nbgrader", {}).get("grade"))
        totals["quiz" if path.stem == "quiz" else "exercise"] += points
    return totals["exercise"], totals["quiz"]
