"""``ppo-course secret init|show|rotate``: the course's grader secret (``grader.course_secret``).

    ppo-course secret init [--secret-file FILE] [--from FILE|-]   make it (or install the course's own)
    ppo-course secret show [--secret-file FILE] [--value]         where it is and its digest (--value: the secret)
    ppo-course secret rotate [--secret-file FILE]                 a new one; the old one is retired

Every hidden input is drawn from it. The file is ``--secret-file``, else
``$PPO_COURSE_SECRET_FILE``, else ``~/.config/ppo-course/grader_secret``. Exit 0
when done, 1 when the secret cannot be made, read or replaced (said why), 2 on a
usage error. docs/ta_guide.md, "The grader's secret".
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = "the course's grader secret (it draws every hidden input): init, show, rotate"

ROTATE_NOTE = ("Hidden inputs drawn from the old secret must now be treated as public: regrade with the new one "
               "(rerun grade-batch: its fingerprint changed, so every student is regraded), rebuild the Gradescope "
               "bundle, copy the new secret to the nbgrader course and every Dask node.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``secret``."""
    parser.add_argument("action", choices=["init", "show", "rotate"],
                        help="init: make the course's secret if there is none; show: where it is and its digest; "
                             "rotate: replace it by a new one (the old one is kept as *.retired-<time>)")
    parser.add_argument("--secret-file", type=Path, default=None, metavar="FILE",
                        help="the secret file (default: $PPO_COURSE_SECRET_FILE, else "
                             "~/.config/ppo-course/grader_secret)")
    parser.add_argument("--from", dest="source", default=None, metavar="FILE",
                        help="init: install this existing course secret (a file, or - for stdin) instead of making "
                             "a new one: another machine that grades the same course (a Dask node, a TA's laptop)")
    parser.add_argument("--value", action="store_true",
                        help="show: print the secret itself, alone on stdout (to pipe into `secret init --from -` "
                             "on another grading machine; never paste it anywhere public)")


def run(args: argparse.Namespace) -> int:
    """Do ``args.action``; see the module docstring for the exit status."""
    from grader.course_secret import GraderSecretError

    if args.source is not None and args.action != "init":
        print("error: --from is an option of `secret init`", file=sys.stderr)
        return 2
    if args.value and args.action != "show":
        print("error: --value is an option of `secret show`", file=sys.stderr)
        return 2
    try:
        return {"init": _init, "show": _show, "rotate": _rotate}[args.action](args)
    except (GraderSecretError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def _init(args: argparse.Namespace) -> int:
    from grader.course_secret import create_secret, load_secret, secret_digest, secret_path

    where = secret_path(args.secret_file)
    text = None
    if args.source is not None:
        text = sys.stdin.read() if args.source == "-" else Path(args.source).read_text(encoding="ascii")
    try:
        create_secret(where, text)
    except FileExistsError:
        digest = secret_digest(load_secret(where))
        print(f"error: a grader secret is already there: {where} (digest {digest}); `ppo-course secret rotate` "
              "replaces it", file=sys.stderr)
        return 1
    how = "installed the course's grader secret" if text is not None else "made a new grader secret"
    print(f"{how} at {where} (digest {secret_digest(load_secret(where))}, mode 0600)")
    print("Keep it: every hidden input is drawn from it. Back it up where only the course staff can read it.")
    return 0


def _show(args: argparse.Namespace) -> int:
    from grader.course_secret import load_secret, secret_digest, secret_path

    where = secret_path(args.secret_file)
    secret = load_secret(where)
    if args.value:
        print(secret.decode("ascii", "replace"))
        return 0
    print(f"grader secret: {where}")
    print(f"digest:        {secret_digest(secret)} (names it in fingerprints and cluster checks; not the secret)")
    return 0


def _rotate(args: argparse.Namespace) -> int:
    from grader.course_secret import GraderSecretError, load_secret, rotate_secret, secret_digest, secret_path

    where = secret_path(args.secret_file)
    try:
        old = secret_digest(load_secret(where))
    except GraderSecretError:  # none yet, or one that may not be used (e.g. open to other users): replaced all the same
        old = None
    where, retired = rotate_secret(where)
    print(f"new grader secret at {where} (digest {secret_digest(load_secret(where))}"
          + (f"; the old one, digest {old}, kept as {retired}" if retired else "") + ")")
    print(ROTATE_NOTE)
    return 0
