"""``ppo-course demo``: the main job on the embedded demo cohort (``examples/cohort/``).

Batch-grades the cohort's submissions (``grader.batch.run_batch``: isolated
workers, resumable, class report), prints the gradebook as a rich table and
says where the files are. ``examples/cohort/EXPECTED.md`` holds the scores a
correct grader gives each student; the demo says whether they match.
"""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "batch-grade the embedded demo cohort and print the gradebook (the main job)"

STATUS_STYLE = {"graded": "green", "empty": "yellow", "rejected": "red", "timed-out": "magenta", "crashed": "red",
                "no-submission": "yellow"}


def cohort_dir() -> Path:
    """``examples/cohort`` of the source tree (beside the ``grader`` package)."""
    import grader

    return Path(grader.__file__).resolve().parent.parent / "examples" / "cohort"


#: The demo's output folder when --out is not given: under the working directory, where the TA looks.
DEFAULT_OUT = "demo-out"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``demo``."""
    parser.add_argument("--out", type=Path, default=None, metavar="DIR",
                        help=f"where to write the gradebook and feedback (default: ./{DEFAULT_OUT}, regraded "
                             "from scratch on every run; an --out folder resumes like grade-batch)")
    parser.add_argument("--jobs", type=int, default=None, metavar="N",
                        help="parallel workers (default: the number of CPU cores)")
    parser.add_argument("--profile", choices=["full", "fast"], default="full",
                        help="grading profile (default: full)")
    parser.add_argument("--exercises", default=None, metavar="STEMS",
                        help="comma-separated module stems to grade (default: all seven)")
    parser.add_argument("--force", action="store_true", help="regrade students already graded in --out")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def parse_expected(path: Path, profile: str = "full") -> dict[str, tuple[str, str]]:
    """``{student_id: (total, status)}`` from the markdown table of EXPECTED.md.

    The table has the columns ``student_id``, ``total_full``, ``total_fast``
    and ``status`` (others are free text); ``profile`` picks the total column.
    Rows whose first cell is not a student id (header, separator) are skipped.

    Raises:
        ValueError: if the table has no ``student_id`` header or no total column for ``profile``.
    """
    expected: dict[str, tuple[str, str]] = {}
    header: list[str] | None = None
    column = f"total_{profile}"
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("|"):
            continue
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if header is None:
            if "student_id" in cells:
                header = cells
                if column not in header or "status" not in header:
                    raise ValueError(f"{path}: the table needs the columns {column!r} and 'status'")
            continue
        if set(cells[0]) <= set("-: "):
            continue
        row = dict(zip(header, cells))
        expected[row["student_id"]] = (row[column], row["status"])
    if header is None:
        raise ValueError(f"{path}: no markdown table with a 'student_id' column")
    return expected


def gradebook_table(out_dir: Path):
    """A rich Table of ``out_dir/gradebook.csv`` (one row per student, status coloured)."""
    import csv

    from rich.table import Table

    with open(out_dir / "gradebook.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    columns = list(rows[0].keys()) if rows else ["student_id"]
    stems = columns[1:-4]
    max_total = rows[0]["max_total"] if rows else "?"
    table = Table(title="Gradebook: demo cohort", show_lines=False)
    table.add_column("student", no_wrap=True)
    for stem in stems:
        table.add_column(stem.split("_")[0], justify="right", no_wrap=True)
    table.add_column(f"total /{max_total}", justify="right", no_wrap=True)
    table.add_column("status", no_wrap=True)
    # One line per student: the full message is in gradebook.csv and the student's feedback.md.
    table.add_column("why", no_wrap=True, overflow="ellipsis", max_width=44)
    from rich.markup import escape  # ids and messages are student-derived: never rich markup

    for r in rows:
        style = STATUS_STYLE.get(r["status"], "")
        status = escape(r["status"])
        table.add_row(escape(r["student_id"]), *[r[s] for s in stems], r["total"],
                      f"[{style}]{status}[/{style}]" if style else status, escape(r["message"]))
    return table


def run(args: argparse.Namespace) -> int:
    """Grade the cohort, print the table and the paths; exit 0 (1 when the cohort is missing, 2 on a usage error)."""
    import csv
    import sys

    from rich.console import Console

    from grader.batch import run_batch
    from ppo_course.syllabus import EXERCISES

    exercises = [s.strip() for s in args.exercises.split(",") if s.strip()] if args.exercises else None
    unknown = sorted(set(exercises or ()) - set(EXERCISES))
    if unknown:
        print(f"error: unknown exercise(s) {unknown}; known: {', '.join(EXERCISES)}", file=sys.stderr)
        return 2
    if args.jobs is not None and args.jobs < 1:
        print(f"error: --jobs must be at least 1 (got {args.jobs})", file=sys.stderr)
        return 2
    cohort = cohort_dir()
    submissions = cohort / "submissions"
    if not submissions.is_dir():
        print(f"error: the demo cohort is not here ({submissions}); the demo runs from a source checkout",
              file=sys.stderr)
        return 1
    # Default: ./demo-out, graded afresh each time (a demo shows grading, not the resume of an old run).
    out = (args.out or Path(DEFAULT_OUT)).resolve()
    force = args.force or args.out is None
    console = Console()
    if not console.is_terminal:
        console = Console(width=160)  # logs and CI: the whole table ("why" is cut at 44), one line per student
    console.print(f"Grading the demo cohort in {submissions} with the hidden graders ({args.profile} profile)...")
    from grader.course_secret import GraderSecretError
    from grader.records.points_change import PointsChanged

    try:
        summary = run_batch(submissions, out, jobs=args.jobs, force=force, profile=args.profile,
                            exercises=exercises, progress=not args.no_progress, accept_points_change=force,
                            log=lambda m: console.print(f"[dim]{m}[/dim]"))
    except (GraderSecretError, PointsChanged) as exc:  # no course secret and none can be made; a points change
        # against an --out graded before, without --force (which grades afresh): nothing was graded
        print(f"error: {exc}", file=sys.stderr)
        return 1
    console.print(gradebook_table(out))
    expected_path = cohort / "EXPECTED.md"
    if expected_path.is_file() and exercises is None:  # EXPECTED.md's totals cover all seven
        expected = parse_expected(expected_path, args.profile)
        with open(out / "gradebook.csv", newline="", encoding="utf-8") as fh:
            got = {r["student_id"]: (r["total"], r["status"]) for r in csv.DictReader(fh)}
        differ = sorted(s for s in set(expected) | set(got) if expected.get(s) != got.get(s))
        if differ:
            console.print(f"[yellow]{len(differ)} student(s) differ from EXPECTED.md: {', '.join(differ)}[/yellow]")
        else:
            console.print(f"[green]All {len(got)} students match examples/cohort/EXPECTED.md.[/green]")
    console.print(summary.line(), markup=False, highlight=False)  # the same line as grade-batch's
    console.print(f"Gradebook:     {out / 'gradebook.csv'}")
    console.print(f"Class report:  {out / 'report.md'} (+ report.png)")
    console.print(f"Per student:   {out}/<student>/results.json and feedback.md")
    console.print(f"Output folder: {out} (remove it when done; the next `ppo-course demo` rewrites it)")
    return 0
