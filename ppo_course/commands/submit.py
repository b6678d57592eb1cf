"""``ppo-course submit [EXERCISES_DIR] [--out FILE.zip]``: make the submission, checked as the grader will check it.

The zip holds the exercise modules found in EXERCISES_DIR (``ex1_ratio.py`` ...
``ex7_ppo_step.py``) and the helper ``.py`` files they import, transitively
(read with ``ast``; only files in that folder: ``import torch`` adds nothing),
at the zip's root. Nothing else: not ``.venv``, not ``build/``, not data
files. Before the zip is kept, it goes through the grader's own intake rules
(``ppo_course.submission_rules``: size, file count, NUL bytes, symlinks, where
the modules are), and every module is parsed: a syntax error is said here, not
found out at grading time. The command prints where it wrote the zip, its size
and its SHA-256 (what the grader records), and the notes.

The zip is deterministic: the same files give the same bytes, so the same hash.

Exit status: 0 written; 1 no exercise module found, or the intake rules reject the zip (nothing written);
2 a usage error. A module with a syntax error is written all the same (that exercise scores 0; the
others are graded), with a warning.

Source: the contract's command table.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import zipfile
from pathlib import Path

from ppo_course.atomic_files import atomic_path
from ppo_course.syllabus import EXERCISES

HELP = "make your submission (a .zip of your exercise modules and the helpers they import), checked as the grader will"

#: Every zip entry gets this date, so that the same files give the same zip (and the same hash).
ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``submit``."""
    parser.add_argument("exercises_dir", nargs="?", type=Path, default=None, metavar="EXERCISES_DIR",
                        help="folder holding ex1_ratio.py ... (default: ./exercises if present, else the current folder)")
    parser.add_argument("--out", type=Path, default=Path("submission.zip"), metavar="FILE.zip",
                        help="where to write the submission (default: ./submission.zip)")


def write_zip(root: Path, files: list[Path], out: Path) -> None:
    """Write ``files`` (paths relative to ``root``) into the zip ``out``, deterministically (sorted, fixed dates).

    Raises:
        OSError: if a file cannot be read or ``out`` cannot be written.
    """
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for rel in sorted(files):
            info = zipfile.ZipInfo(rel.as_posix(), date_time=ZIP_DATE)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, (root / rel).read_bytes())


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def check_zip(path: Path) -> list[str]:
    """The intake's notes on the zip at ``path`` (the grader's own rules, ``ppo_course.submission_rules``).

    Raises:
        submission_rules.Rejected: when the grader would reject it (the reason is the grader's).
    """
    from ppo_course import submission_layout as layout

    with layout.staged(path) as staged:
        layout.locate_modules(staged.root)
        return list(staged.notes)


def make_submission(exercises_dir: Path, out: Path) -> tuple[list[Path], list[str], list[str]]:
    """Write the submission zip of ``exercises_dir`` to ``out`` (atomically: a checked temporary file, then renamed).

    Returns:
        (files in the zip, relative paths; warnings: syntax errors; the intake's notes).

    Raises:
        FileNotFoundError: when ``exercises_dir`` holds no exercise module.
        submission_rules.Rejected: when the intake rules reject the zip (``out`` is not written).
        OSError: if a file cannot be read or ``out`` cannot be written.
    """
    from ppo_course.check_support.imports import import_closure

    modules = [Path(f"{stem}.py") for stem in EXERCISES if (exercises_dir / f"{stem}.py").is_file()]
    if not modules:
        raise FileNotFoundError(f"no exercise module (ex1_ratio.py ... ex7_ppo_step.py) in {exercises_dir}")
    closure = import_closure(exercises_dir, modules)
    warnings = [f"{rel.as_posix()}: syntax error ({why}); Python cannot import it, so "
                f"{'that exercise scores 0' if rel in modules else 'the exercises importing it score 0'}"
                for rel, why in closure.syntax_errors.items()]
    with atomic_path(out, suffix=".zip") as tmp:  # the intake's check reads the suffix
        write_zip(exercises_dir, closure.files, tmp)
        notes = check_zip(tmp)
    return closure.files, warnings, notes


def run(args: argparse.Namespace) -> int:
    """Make the submission; 0 written, 1 nothing to submit or rejected, 2 usage error."""
    from ppo_course.commands.check import default_dir
    from ppo_course.submission_rules import Rejected

    exercises_dir = (args.exercises_dir or default_dir()).resolve()
    if not exercises_dir.is_dir():
        print(f"error: {exercises_dir} is not a folder", file=sys.stderr)
        return 2
    out = args.out.resolve()
    if out.suffix.lower() != ".zip":
        print(f"error: --out must name a .zip file (got {args.out})", file=sys.stderr)
        return 2
    try:
        files, warnings, notes = make_submission(exercises_dir, out)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except Rejected as exc:
        print(f"error: the grader would reject this submission: {exc}\nNothing was written.", file=sys.stderr)
        return 1
    helpers = [f for f in files if f.stem not in EXERCISES]
    stems = [f.stem for f in files if f.stem in EXERCISES and f.parent == Path(".")]
    print(f"Wrote {out}")
    print(f"  {len(files)} files, {out.stat().st_size:,} bytes; sha256 {_sha256(out)}")
    print(f"  exercises: {', '.join(stems)}" + (f" (missing: {', '.join(s for s in EXERCISES if s not in stems)})"
                                                 if len(stems) < len(EXERCISES) else ""))
    if helpers:
        print(f"  helpers they import: {', '.join(h.as_posix() for h in helpers)}")
    for line in notes:
        print(f"note: {line}")
    for line in warnings:
        print(f"warning: {line}", file=sys.stderr)
    return 0
