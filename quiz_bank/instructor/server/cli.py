"""``ppo-course quiz serve | tokens | revoke | export | migrate | backup | restore``: the quiz server's verbs.

Run the server, issue and revoke sign-in tokens, export the gradebook, bring
the store's schema up to date, back it up and restore it. Defaults keep them
in step: the database ``quiz.sqlite`` and the secret ``quiz.secret`` in the
working directory (override with ``--db`` and ``--secret-file``). ``--db``
takes an SQLite file (the embedded default) or a ``postgresql://`` URL
(``quiz_bank.instructor.server.database``, over ``lms.engine``).
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from ppo_course.atomic_files import atomic_write_text

DEFAULT_DB = "quiz.sqlite"
DB_HELP = "SQLite file (default ./quiz.sqlite) or postgresql://user[:password]@host[:port]/database"
DEFAULT_SECRET = Path("quiz.secret")


def add_arguments(verbs) -> None:
    """Register ``serve``, ``tokens`` and ``export`` on the ``quiz`` sub-parsers."""
    serve = verbs.add_parser("serve", help="the quiz in a browser, keys on the server (FastAPI + uvicorn)")
    serve.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1: this machine only)")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--roster", type=Path, default=None, help="roster CSV (student_id[, name, section, sis_user_id, sis_login_id, canvas_id, email])")
    serve.add_argument("--db", default=DEFAULT_DB, help=DB_HELP)
    serve.add_argument("--workers", type=int, default=1, help="server processes behind the one database (default 1)")
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
    revoke.add_argument("--db", default=DEFAULT_DB, help="the server's " + DB_HELP)

    export = verbs.add_parser("export", help="TA: the quiz gradebook from the server's database (csv, canvas, moodle)")
    export.add_argument("--db", default=DEFAULT_DB, help=DB_HELP)
    export.add_argument("--format", choices=("csv", "canvas", "moodle"), default="csv")
    export.add_argument("--out", type=Path, required=True)
    export.add_argument("--roster", type=Path, default=None, help="roster CSV to merge in first (names, SIS ids, emails)")
    export.add_argument("--bank", type=Path, default=None)

    migrate = verbs.add_parser("migrate", help="TA: bring the server's database to the newest schema (serve does it too)")
    migrate.add_argument("--db", default=DEFAULT_DB, help=DB_HELP)
    backup = verbs.add_parser("backup", help="TA: the quiz store (SQLite or PostgreSQL) to one JSON file, atomically")
    backup.add_argument("file", type=Path)
    backup.add_argument("--db", default=DEFAULT_DB, help=DB_HELP)
    restore = verbs.add_parser("restore", help="TA: a backup file into an empty store (SQLite or PostgreSQL)")
    restore.add_argument("file", type=Path)
    restore.add_argument("--db", default=DEFAULT_DB, help=DB_HELP)
    restore.add_argument("--force", action="store_true", help="replace what the store holds")


def _server_missing() -> int:
    print("error: the quiz server is not part of this install (the student bundle has no keys); "
          "your TA runs it and gives you its address and a sign-in token", file=sys.stderr)
    return 2


def serve(args: argparse.Namespace) -> int:
    """Migrate the store, load the roster, then run ``--workers`` uvicorn processes until Ctrl-C."""
    try:
        from lms.engine import describe
        from quiz_bank.instructor.server import serving
        from quiz_bank.instructor.server.auth import AuthError, load_secret, read_roster
        from quiz_bank.instructor.server.policy import load_policy
    except ImportError:
        return _server_missing()
    from quiz_bank.loader import keys_installed, load_bank

    bank = load_bank(args.bank)
    if not (keys_installed() and bank.has_fixed_keys):
        print("error: the quiz server needs the answer keys (an instructor install)", file=sys.stderr)
        return 2
    if args.workers < 1:
        print("error: --workers must be at least 1", file=sys.stderr)
        return 2
    try:
        load_secret(args.secret_file, create=True)
        roster = read_roster(args.roster) if args.roster else None
        if args.policy:
            load_policy(args.policy)
    except (AuthError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.lti is not None and not _announce_lti(args):
        return 2
    config = serving.ServeConfig(
        db=str(args.db), secret_file=str(args.secret_file.resolve()), policy=str(args.policy) if args.policy else None,
        bank=str(args.bank) if args.bank else None, trust_proxy=args.trust_proxy, session_hours=args.session_hours,
        lti=str(args.lti) if args.lti else None, base_url=args.base_url or f"http://{args.host}:{args.port}")
    try:
        removed: list[str] = []
        before, after = serving.prepare(config, roster, removed)
    except Exception as exc:  # noqa: BLE001 - an unreachable or foreign database: say so, exit 2
        print(f"error: cannot open the quiz store {describe(args.db)}: {type(exc).__name__}: {exc}",
              file=sys.stderr)
        return 2
    if removed:
        print(f"note: {len(removed)} student(s) no longer on the roster, their sign-in tokens no longer work: "
              + ", ".join(removed[:20]) + (" ..." if len(removed) > 20 else ""), flush=True)
    schema = f"schema {after}" + (f", upgraded from {before}" if before != after else "")
    print(f"quiz server starting on http://{args.host}:{args.port}/ (database {describe(args.db)}, {schema}, "
          f"{args.workers} worker(s)); it answers once its app has loaded (a few seconds); Ctrl-C stops it",
          flush=True)
    serving.run(config, args.host, args.port, args.workers)
    return 0


def _announce_lti(args: argparse.Namespace) -> bool:
    """Load ``--lti``'s tool registry and print its endpoints (a warning where launches cannot keep their
    state cookie); False, with the error printed, when the install or the registry does not allow it."""
    try:
        from lms.lti.registry import RegistryError
        from lms.lti.tool import LtiTool, cross_site_launches
    except ImportError:
        print("error: --lti needs the instructor install (lms.lti)", file=sys.stderr)
        return False
    try:
        lti_tool = LtiTool(args.lti, args.base_url or f"http://{args.host}:{args.port}")
    except (RegistryError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return False
    print(f"LTI 1.3 tool: login {lti_tool.login_url}, launch {lti_tool.launch_url}, "
          f"{len(lti_tool.registry.platforms)} platform(s) in the folder to import; registrations and keys are "
          "kept in the quiz store (ppo-course lti --db STORE platforms)", flush=True)
    if not cross_site_launches(lti_tool.base_url):
        print(f"warning: {lti_tool.base_url} is plain http on a host that is not this machine: browsers keep the "
              "launch's state cookie only for a platform on the same site; serve the tool over https "
              "(docs/lti.md)", file=sys.stderr, flush=True)
    return True


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
    if (missing := _missing_store(args.db)) is not None:
        return missing
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

    if (missing := _missing_store(args.db)) is not None:
        return missing
    db = QuizDB(args.db)
    try:
        if args.roster:
            db.load_roster(read_roster(args.roster))
    except AuthError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    left_out: list[tuple[str, str]] = []
    text = gradebook.render(load_bank(args.bank), db, args.format, left_out=left_out)
    atomic_write_text(args.out, text)
    for sid, why in left_out:  # Canvas: a student the roster gives no Canvas identifier (lms.gradebook_csv)
        print(f"left out {sid!r}: {why}", file=sys.stderr)
    if left_out:
        print(f"warning: {len(left_out)} student(s) are not in {args.out} (listed above); add canvas_id, "
              "sis_user_id or sis_login_id to the roster (--roster) and export again", file=sys.stderr)
    header_rows = 2 if args.format == "canvas" else 1  # Canvas's "Points Possible" row is not a student
    students = max(text.count(chr(10)) - header_rows, 0)
    print(f"wrote the quiz gradebook ({args.format}, {students} student row(s)) to {args.out}")
    return 0


def _missing_store(target: str) -> int | None:
    """Exit code 2 with a message when ``--db`` names an SQLite file that does not exist (None otherwise)."""
    from lms.engine import is_url

    if not is_url(target) and not Path(target).exists():
        print(f"error: {target} does not exist (the server's --db)", file=sys.stderr)
        return 2
    return None


def migrate(args: argparse.Namespace) -> int:
    """Upgrade the store's schema to the newest Alembic revision (the server also does it at start)."""
    from lms.engine import describe, engine_for, is_url
    from quiz_bank.instructor.server import database

    if not is_url(args.db) and not Path(args.db).exists():
        print(f"note: {args.db} does not exist; creating it")
    before, after = database.migrate(engine_for(args.db))
    word = "already at" if before == after else f"upgraded from {before or 'an empty store'} to"
    print(f"quiz store {describe(args.db)}: {word} schema revision {after}")
    return 0


def backup(args: argparse.Namespace) -> int:
    """Write the whole store to FILE (one consistent snapshot, written atomically)."""
    from quiz_bank.instructor.server.backup import backup as write_backup
    from lms.engine import describe
    from quiz_bank.instructor.server.db import QuizDB

    if (missing := _missing_store(args.db)) is not None:
        return missing
    counts = write_backup(QuizDB(args.db), args.file)
    print(f"backed up {describe(args.db)} to {args.file}: {counts['answers']} answer(s), "
          f"{counts['stop_attempts']} attempt(s), {counts['students']} roster student(s)")
    return 0


def restore(args: argparse.Namespace) -> int:
    """Load FILE into an empty store (``--force``: replace what it holds)."""
    from quiz_bank.instructor.server.backup import BackupError
    from quiz_bank.instructor.server.backup import restore as load_backup
    from lms.engine import describe
    from quiz_bank.instructor.server.db import QuizDB

    try:
        counts = load_backup(QuizDB(args.db), args.file, force=args.force)
    except BackupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"restored {args.file} into {describe(args.db)}: {counts['answers']} answer(s), "
          f"{counts['stop_attempts']} attempt(s)")
    return 0
