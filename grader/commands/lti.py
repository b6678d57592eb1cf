"""``ppo-course lti ...``: the LTI 1.3 tool's registrations, keys and grade passback (``lms.lti``).

Verbs: ``register`` (a platform, from flags or ``--config FILE``), ``platforms``, ``remove``,
``urls`` (what to paste into the LMS), ``jwks``, ``rotate-keys``, ``retire-keys``,
``courses`` / ``bind-context`` / ``unbind-context`` (the LMS courses the tool serves, with their
grade services' URLs), ``publish BATCH_DIR`` (a graded batch to the course's line items, at the
URLs its launches gave; writes ``BATCH_DIR/lti_publish_report.json``), ``post-grades BATCH_DIR``
(the same, with URLs that may be given by hand) and ``retry`` (scores left pending).
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
    verbs.add_parser("rotate-keys", help="a new signing key; the old one stays published until retired (with --db: "
                                          "until the tokens it signed have expired, 6 minutes)")
    ret = verbs.add_parser("retire-keys", help="stop publishing all but the newest keys")
    ret.add_argument("--keep", type=int, default=1)
    _course_arguments(verbs)
    for verb, help_text in (("publish", "post a graded batch's published scores to the course's line items (AGS), "
                                        "at the URLs the course's launches gave; once per batch"),
                            ("post-grades", "as publish, with the course's URLs optionally given by hand")):
        post = verbs.add_parser(verb, help=help_text)
        post.add_argument("batch", type=Path, metavar="BATCH_DIR")
        _course_selector(post)
        if verb == "post-grades":
            post.add_argument("--lineitems", default=None,
                              help="the course's AGS line items URL (default: from its launches, `lti courses`)")
            post.add_argument("--memberships", default=None, help="the course's NRPS memberships URL (default: stored)")
    verbs.add_parser("retry", help="list the scores the LMS has not acknowledged yet")


def _course_selector(parser: argparse.ArgumentParser, required: bool = False) -> None:
    parser.add_argument("--issuer", required=required, default=None, help="the platform (default: the only one bound)")
    parser.add_argument("--client-id", required=required, default=None)
    parser.add_argument("--context", required=required, default=None,
                        help="the LMS course's context id (default: the only course bound)")


def _course_arguments(verbs) -> None:
    verbs.add_parser("courses", help="the LMS courses the tool serves, with their line items and memberships URLs")
    bind = verbs.add_parser("bind-context", help="let one more LMS course launch this quiz (an administrator's choice)")
    _course_selector(bind, required=True)
    bind.add_argument("--title", default="")
    unbind = verbs.add_parser("unbind-context", help="stop serving an LMS course (its launches are refused)")
    _course_selector(unbind, required=True)


def run(args: argparse.Namespace) -> int:
    """Carry out one verb; exit 0, 1 when scores stay pending, 2 on a usage error."""
    from lms.lti.registry import PlatformRegistration, RegistryError
    from lms.lti.tool import LtiTool

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
    if args.verb in ("courses", "bind-context", "unbind-context"):
        return _courses(tool, args)
    if args.verb == "retry":
        pending = tool.passback.pending()
        for row in pending:
            print("\t".join(str(v) for v in row))
        print(f"{len(pending)} score(s) pending")
        return 1 if pending else 0
    return _post_grades(tool, args)


def _courses(tool, args: argparse.Namespace) -> int:
    """``courses``, ``bind-context``, ``unbind-context``."""
    if args.verb == "bind-context":
        if tool.registry.find(args.issuer, args.client_id) is None:
            print(f"error: no registration for {args.issuer} / {args.client_id} (ppo-course lti platforms)",
                  file=sys.stderr)
            return 2
        new = tool.contexts.bind(args.issuer, args.client_id, args.context, title=args.title)
        print(f"course {args.context} {'bound' if new else 'was already bound'} to {args.issuer} ({args.client_id})")
        return 0
    if args.verb == "unbind-context":
        removed = tool.contexts.unbind(args.issuer, args.client_id, args.context)
        print("unbound: its launches are refused from now on" if removed else "no such course")
        return 0 if removed else 2
    for c in tool.contexts.all():
        print(f"{c.issuer}\tclient {c.client_id}\tcourse {c.context_id} ({c.title or '-'})\tbound by {c.bound_by}\t"
              f"lineitems {c.lineitems or '-'}\tmemberships {c.memberships or '-'}")
    return 0


def _course_for(tool, args: argparse.Namespace):
    """The one stored course matching ``--issuer/--client-id/--context`` (those given); (course, error)."""
    wanted = {"issuer": args.issuer, "client_id": args.client_id, "context_id": args.context}
    found = [c for c in tool.contexts.all() if all(v is None or getattr(c, k) == v for k, v in wanted.items())]
    if len(found) == 1:
        return found[0], ""
    if not found:
        return None, ("no LMS course is bound to this tool with those options: an instructor's launch from the "
                      "course binds it (ppo-course lti courses lists them)")
    names = ", ".join(f"{c.context_id} ({c.issuer})" for c in found)
    return None, f"several LMS courses are bound ({names}): choose one with --context (and --issuer)"


def _post_grades(tool, args: argparse.Namespace) -> int:
    from lms.lti.services import PlatformServices

    course, error = _course_for(tool, args)
    lineitems = getattr(args, "lineitems", None) or (course.lineitems if course else "")
    memberships = getattr(args, "memberships", None) or (course.memberships if course else "")
    issuer, client_id = (course.issuer, course.client_id) if course else (args.issuer, args.client_id)
    if not (lineitems and memberships and issuer and client_id):
        error = error or ("the course has sent no line items or memberships URL yet (a launch from the course "
                          "with grade services stores them)")
        print(f"error: {error}", file=sys.stderr)
        return 2
    platform = tool.registry.find(issuer, client_id)
    if platform is None:
        print(f"error: no registration for {issuer} / {client_id} (ppo-course lti platforms)", file=sys.stderr)
        return 2
    gradebook = args.batch / "gradebook.csv"
    if not gradebook.is_file():
        print(f"error: {gradebook} not found: grade the batch first", file=sys.stderr)
        return 2
    services = PlatformServices(platform, tool.tool_keys, tool.http)
    return _publish(tool, gradebook, services, lineitems, memberships)


def _publish(tool, gradebook: Path, services, lineitems: str, memberships: str) -> int:
    """Post, write the report beside the gradebook, print the summary; exit 1 when scores stay pending."""
    from grader.platforms.lti_publish import publish_gradebook
    from lms.lti.services import ServiceError
    from grader.points import load_points
    from grader.records.gradebook import LTI_PUBLISH_REPORT
    from ppo_course.atomic_files import atomic_write_text

    maxima = {stem: ex.max_score for stem, ex in load_points().exercises.items()}
    try:
        out = publish_gradebook(gradebook, maxima, services, tool.passback, lineitems_url=lineitems,
                                memberships_url=memberships)
    except (ServiceError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    report = out.report()
    path = gradebook.parent / LTI_PUBLISH_REPORT
    atomic_write_text(path, json.dumps({"lineitems": lineitems, "memberships": memberships, "students": report},
                                       indent=2) + "\n")
    for warning in out.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for row in report:
        if row["outcome"] in ("skipped", "pending"):
            print(f"{row['outcome']}: {row['student_id']}: {row['why']}", file=sys.stderr)
    counts = {k: sum(1 for r in report if r["outcome"] == k) for k in ("posted", "unchanged", "pending", "skipped")}
    print(f"students: posted {counts['posted']}, unchanged {counts['unchanged']}, pending {counts['pending']}, "
          f"skipped {counts['skipped']}; scores: posted {out.count('posted')}, unchanged {out.count('unchanged')}, "
          f"pending {out.count('pending')}; report: {path}")
    return 1 if out.count("pending") else 0


def _use_quiz_store(tool, target: str) -> None:
    """Keep the tool's tables in the quiz store ``target`` (migrated first); say what a former lti.sqlite gave."""
    from lms.engine import describe, engine_for
    from quiz_bank.instructor.server import database

    engine = engine_for(target)
    database.migrate(engine)
    imported = tool.use_store(engine)
    if imported is not None:
        print(f"imported {tool.folder / 'lti.sqlite'} into {describe(target)}: "
              + ", ".join(f"{n} {name}" for name, n in imported.items())
              + f" (the file is now {tool.folder / 'lti.sqlite.imported'})", flush=True)
