"""``ppo-course similarity SUBMISSIONS_DIR --out DIR``: offline code similarity across a class (``grader.reports.similarity``)."""

from __future__ import annotations

import argparse
from pathlib import Path

SHOWN = 20  # flagged pairs printed on the terminal; every one is in flagged_pairs.csv
HELP = "offline similarity report across a class (copydetect; stubs treated as boilerplate): HTML side by side + CSV"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``similarity`` (thresholds default to the calibrated values, docs/ta_guide.md)."""
    from grader.reports.similarity import SimilarityConfig

    d = SimilarityConfig()
    parser.add_argument("submissions", type=Path, metavar="SUBMISSIONS_DIR",
                        help="one sub-folder or .zip per student, as for grade-batch")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR",
                        help="receives similarity.html, flagged_pairs.csv and all_pairs.csv")
    from grader.commands.grade_batch import add_attempt_arguments

    add_attempt_arguments(parser)  # the same rule as grade-batch: only each student's latest attempt is compared
    parser.add_argument("--archive", type=Path, action="append", default=[], metavar="DIR",
                        help="an earlier cohort's submissions folder to compare against (repeatable)")
    parser.add_argument("--reference-impl", type=Path, action="append", default=[], metavar="DIR",
                        help="a folder of public implementations (.py) to compare every module against (repeatable)")
    parser.add_argument("--stubs", type=Path, default=None, metavar="DIR",
                        help="the stubs treated as boilerplate (default: the repository's exercises/)")
    parser.add_argument("--threshold", type=float, default=d.threshold,
                        help=f"share of a file's code matched that flags a pair (default {d.threshold})")
    parser.add_argument("--min-overlap", type=int, default=d.min_overlap,
                        help=f"shortest match that may flag, tokenised characters (default {d.min_overlap})")
    parser.add_argument("--k", type=int, default=d.noise_t, dest="noise_t",
                        help=f"k-gram length, tokenised characters (default {d.noise_t})")


def run(args: argparse.Namespace) -> int:
    """Compare, write the report, print the flagged pairs; exit 0, or 2 on a usage error."""
    import sys

    from pydantic import ValidationError

    from grader.intake.attempts import AttemptRuleError, rule_from_options
    from grader.reports.similarity import SimilarityConfig, run_similarity

    for folder in [args.submissions, *args.archive, *args.reference_impl]:
        if not folder.is_dir():
            print(f"error: {folder} is not a folder", file=sys.stderr)
            return 2
    try:
        config = SimilarityConfig(noise_t=args.noise_t, guarantee_t=args.noise_t, threshold=args.threshold,
                                  min_overlap=args.min_overlap)
    except ValidationError as exc:
        print(f"error: bad threshold: {exc.errors()[0]['loc'][0]}: {exc.errors()[0]['msg']}", file=sys.stderr)
        return 2
    try:
        rule = rule_from_options(args.roster, args.attempts)
        report = run_similarity(args.submissions, args.out, archives=args.archive, references=args.reference_impl,
                                stubs_dir=args.stubs, config=config, attempt_rule=rule)
    except AttemptRuleError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:  # a roster that cannot be read (lms.roster.RosterError)
        print(f"error: {exc}", file=sys.stderr)
        return 2
    shown = report.flagged[:SHOWN]
    print(f"{report.n_students} students, {len(report.pairs)} module pairs compared (a pair = one module of two "
          f"owners: the same exercise, helpers with helpers, archives, references), {len(report.flagged)} flagged "
          f"(share ≥ {config.threshold:g}, match ≥ {config.min_overlap})")
    if shown:
        more = f", the first {len(shown)} of {len(report.flagged)}" if len(report.flagged) > len(shown) else ""
        print(f"flagged pairs (most similar first{more}; all in flagged_pairs.csv):")
    for p in shown:
        print(f"  {p.a.owner} ~ {p.b.owner}  {p.a.module}  {p.similarity_a:.0%} / {p.similarity_b:.0%}")
    owners = sorted({f.owner for f in report.review})
    if owners:
        print(f"flagged for review, {len(owners)} submission(s) load or run code similarity cannot read "
              f"(reasons in flagged_for_review.csv and similarity.html): {', '.join(owners)}")
    for note in report.notes:
        print(f"note: {note}")
    print(f"report: {args.out / 'similarity.html'}; flagged pairs: {args.out / 'flagged_pairs.csv'}; "
          f"flagged for review: {args.out / 'flagged_for_review.csv'}")
    return 0
