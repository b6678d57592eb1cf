"""``ppo-course grade-batch SUBMISSIONS_DIR --out OUT_DIR``: grade a class (see ``grader.batch``)."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "grade every student of a folder (one sub-folder or .zip each) into a gradebook; rerunning resumes"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``grade-batch`` (every limit has a safe default)."""
    parser.add_argument("submissions", type=Path, metavar="SUBMISSIONS_DIR",
                        help="one sub-folder or .zip per student; its name is the student id")
    parser.add_argument("--out", type=Path, required=True, metavar="OUT_DIR",
                        help="receives gradebook.csv, report.md and <student>/results.json, feedback.md")
    parser.add_argument("--jobs", type=int, default=None, metavar="N",
                        help="parallel workers (default: the number of CPU cores)")
    parser.add_argument("--force", action="store_true",
                        help="regrade every student, even those graded already")
    parser.add_argument("--format", action="append", choices=["nbgrader"], default=[], dest="formats",
                        help="also write the gradebook as nbgrader's `export` CSV (OUT_DIR/grades.csv)")
    parser.add_argument("--assignment", default="ppo", help="assignment name in the nbgrader CSV (default: ppo)")
    parser.add_argument("--profile", choices=["full", "fast"], default="full",
                        help="grading profile passed to the graders (default: full)")
    parser.add_argument("--exercises", default=None, metavar="STEMS",
                        help="comma-separated module stems to grade (default: all)")
    parser.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS",
                        help="hard wall-clock limit per submission (default: 600)")
    parser.add_argument("--max-size-mb", type=float, default=20.0, metavar="MB",
                        help="largest unpacked submission accepted (default: 20 MB)")
    parser.add_argument("--never-lower", action="store_true",
                        help="after a grader change, never lower a published exercise score (keep it, and say so)")
    parser.add_argument("--accept-points-change", action="store_true",
                        help="grade even when grader/points.yaml moved an exercise's maximum against the batch's "
                             "published grades (without it the batch is refused, naming each change)")
    parser.add_argument("--latest-only", action="store_true",
                        help="grade only each student's latest submission, under the student id; which folders "
                             "are one student's attempts comes from --roster's attempts column or --attempts")
    add_attempt_arguments(parser)
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--cluster", default=None, metavar="ADDRESS",
                        help="grade each submission as a task on the Dask scheduler at ADDRESS "
                             "(tcp://host:8786; default: $PPO_COURSE_CLUSTER, else this machine's own pool; "
                             "docs/cluster.md); --jobs is then the tasks in flight")


def add_attempt_arguments(parser: argparse.ArgumentParser) -> None:
    """``--roster`` and ``--attempts``: the TA's rule for which folders are one student's attempts
    (``grader.intake.attempts``), the same options for ``grade-batch`` and ``similarity``."""
    parser.add_argument("--roster", type=Path, default=None, metavar="CSV",
                        help="the course roster (lms.roster): student_id, and an 'attempts' column listing "
                             "each student's folders oldest first (amy;amy_2)")
    parser.add_argument("--attempts", default=None, metavar="REGEX",
                        help="folder-name pattern with groups (?P<student>...) and optionally (?P<attempt>...), "
                             "e.g. '(?P<student>.+)--(?P<attempt>\\d+)'; see the TA guide")


def run(args: argparse.Namespace) -> int:
    """Grade the batch, print where the files are; exit 0 when the batch ran, 1 when it stopped (or was refused: an
    exercise's maximum moved against the published batch without --accept-points-change), 2 on a usage error,
    3 when the grader itself failed for some students (the others are graded; the faulted ones are named and have
    no score: :data:`FAULT_EXIT`)."""
    import sys

    from ppo_course.syllabus import EXERCISES

    exercises = [s.strip() for s in args.exercises.split(",") if s.strip()] if args.exercises else None
    problem = _usage_problem(args, exercises, EXERCISES)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    summary = _grade(args, exercises)
    if isinstance(summary, int):
        return summary
    _say_where(summary, args)
    faulted = summary.faulted
    if faulted:
        shown = ", ".join(faulted[:20]) + (f" and {len(faulted) - 20} more" if len(faulted) > 20 else "")
        print(f"error: the grader itself failed for {len(faulted)} student(s): {shown}. They have no score (status "
              "grader_fault; the reason is in gradebook.csv's message column); the others are graded. Fix the "
              "grader and rerun the same command: it regrades only them. `export` and `lti post-grades` refuse "
              "this batch until then.", file=sys.stderr)
        return FAULT_EXIT
    return 0


#: ``grade-batch``'s exit status when some students' grading failed in the grader itself (as ``grade``'s).
FAULT_EXIT = 3


def _usage_problem(args: argparse.Namespace, exercises: list[str] | None, known) -> str | None:
    """Why the command line cannot run (the one check of the batch's arguments), or None; sets ``args.attempt_rule``."""
    from grader.records.out_folder import check_out_dir

    from grader.intake.class_list import batch_folder_problem

    if not args.submissions.is_dir():
        return f"{args.submissions} is not a folder of submissions"
    if args.jobs is not None and args.jobs < 1:
        return f"--jobs must be at least 1 (got {args.jobs})"
    if args.timeout <= 0 or args.max_size_mb <= 0:
        return "--timeout and --max-size-mb must be positive"
    unknown = sorted(set(exercises or ()) - set(known))
    if unknown:
        return f"unknown exercise(s) {unknown}; known: {', '.join(known)}"
    folder_problem = batch_folder_problem(args.submissions)
    if folder_problem:
        return folder_problem
    try:
        check_out_dir(args.submissions, args.out)
        from grader.records.gradebook import check_batch_formats

        check_batch_formats(args.profile, args.formats)
        args.attempt_rule = _attempt_rule(args)
    except ValueError as exc:
        return str(exc)
    return None


def _grade(args: argparse.Namespace, exercises: list[str] | None):
    """Run the batch: its ``BatchSummary``, or the exit status after saying why it stopped (1 or 2; 130 on Ctrl-C)."""
    import sys

    from grader.course_secret import GraderSecretError
    from ppo_course.submission_rules import SubmissionLimits
    from grader.records.out_folder import BatchBusy
    from grader.records.points_change import PointsChanged
    from grader.runners.runner import BatchAborted
    from grader.runners.workers import GraderMismatch, disk_full

    limits = SubmissionLimits(timeout_s=args.timeout, max_bytes=int(args.max_size_mb * 1e6))
    try:
        return _run(args, limits, exercises)
    except KeyboardInterrupt:
        # Every student written before Ctrl-C is whole (atomic writes) and the gradebook was rebuilt from them.
        print(f"\ninterrupted: the students graded so far are kept in {args.out}; rerun the same command "
              f"to resume (graded students are not graded again)", file=sys.stderr)
        return 130
    except ValueError as exc:  # a student with several folders and no --latest-only (grader.intake.attempts)
        from grader.intake.attempts import AttemptRuleError

        if not isinstance(exc, AttemptRuleError):
            raise
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (BatchBusy, BatchAborted, GraderMismatch, GraderSecretError, PointsChanged) as exc:  # another batch writes
        # there; the cluster is gone or refuses; the workers would import another grader than this process; no usable
        # secret; an exercise's maximum moved against the published batch without --accept-points-change
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except ImportError as exc:
        if "distributed" not in str(exc):
            raise
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        if not disk_full(exc):
            raise
        # Every file written so far is whole (atomic writes); a rerun resumes where this stopped.
        print(f"error: {args.out} is full ({exc.strerror}: {exc.filename or 'while writing'}); "
              f"the batch stopped. Students already written are kept; free some space and rerun "
              f"the same command to resume.", file=sys.stderr)
        return 1


def _say_where(summary, args: argparse.Namespace) -> None:
    """The summary line and where the gradebook, the report and the other files are."""
    print(summary.line())
    print(f"gradebook: {summary.out_dir / 'gradebook.csv'}")
    if "nbgrader" in (args.formats or []):
        from grader.records.gradebook import NBGRADER_CSV

        print(f"nbgrader grades: {summary.out_dir / NBGRADER_CSV}")
    print(f"class report: {summary.out_dir / 'report.md'}")
    if args.profile == "fast":
        print("note: --profile fast is a preview, not a grade (exercise 7's training run was not graded): "
              "`export` and `lti post-grades` refuse this batch; rerun without --profile fast to grade it in full")
    if (summary.out_dir / "attempts.md").is_file():
        print(f"attempts (which folder was graded for whom, and every folder left out): "
              f"{summary.out_dir / 'attempts.md'}")
    if (summary.out_dir / "regrade.md").is_file():
        print(f"regrade report (grader changed): {summary.out_dir / 'regrade.md'}")


def _attempt_rule(args):
    """The TA's stated rule for attempt folders (``grader.intake.attempts``), or None; raises ValueError on a bad one."""
    if args.roster is None and args.attempts is None:
        if args.latest_only:
            from grader.intake.attempts import AttemptRuleError

            raise AttemptRuleError("--latest-only needs --roster CSV (with an 'attempts' column) or --attempts "
                                   "PATTERN: which folders are one student's attempts is never guessed from names")
        return None
    from grader.intake.attempts import rule_from_options

    return rule_from_options(args.roster, args.attempts)


def _run(args, limits, exercises):
    from grader.batch import run_batch
    from grader.runners.cluster import resolve_address

    return run_batch(
        args.submissions,
        args.out,
        jobs=args.jobs,
        force=args.force,
        profile=args.profile,
        exercises=exercises,
        limits=limits,
        formats=args.formats,
        assignment=args.assignment,
        progress=not args.no_progress,
        never_lower=args.never_lower,
        latest_only=args.latest_only,
        attempt_rule=getattr(args, "attempt_rule", None),
        cluster=resolve_address(getattr(args, "cluster", None)),
        accept_points_change=getattr(args, "accept_points_change", False),
    )
