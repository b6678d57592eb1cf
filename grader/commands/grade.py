"""``ppo-course grade SUBMISSION --out results.json [--feedback feedback.md]``: grade one submission.

The submission goes through the per-student step of every path (``grader.student``: one intake, the
time-out and fault rules) in this process (``grader.runners.in_process``), and its files are written by
``grader.records.publish.write_student``: results.json and feedback.md have the batch's shape
(``extra_data.status``/``batch_status``, a submission that ran out of its time is ``timed-out`` with 0).

Exit status (contract): 0 whenever the submission was graded, whatever its
score (an empty or unreadable submission is graded 0 with a message in
results.json); 2 on a usage error (bad option, unknown exercise, an output
path that cannot be written); 3 when the grader itself failed (a test diagnosed
``grader_error``, the grading raised, or this Python cannot import what the graders
import: ``grader.environment``). A grader fault writes no score anywhere: no
results.json or feedback.md is written, and one left at those paths by an earlier
run is removed so that no stale score stands for this grading.
"""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "grade one submission (folder or .zip) with the hidden graders into results.json (Gradescope schema)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``grade``."""
    parser.add_argument("submission", type=Path, metavar="SUBMISSION",
                        help="a folder or .zip holding ex1_ratio.py ... ex7_ppo_step.py (at its root or under one folder)")
    parser.add_argument("--out", type=Path, required=True, metavar="RESULTS_JSON",
                        help="where to write results.json (Gradescope's autograder schema)")
    parser.add_argument("--feedback", type=Path, default=None, metavar="FEEDBACK_MD",
                        help="also write the student's feedback as Markdown")
    parser.add_argument("--exercises", default=None, metavar="STEMS",
                        help="comma-separated module stems to grade (default: all seven)")
    parser.add_argument("--profile", choices=["full", "fast"], default="full",
                        help="'fast' skips the slow exercise-7 training run (load tests; default: full)")
    parser.add_argument("--quiet", action="store_true", help="print nothing but errors")


def run(args: argparse.Namespace) -> int:
    """Grade, write the files atomically, print a one-line summary; 0 when graded, 2 on a usage error."""
    import sys

    from ppo_course.syllabus import EXERCISES

    exercises = None
    if args.exercises:
        exercises = [s.strip() for s in args.exercises.split(",") if s.strip()]
        unknown = sorted(set(exercises) - set(EXERCISES))
        if unknown or not exercises:
            print(f"error: unknown exercise(s) {unknown or args.exercises!r}; known: {', '.join(EXERCISES)}",
                  file=sys.stderr)
            return 2
    if not args.submission.exists() and not args.submission.is_symlink():
        # A typo, not a submission: say so rather than write a results.json of 0 points.
        print(f"error: submission {args.submission} does not exist (give a folder or a .zip)", file=sys.stderr)
        return 2
    for target in filter(None, (args.out, args.feedback)):
        if target.exists() and target.is_dir():
            print(f"error: {target} is a folder; give a file path", file=sys.stderr)
            return 2
        parent = target.resolve().parent
        if parent.exists() and not parent.is_dir():
            print(f"error: cannot write {target}: {parent} is not a folder", file=sys.stderr)
            return 2

    _prestart_forkserver()
    from grader.course_secret import GraderSecretError, ensure_secret

    try:
        ensure_secret(say=lambda msg: print(msg, file=sys.stderr))  # the course's secret, made at first use
    except GraderSecretError as exc:  # a grader fault: nothing graded, no results written
        print(f"error: {exc}", file=sys.stderr)
        return 3
    from grader.hidden import disk_cache

    disk_cache.switch_on()  # the reference's answers on the hidden inputs, read from the grader's disk
    outcome = _grade(args.submission, exercises, args.profile)
    if outcome.fault:
        return _grader_fault(args, outcome.message)
    from grader.records.publish import write_student

    try:
        write_student(outcome, results=args.out, feedback=args.feedback)
    except OSError as exc:
        print(f"error: cannot write the results: {exc}", file=sys.stderr)
        return 2
    if not args.quiet:
        result = outcome.result
        status = "" if outcome.status == "graded" else f" ({outcome.status}: {outcome.message})"
        print(f"{args.submission}: {result.score:g} / {result.max_score:g} points{status} -> {args.out}")
        for line in _why(outcome):
            print(f"  {line}")
    return 0


def _grade(submission: Path, exercises: list[str] | None, profile: str):
    """The ``StudentOutcome`` of one submission, graded in this process through the per-student step
    (``grader.student.grade_alone``: the batch's intake, time-out and fault rules)."""
    from ppo_course.submission_rules import Entry, SubmissionLimits
    from grader.runners.in_process import InProcessRunner
    from grader.student import grade_alone

    kind = "dir" if submission.is_dir() else "zip"
    entry = Entry(submission.stem if kind == "zip" else submission.name, [submission], kind)
    return grade_alone(entry, limits=SubmissionLimits(), profile=profile, exercises=exercises,
                       runner=InProcessRunner())


#: ``grade``'s exit status when the grader itself failed (CONTRACT.md).
FAULT_EXIT = 3


def _grader_fault(args: argparse.Namespace, reason: str) -> int:
    """Report a grader fault: no score written (stale outputs removed), the reason on stderr; returns 3."""
    import sys

    from grader.environment import environment_problem

    missing = environment_problem()
    removed = [str(p) for p in filter(None, (args.out, args.feedback)) if p.is_file()]
    for path in removed:
        Path(path).unlink()
    print(f"error: grader fault: {args.submission} was NOT graded: {reason}"
          + (f"; {missing}" if missing else "") + ". No score was written"
          + (f" (removed the earlier {', '.join(removed)})" if removed else "")
          + "; fix the grader's environment and grade again.", file=sys.stderr)
    return FAULT_EXIT


def _prestart_forkserver() -> None:
    """Start the sandbox's fork server now, without waiting for it (``ForkServerClient.start_early``), so that
    its ``import torch`` and warm-up step run on another core while this process imports the grader and
    collects the tests. The sandbox's first ``ForkServerClient.shared()`` waits for it and reports a server
    that did not start (a grader fault, exit 3)."""
    from grader.sandbox.forkserver_client import ForkServerClient

    ForkServerClient.start_early()


def _why(outcome) -> list[str]:
    """Lines saying why points are missing when it is not a test's verdict: the submission's message,
    the modules not found, the modules that do not import (empty for a submission whose tests all ran)."""
    result = outcome.result
    lines = [result.message] if outcome.status == "graded" and result.message else []
    missing = [stem for stem, ex in result.exercises.items() if ex.status == "missing"]
    broken = [stem for stem, ex in result.exercises.items() if ex.status == "broken"]
    if outcome.graded and missing and result.status == "graded" and (len(missing) < len(result.exercises)
                                                                     or not result.message):
        lines.append(f"not in the submission (0 points each): {', '.join(f'{s}.py' for s in missing)}")
    if broken:
        lines.append(f"could not be imported (0 points each; see the feedback): {', '.join(f'{s}.py' for s in broken)}")
    return lines
