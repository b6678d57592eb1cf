"""``ppo-course lti ...``: the LTI 1.3 tool's registrations, keys and grade passback (``grader.platforms.lti``).

Verbs: ``register`` (a platform, from flags or ``--config FILE``), ``platforms``, ``remove``,
``urls`` (what to paste into the LMS), ``jwks``, ``rotate-keys``, ``retire-keys``,
``post-grades BATCH_DIR`` (a graded batch to the LMS gradebook) and ``retry`` (scores left pending).
Registrations and keys live in the tool folder (``--dir``, default ``./lti`` or ``$PPO_COURSE_LTI_DIR``);
the passback record, login states and nonces in the quiz store named by ``--db`` (the quiz
server's ``--db``, also ``$PPO_COURSE_QUIZ_DB``; the folder's former ``lti.sqlite`` is imported
into it once), or in ``lti.sqlite`` in the folder when no ``--db`` is given.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

HELP = "LTI 1.3: register a platform (Canvas, Moodle...), the tool's keys and JWKS, post grades to the LMS"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``lti``."""
    parser.add_argument("--dir", type=Path, default=Path(os.environ.get("PPO_COURSE_LTI_DIR", "lti")),
                        help="the tool's private folder (registrations, keys, launch state; default ./lti)")
    parser.add_argument("--db", default=os.environ.get("PPO_COURSE_QUIZ_DB"), metavar="STORE",
                        help="the quiz store (SQLite file or postgresql:// URL) holding the passback record and launch "
                             "state, as the quiz server's --db; default: lti.sqlite in --dir")
    parser.add_argument("--base-url", default=os.environ.get("PPO_COURSE_BASE_URL", "http://127.0.0.1:8000"),
                        help="where the platform reaches the quiz server (https in production)")
    verbs = parser.add_subparsers(dest="verb", required=True)
    reg = verbs.add_parser("register", help="add or replace a platform registration")
    reg.add_argument("--config", type=Path, help="a JSON file with the registration's fields (see docs/lti.md)")
    for name in ("name", "issuer", "client-id", "auth-login-url", "auth-token-url", "jwks-url", "token-audience"):
        reg.add_argument(f"--{name}", default=None)
    reg.add_argument("--deployment-id", action="append", default=[], help="repeatable")
    verbs.add_parser("platforms", help="list the registered platforms")
    rm = verbs.add_parser("remove", help="remove a platform registration")
    rm.add_argument("--issuer", required=True)
    rm.add_argument("--client-id", required=True)
    verbs.add_parser("urls", help="the tool's URLs to enter in the LMS (login, launch, JWKS, deep linking)")
    verbs.add_parser("jwks", help="print the tool's public JWKS")
    verbs.add_parser("rotate-keys", help="a new signing key; the old one stays published until retired")
    ret = verbs.add_parser("retire-keys", help="stop publishing all but the newest keys")
    ret.add_argument("--keep", type=int, default=1)
    post = verbs.add_parser("post-grades", help="post a graded batch's scores to the LMS gradebook (AGS)")
    post.add_argument("batch", type=Path, metavar="BATCH_DIR")
    post.add_argument("--issuer", required=True)
    post.add_argument("--client-id", required=True)
    post.add_argument("--lineitems", required=True, help="the course's AGS line items URL (shown on an instructor launch)")
    post.add_argument("--memberships", required=True, help="the course's NRPS memberships URL")
    verbs.add_parser("retry", help="list the scores the LMS has not acknowledged yet")


def run(args: argparse.Namespace) -> int:
    """Carry out one verb; exit 0, 1 when scores stay pending, 2 on a usage error."""
    from grader.platforms.lti.registry import PlatformRegistration, RegistryError
    from grader.platforms.lti.tool import LtiTool

    try:
        tool = LtiTool(args.dir, args.base_url)
    except (RegistryError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.db:
        _use_quiz_store(tool, args.db)
    if args.verb == "register":
        fields = json.loads(args.config.read_text()) if args.config else {}
        for name in ("name", "issuer", "client_id", "auth_login_url", "auth_token_url", "jwks_url", "token_audience"):
            if getattr(args, name) is not None:
                fields[name] = getattr(args, name)
        if args.deployment_id:
            fields["deployment_ids"] = args.deployment_id
        try:
            registration = PlatformRegistration.model_validate(fields)
        except ValueError as exc:
            print(f"error: the registration is not valid:\n{exc}", file=sys.stderr)
            return 2
        tool.registry.add(registration)
        print(f"registered {registration.issuer} (client id {registration.client_id}) in {tool.registry.path}")
        return 0
    if args.verb == "platforms":
        for p in tool.registry.platforms:
            print(f"{p.name or '-'}\t{p.issuer}\tclient {p.client_id}\tdeployments {', '.join(p.deployment_ids)}")
        return 0
    if args.verb == "remove":
        removed = tool.registry.remove(args.issuer, args.client_id)
        print("removed" if removed else "no such registration")
        return 0 if removed else 2
    if args.verb == "urls":
        for label, url in (("OIDC login initiation URL", tool.login_url), ("Redirect / launch URL", tool.launch_url),
                           ("Public JWKS URL", f"{tool.base_url}/lti/jwks"),
                           ("Deep linking URL", tool.launch_url)):
            print(f"{label:28} {url}")
        return 0
    if args.verb == "jwks":
        print(json.dumps(tool.tool_keys.public_jwks(), indent=2))
        return 0
    if args.verb == "rotate-keys":
        print(f"new signing key {tool.tool_keys.rotate()}; published keys: {', '.join(tool.tool_keys.kids)}")
        return 0
    if args.verb == "retire-keys":
        print(f"retired: {', '.join(tool.tool_keys.retire(args.keep)) or 'none'}")
        return 0
    if args.verb == "retry":
        pending = tool.passback.pending()
        for row in pending:
            print("\t".join(str(v) for v in row))
        print(f"{len(pending)} score(s) pending")
        return 1 if pending else 0
    return _post_grades(tool, args)


def _post_grades(tool, args: argparse.Namespace) -> int:
    from grader.platforms.lti.publish import publish_gradebook
    from grader.platforms.lti.services import PlatformServices, ServiceError
    from grader.points import load_points

    platform = tool.registry.find(args.issuer, args.client_id)
    if platform is None:
        print(f"error: no registration for {args.issuer} / {args.client_id} (ppo-course lti platforms)", file=sys.stderr)
        return 2
    gradebook = args.batch / "gradebook.csv"
    if not gradebook.is_file():
        print(f"error: {gradebook} not found: grade the batch first", file=sys.stderr)
        return 2
    maxima = {stem: ex.max_score for stem, ex in load_points().exercises.items()}
    try:
        out = publish_gradebook(gradebook, maxima, PlatformServices(platform, tool.tool_keys, tool.http), tool.passback,
                                lineitems_url=args.lineitems, memberships_url=args.memberships)
    except (ServiceError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for label, ids in (("not in the LMS course (not posted)", out.unmatched),
                       ("matching several LMS users (not posted)", out.ambiguous),
                       ("not graded yet (not posted)", out.skipped)):
        if ids:
            print(f"warning: {len(ids)} student(s) {label}: {', '.join(ids)}", file=sys.stderr)
    print(f"posted {out.count('posted')}, unchanged {out.count('unchanged')}, pending {out.count('pending')}")
    return 1 if out.count("pending") else 0


def _use_quiz_store(tool, target: str) -> None:
    """Keep the tool's tables in the quiz store ``target`` (migrated first); say what a former lti.sqlite gave."""
    from quiz_bank.instructor.server import database

    engine = database.engine_for(target)
    database.migrate(engine)
    imported = tool.use_store(engine)
    if imported is not None:
        print(f"imported {tool.folder / 'lti.sqlite'} into {database.describe(target)}: "
              + ", ".join(f"{n} {name}" for name, n in imported.items())
              + f" (the file is now {tool.folder / 'lti.sqlite.imported'})", flush=True)
