"""``ppo-course export BATCH_DIR --format canvas|moodle|csv --out FILE``: the gradebook for an LMS (``grader.reports.export``)."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "export a graded batch's gradebook in the layout Canvas or Moodle imports (or plain CSV)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``export``."""
    parser.add_argument("batch", type=Path, metavar="BATCH_DIR", help="a grade-batch output folder")
    parser.add_argument("--format", choices=["canvas", "moodle", "csv"], required=True, dest="fmt")
    parser.add_argument("--out", type=Path, required=True, metavar="FILE")
    parser.add_argument("--assignment", default="ppo", help="prefix of the grade columns (default: ppo)")
    parser.add_argument("--roster", type=Path, default=None, metavar="CSV",
                        help="the course roster (lms.roster): student_id plus LMS identities (name, canvas_id, "
                             "sis_user_id, sis_login_id, section, email, idnumber, username); students not on it, "
                             "or without the identifier the LMS matches on, are left out and listed")
    parser.add_argument("--strict", action="store_true",
                        help="fail (exit 1, nothing written) when any student would be left out")
    parser.add_argument("--quiz-db", type=Path, default=None, metavar="FILE",
                        help="the quiz's SQLite store: completion also needs all 8 stops passed")
    parser.add_argument("--quiz-results", type=Path, default=None, metavar="CSV",
                        help="`ppo-course quiz grade-batch`'s gradebook: completion also needs `complete` True")
    parser.add_argument("--moodle-id", choices=["idnumber", "email", "username"], default="idnumber",
                        help="Moodle's identifier column (default: idnumber)")
    parser.add_argument("--allow-fast-preview", action="store_true",
                        help="export a batch graded with --profile fast as a labelled preview (never a grade: "
                             "chapter_complete is never marked); without it such a batch is refused")
    parser.add_argument("--allow-grader-faults", action="store_true",
                        help="export a batch in which the grader itself failed for some students (status "
                             "grader_fault): the others are written, the faulted students' cells are left empty "
                             "(never 0); without it such a batch is refused")
    parser.add_argument("--canvas-id", action="append", default=[], metavar="COLUMN=ID",
                        help="an existing Canvas assignment id for a column (e.g. ex4_gae=1234; repeatable)")


def run(args: argparse.Namespace) -> int:
    """Write the export; exit 0 (students left out are listed on stderr), 1 when ``--strict`` refuses, 2 on a usage error."""
    import sys

    from grader.reports.export import ExportRefused, export_batch
    from grader.records.gradebook import FastPreviewRefused
    from grader.records.faults import GraderFaultRefused

    canvas_ids = {}
    for item in args.canvas_id:
        column, sep, ident = item.partition("=")
        if not sep or not column or not ident:
            print(f"error: --canvas-id wants COLUMN=ID, got {item!r}", file=sys.stderr)
            return 2
        canvas_ids[column] = ident
    try:
        done = export_batch(args.batch, args.fmt, args.out, assignment=args.assignment, roster=args.roster,
                            quiz_db=args.quiz_db, quiz_results=args.quiz_results, moodle_id=args.moodle_id,
                            canvas_ids=canvas_ids, strict=args.strict,
                            allow_fast_preview=args.allow_fast_preview,
                            allow_grader_faults=args.allow_grader_faults)
    except (ExportRefused, FastPreviewRefused, GraderFaultRefused) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except (ValueError, FileNotFoundError, NotADirectoryError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for note in done.notes:
        print(f"note: {note}", file=sys.stderr)
    for warning in done.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for sid, why in done.left_out:
        print(f"left out {sid!r}: {why}", file=sys.stderr)
    if done.left_out:
        print(f"warning: {len(done.left_out)} student(s) are not in {done.path} (listed above); fix the roster and "
              "export again, or use --strict to make this an error", file=sys.stderr)
    print(f"wrote {done.path} ({args.fmt})")
    from grader.records.gradebook import incomplete_ids

    pending = incomplete_ids(args.batch)
    if pending:
        shown = ", ".join(pending[:10]) + (f" and {len(pending) - 10} more" if len(pending) > 10 else "")
        print(f"warning: the batch in {args.batch} did not finish (interrupted or killed): {len(pending)} "
              f"student(s) are not in this export ({shown}); rerun the same grade-batch command to finish it, "
              "then export again", file=sys.stderr)
    return 0
