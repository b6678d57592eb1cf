"""``ppo-course gradescope-bundle OUT.zip``: the Gradescope autograder zip.

The zip's root holds ``setup.sh`` and ``run_autograder`` (templates in
``grader/platforms/gradescope/``), ``gradescope_config.json`` (profile, hidden-test
visibility, limits) and the grader's source: ``pyproject.toml``, ``README.md``
and the packages ``ppo_course``, ``sandbox_child``, ``ppo_reference``, ``lms``, ``grader`` and ``quiz_bank``
(with ``--quiz`` the quiz responses file is graded too; hidden tests and quiz keys included: the zip goes to Gradescope, never to students). Gradescope
unpacks it into ``/autograder/source``.

The course's grader secret (``grader.course_secret``, made at first use) travels as
``grader_secret`` at the zip's root (mode 0600), outside every package, so that
``pip install /autograder/source`` never installs it; ``run_autograder`` names it
to the grader with ``$PPO_COURSE_SECRET_FILE``. Rotating the secret means
building and uploading the bundle again.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = "write a Gradescope autograder zip (setup.sh, run_autograder, the grader) that grades one submission"

PACKAGES = ("ppo_course", "sandbox_child", "ppo_reference", "lms", "grader", "quiz_bank")  # quiz_bank with its keys
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
    parser.add_argument("--secret-file", type=Path, default=None, metavar="FILE",
                        help="the course's grader secret to carry (default: $PPO_COURSE_SECRET_FILE, else "
                             "~/.config/ppo-course/grader_secret, made at first use; `ppo-course secret`)")


def repo_root() -> Path:
    """The folder holding the ``grader`` package and ``pyproject.toml`` (the source tree)."""
    import grader

    return Path(grader.__file__).resolve().parent.parent


def build_bundle(out: Path, *, profile: str = "fast", hidden_visibility: str = "after_published",
                 timeout_s: float = 540.0, max_bytes: int = 20_000_000, full_after_due: bool = True,
                 reveal_after: int = 0, quiz: bool = False, secret_file: Path | None = None) -> Path:
    """Write the autograder zip to ``out`` (atomically) and return its path.

    ``secret_file``: the course's grader secret carried as ``grader_secret`` (default: the course's,
    ``grader.course_secret.ensure_secret``, made at first use).

    Raises:
        FileNotFoundError: if the source tree (``pyproject.toml`` beside ``grader/``) is not there,
            e.g. in an installed wheel without sources.
        grader.course_secret.GraderSecretError: no usable secret and none can be made.
    """
    import zipfile

    from grader.course_secret import SECRET_NAME, ensure_secret, load_secret
    from grader.platforms.gradescope import CONFIG_NAME, RUN_AUTOGRADER, SETUP_SH
    from grader.platforms.gradescope.run import BundleConfig
    from ppo_course.atomic_files import atomic_path

    root = repo_root()
    if not (root / "pyproject.toml").is_file():
        raise FileNotFoundError(f"no pyproject.toml beside {root / 'grader'}: the bundle needs the source tree")
    config = BundleConfig(profile=profile, hidden_visibility=hidden_visibility, timeout_s=timeout_s, max_bytes=max_bytes,
                          full_after_due=full_after_due, reveal_after=reveal_after, quiz=quiz)
    secret = load_secret(ensure_secret(secret_file, say=lambda msg: print(msg, file=sys.stderr)))
    with atomic_path(out, mode=0o600) as tmp:  # the zip holds the course's secret: for the staff only
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
            info = zipfile.ZipInfo(SECRET_NAME, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o100600 << 16)  # a regular file only its owner reads
            zf.writestr(info, secret + b"\n")
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
                    if (path.is_dir() or "__pycache__" in rel.parts or path.suffix in {".pyc", ".pyo"}
                            or SECRET_NAME in path.name):  # the secret travels once, at the root, above
                        continue
                    zf.write(path, rel.as_posix())
    return out


def run(args: argparse.Namespace) -> int:
    """Write the bundle and say how to use it; exit 0 (1 without a usable course secret)."""
    from grader.course_secret import GraderSecretError, load_secret, secret_digest

    try:
        path = build_bundle(args.out, profile=args.profile, hidden_visibility=args.hidden_visibility,
                            timeout_s=args.timeout, max_bytes=int(args.max_size_mb * 1e6),
                            full_after_due=args.full_after_due, reveal_after=args.reveal_after, quiz=args.quiz,
                            secret_file=args.secret_file)
    except GraderSecretError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    size_kb = path.stat().st_size / 1024
    print(f"wrote {path} ({size_kb:.0f} kB): upload it as the assignment's autograder on Gradescope")
    digest = secret_digest(load_secret(args.secret_file))
    print(f"it carries the course's grader secret (digest {digest}): keep the zip among the staff")
    print("(Ubuntu base image; setup.sh installs Python, CPU torch and the grader into /autograder/venv)")
    tier = "full after the deadline (press 'Regrade all submissions' then)" if args.full_after_due else args.profile
    print(f"tiers: {args.profile} on submit, {tier}; hidden tests shown from submission "
          f"{args.reveal_after + 1}" if args.reveal_after else f"tiers: {args.profile} on submit, {tier}")
    return 0
