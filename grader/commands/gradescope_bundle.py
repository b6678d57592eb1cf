"""``ppo-course gradescope-bundle OUT.zip``: the Gradescope autograder zip.

The zip's root holds ``setup.sh`` and ``run_autograder`` (templates in
``grader/platforms/gradescope/``), ``gradescope_config.json`` (profile, hidden-test
visibility, limits) and the grader's source: ``pyproject.toml``, ``README.md``
and the packages ``ppo_course``, ``ppo_reference``, ``grader`` and ``quiz_bank``
(with ``--quiz`` the quiz responses file is graded too; hidden tests and quiz keys included: the zip goes to Gradescope, never to students). Gradescope
unpacks it into ``/autograder/source``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "write a Gradescope autograder zip (setup.sh, run_autograder, the grader) that grades one submission"

PACKAGES = ("ppo_course", "ppo_reference", "grader", "quiz_bank")  # quiz_bank with its keys: grading side only
TOP_FILES = ("pyproject.toml", "README.md")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``gradescope-bundle``."""
    parser.add_argument("out", type=Path, metavar="OUT.zip", help="where to write the autograder zip")
    parser.add_argument("--profile", choices=["full", "fast"], default="fast",
                        help="grading profile while the assignment is open (default: fast, seconds per submission)")
    parser.add_argument("--no-full-after-due", dest="full_after_due", action="store_false",
                        help="keep --profile after the deadline too (default: a regrade after the last deadline "
                             "uses the full profile, exercise 7's training run included)")
    parser.add_argument("--reveal-after", type=int, default=0, metavar="N",
                        help="show hidden tests (what they check and the diagnosis, never inputs) from a "
                             "student's N-th previous submission on (default 0: never)")
    parser.add_argument("--hidden-visibility", choices=["hidden", "after_due_date", "after_published"],
                        default="after_published",
                        help="Gradescope visibility of hidden tests (default: after_published)")
    parser.add_argument("--timeout", type=float, default=540.0, metavar="SECONDS",
                        help="hard limit for grading one submission (default: 540, under Gradescope's default "
                             "10-minute autograder timeout; raise both together)")
    parser.add_argument("--quiz", action="store_true",
                        help="also grade a quiz responses file in the submission: one test per stop (keys stay in the zip)")
    parser.add_argument("--max-size-mb", type=float, default=20.0, metavar="MB",
                        help="largest unpacked submission accepted (default: 20 MB)")


def repo_root() -> Path:
    """The folder holding the ``grader`` package and ``pyproject.toml`` (the source tree)."""
    import grader

    return Path(grader.__file__).resolve().parent.parent


def build_bundle(out: Path, *, profile: str = "fast", hidden_visibility: str = "after_published",
                 timeout_s: float = 540.0, max_bytes: int = 20_000_000, full_after_due: bool = True,
                 reveal_after: int = 0, quiz: bool = False) -> Path:
    """Write the autograder zip to ``out`` (atomically) and return its path.

    Raises:
        FileNotFoundError: if the source tree (``pyproject.toml`` beside ``grader/``) is not there,
            e.g. in an installed wheel without sources.
    """
    import zipfile

    from grader.platforms.gradescope import CONFIG_NAME, RUN_AUTOGRADER, SETUP_SH
    from grader.platforms.gradescope.run import BundleConfig
    from ppo_course.atomic_files import atomic_path

    root = repo_root()
    if not (root / "pyproject.toml").is_file():
        raise FileNotFoundError(f"no pyproject.toml beside {root / 'grader'}: the bundle needs the source tree")
    config = BundleConfig(profile=profile, hidden_visibility=hidden_visibility, timeout_s=timeout_s, max_bytes=max_bytes,
                          full_after_due=full_after_due, reveal_after=reveal_after, quiz=quiz)
    with atomic_path(out) as tmp:
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
            for template, name in ((SETUP_SH, "setup.sh"), (RUN_AUTOGRADER, "run_autograder")):
                info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
                info.external_attr = (0o100755 << 16)  # executable regular file
                info.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(info, template.read_bytes())
            zf.writestr(CONFIG_NAME, config.model_dump_json(indent=2) + "\n")
            for name in TOP_FILES:
                if (root / name).is_file():
                    zf.write(root / name, name)
            for package in PACKAGES:
                for path in sorted((root / package).rglob("*")):
                    rel = path.relative_to(root)
                    if path.is_dir() or "__pycache__" in rel.parts or path.suffix in {".pyc", ".pyo"}:
                        continue
                    zf.write(path, rel.as_posix())
    return out


def run(args: argparse.Namespace) -> int:
    """Write the bundle and say how to use it; exit 0."""
    path = build_bundle(args.out, profile=args.profile, hidden_visibility=args.hidden_visibility,
                        timeout_s=args.timeout, max_bytes=int(args.max_size_mb * 1e6),
                        full_after_due=args.full_after_due, reveal_after=args.reveal_after, quiz=args.quiz)
    size_kb = path.stat().st_size / 1024
    print(f"wrote {path} ({size_kb:.0f} kB): upload it as the assignment's autograder on Gradescope")
    print("(Ubuntu base image; setup.sh installs Python, CPU torch and the grader into /autograder/venv)")
    tier = "full after the deadline (press 'Regrade all submissions' then)" if args.full_after_due else args.profile
    print(f"tiers: {args.profile} on submit, {tier}; hidden tests shown from submission "
          f"{args.reveal_after + 1}" if args.reveal_after else f"tiers: {args.profile} on submit, {tier}")
    return 0
