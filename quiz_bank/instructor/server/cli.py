"""``ppo-course quiz serve | tokens | revoke | export``: run the server, issue and revoke sign-in tokens, export the gradebook.

Defaults keep the three in step: the database ``quiz.sqlite`` and the secret
``quiz.secret`` in the working directory (override with ``--db`` and
``--secret-file``).
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from ppo_course.atomic_files import atomic_write_text

DEFAULT_DB = Path("quiz.sqlite")
DEFAULT_SECRET = Path("quiz.secret")


def add_arguments(verbs) -> None:
    """Register ``serve``, ``tokens`` and ``export`` on the ``quiz`` sub-parsers."""
    serve = verbs.add_parser("serve", help="the quiz in a browser, keys on the server (FastAPI + uvicorn)")
    serve.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1: this machine only)")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--roster", type=Path, default=None, help="roster CSV (student_id[, name, section, sis_user_id, sis_login_id, canvas_id, email])")
    serve.add_argument("--db", type=Path, default=DEFAULT_DB, help="SQLite file (default ./quiz.sqlite)")
    serve.add_argument("--secret-file", type=Path, default=DEFAULT_SECRET, help="token-signing secret (default ./quiz.secret, created if missing)")
    serve.add_argument("--policy", type=Path, default=None, help="attempt policy YAML (default: the course's)")
    serve.add_argument("--bank", type=Path, default=None, help="question bank folder (default: the installed bank)")
    serve.add_argument("--trust-proxy", action="store_true",
                       help="behind your own HTTPS reverse proxy: believe its X-Forwarded-Proto/-Host (Secure cookie, origin check)")
    serve.add_argument("--session-hours", type=float, default=12.0, help="lifetime of the sign-in cookie (default 12 h)")
    serve.add_argument("--lti", type=Path, default=None, metavar="DIR",
                       help="be an LTI 1.3 tool with the registrations and keys in DIR (`ppo-course lti`, docs/lti.md)")
    serve.add_argument("--base-url", default=None, help="the URL the LMS reaches this server at (with --lti; "
                       "default http://HOST:PORT)")

    tokens = verbs.add_parser("tokens", help="TA: sign-in tokens for every student of a roster (and instructors)")
    tokens.add_argument("--roster", type=Path, default=None, help="roster CSV with a student_id column")
    tokens.add_argument("--secret-file", type=Path, default=DEFAULT_SECRET, help="signing secret (created, mode 0600, if missing)")
    tokens.add_argument("--instructor", action="append", default=[], metavar="NAME", help="also issue an instructor token (repeatable)")
    tokens.add_argument("--out", type=Path, default=None, help="write student_id,role,token,login_path as CSV here (default: stdout)")
    tokens.add_argument("--valid-days", type=float, default=120.0, help="tokens expire this many days after issue (default 120, at most 366)")

    revoke = verbs.add_parser("revoke", help="TA: refuse every token issued so far to these ids (issue new ones with `quiz tokens`)")
    revoke.add_argument("ids", nargs="+", metavar="ID", help="student (or instructor) ids")
    revoke.add_argument("--db", type=Path, default=DEFAULT_DB, help="the server's SQLite file (default ./quiz.sqlite)")

    export = verbs.add_parser("export", help="TA: the quiz gradebook from the server's database (csv, canvas, moodle)")
    export.add_argument("--db", type=Path, default=DEFAULT_DB)
    export.add_argument("--format", choices=("csv", "canvas", "moodle"), default="csv")
    export.add_argument("--out", type=Path, required=True)
    export.add_argument("--roster", type=Path, default=None, help="roster CSV to merge in first (names, SIS ids, emails)")
    export.add_argument("--bank", type=Path, default=None)


def _server_missing() -> int:
    print("error: the quiz server is not part of this install (the student bundle has no keys); "
          "your TA runs it and gives you its address and a sign-in token", file=sys.stderr)
    return 2


def serve(args: argparse.Namespace) -> int:
    """Run the server until Ctrl-C."""
    try:
        import uvicorn

        from quiz_bank.instructor.server.app import create_app
        from quiz_bank.instructor.server.auth import AuthError, load_secret, read_roster
        from quiz_bank.instructor.server.policy import load_policy
    except ImportError:
        return _server_missing()
    from quiz_bank.loader import keys_installed, load_bank
    from quiz_bank.symbolic import SymbolicChecker

    bank = load_bank(args.bank)
    if not (keys_installed() and bank.has_fixed_keys):
        print("error: the quiz server needs the answer keys (an instructor install)", file=sys.stderr)
        return 2
    try:
        secret = load_secret(args.secret_file, create=True)
        roster = read_roster(args.roster) if args.roster else None
        policy = load_policy(args.policy) if args.policy else None
    except (AuthError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    lti_tool = None
    if args.lti is not None:
        try:
            from grader.platforms.lti.tool import LtiTool
        except ImportError:
            print("error: --lti needs the instructor install (grader.platforms.lti)", file=sys.stderr)
            return 2
        lti_tool = LtiTool(args.lti, args.base_url or f"http://{args.host}:{args.port}")
        print(f"LTI 1.3 tool: login {lti_tool.login_url}, launch {lti_tool.launch_url}, "
              f"{len(lti_tool.registry.platforms)} platform(s) registered", flush=True)
    with SymbolicChecker() as checker:
        app = create_app(bank, args.db, secret, roster=roster, policy=policy, checker=checker,
                         trust_proxy=args.trust_proxy, session_hours=args.session_hours, lti_tool=lti_tool)
        print(f"quiz server on http://{args.host}:{args.port}/ (database {args.db}); Ctrl-C stops it", flush=True)
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


def tokens(args: argparse.Namespace) -> int:
    """Print or write one token per roster student (and per --instructor)."""
    try:
        from quiz_bank.instructor.server.auth import AuthError, TokenSigner, load_secret, read_roster
    except ImportError:
        return _server_missing()
    if args.roster is None and not args.instructor:
        print("error: give --roster CSV and/or --instructor NAME", file=sys.stderr)
        return 2
    try:
        signer = TokenSigner(load_secret(args.secret_file, create=True))
        rows = [(r["student_id"], "student") for r in read_roster(args.roster)] if args.roster else []
        rows += [(name, "instructor") for name in args.instructor]
        issued = [(sid, role, signer.issue(sid, role, valid_days=args.valid_days)) for sid, role in rows]
    except AuthError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    fh = open(args.out, "w", newline="", encoding="utf-8") if args.out else sys.stdout
    try:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(["student_id", "role", "token", "login_path"])
        for sid, role, token in issued:
            # A fragment: the browser fills the form with it and never sends it to the server.
            writer.writerow([sid, role, token, f"/login#token={token}"])
    finally:
        if args.out:
            fh.close()
            args.out.chmod(0o600)
    if args.out:
        print(f"wrote {len(issued)} token(s) to {args.out} (mode 0600); secret in {args.secret_file}", file=sys.stderr)
    return 0


def revoke(args: argparse.Namespace) -> int:
    """Revoke every token issued until now to each id (the server refuses them at the next request)."""
    try:
        from quiz_bank.instructor.server.db import QuizDB
    except ImportError:
        return _server_missing()
    if not args.db.exists():
        print(f"error: {args.db} does not exist (the server's --db)", file=sys.stderr)
        return 2
    db = QuizDB(args.db)
    for sid in args.ids:
        db.revoke(sid)
    print(f"revoked every token issued so far to {len(args.ids)} id(s): {', '.join(args.ids)}; "
          "issue new ones with `ppo-course quiz tokens`")
    return 0


def export(args: argparse.Namespace) -> int:
    """Write the gradebook in the chosen layout."""
    try:
        from quiz_bank.instructor.server import gradebook
        from quiz_bank.instructor.server.auth import AuthError, read_roster
        from quiz_bank.instructor.server.db import QuizDB
    except ImportError:
        return _server_missing()
    from quiz_bank.loader import load_bank

    if not args.db.exists():
        print(f"error: {args.db} does not exist (the server's --db)", file=sys.stderr)
        return 2
    db = QuizDB(args.db)
    try:
        if args.roster:
            db.load_roster(read_roster(args.roster))
    except AuthError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    text = gradebook.render(load_bank(args.bank), db, args.format)
    atomic_write_text(args.out, text)
    print(f"wrote the quiz gradebook ({args.format}, {text.count(chr(10)) - 1} row(s)) to {args.out}")
    return 0
