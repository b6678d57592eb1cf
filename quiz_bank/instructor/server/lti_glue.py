"""The quiz server as an LTI 1.3 tool: a valid launch signs the student in; a passed stop is posted to the LMS.

``install_lti(app, tool, ...)`` mounts ``lms.lti.tool.lti_router`` and gives it
the quiz's answer to a resource-link launch:

- **who:** with a roster, the launch must match one roster row by SIS id
  (``lis.person_sourcedid`` = ``sis_user_id`` or ``student_id``) or email, else a page
  says the student is not on the course's roster (no identity is invented); without
  a roster, the student id is the SIS id, or the LMS's own user id when the LMS
  sends none. Staff roles (signed by the platform) open the instructor's pages.
- **session:** the same signed token and cookie as a sign-in, set on a small page
  that then opens the quiz (a same-site navigation, so the ``SameSite=Strict``
  cookie is sent).
- **grades:** the launch's AGS line item is remembered per student and resource
  link; when an answer closes an attempt, 1.0 for a stop link whose stop is passed, and
  passed stops / 8 for a chapter link, is *queued* in the quiz store and the server's
  passback worker posts it (``lms.lti.outbox``: durable, retried with
  back-off, posted once, never on the student's request).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, Response
from jinja2 import Environment
from sqlalchemy import Engine, select

from lms.lti import tables
from lms.lti.launch import LaunchData
from lms.lti.tool import LtiTool, launch_summary, lti_router

_PAGES = Environment(autoescape=True)
_SIGNED_IN = _PAGES.from_string(
    "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>PPO chapter quiz</title>"
    "<meta http-equiv='refresh' content='0;url={{ target }}'></head><body><main>"
    "<p id='lti-signed-in'>Signed in from {{ course or 'your course' }} as {{ who }}.</p>"
    "<p><a href='{{ target }}'>Open the quiz</a></p></main></body></html>")
_REFUSED = _PAGES.from_string(
    "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Launch refused</title></head><body><main>"
    "<h1>This launch was refused</h1><p role='alert' id='lti-error'>{{ message }}</p></main></body></html>")


def student_for(launch: LaunchData, roster: list[dict[str, str]]) -> str | None:
    """The quiz's student id for ``launch``: a roster match (SIS id, then email), or None when none matches.

    Without a roster (empty list): the SIS id, else :func:`platform_user` (the LMS's user id, ``sub``, with its
    platform): a bare ``sub`` such as "17" could be another student's SIS id, or the same number on another LMS.
    """
    if not roster:
        return launch.person_sourcedid or platform_user("lti", launch)
    sis, email = launch.person_sourcedid.strip().lower(), launch.email.strip().lower()
    for key, fields in ((sis, ("sis_user_id", "student_id")), (email, ("email",))):
        if not key:
            continue
        matches = {row["student_id"] for row in roster for f in fields if row.get(f, "").strip().lower() == key}
        if len(matches) == 1:
            return matches.pop()
    return None


def platform_user(kind: str, launch: LaunchData) -> str:
    """``"{kind}:{sub}@{the issuer's host}"``: an LMS user id that names its platform (LTI 1.3 §5.1.2: ``sub`` is
    unique within one issuer only), e.g. ``"lti:17@moodle.example.edu"``."""
    host = urlsplit(launch.issuer).hostname or launch.issuer
    return f"{kind}:{launch.user_id}@{host}"


class LinkStore:
    """Per student and resource link: the platform, the LMS user id, the line item and what it grades (table ``lti_link``)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def remember(self, student_id: str, launch: LaunchData) -> None:
        """Keep the launch's line item for ``student_id`` (a launch without AGS keeps nothing)."""
        if not launch.lineitem_url:
            return
        stop = int(launch.custom.get("stop", "0") or 0) if launch.custom.get("quiz") == "stop" else 0
        row = {"student_id": student_id, "issuer": launch.issuer, "client_id": launch.client_id,
               "link": launch.resource_link_id, "user_id": launch.user_id, "lineitem": launch.lineitem_url, "stop": stop}
        with self.engine.connect().execution_options(**tables.WRITE) as conn, conn.begin():
            tables.upsert(conn, tables.lti_link, row, ("student_id", "issuer", "link"))

    def links(self, student_id: str) -> list[tuple[str, str, str, str, int]]:
        """(issuer, client_id, user_id, lineitem, stop) for each remembered link (stop 0 = the chapter)."""
        t = tables.lti_link
        with self.engine.connect() as conn:
            rows = conn.execute(select(t.c.issuer, t.c.client_id, t.c.user_id, t.c.lineitem, t.c.stop)
                                .where(t.c.student_id == student_id)).all()
        return [tuple(r) for r in rows]


def install_lti(app: FastAPI, tool: LtiTool, *, store, sign_in, completed_stops, roster, stop_titles: dict[int, str],
                worker_options: dict | None = None):
    """Mount the LTI routes on the quiz ``app``; returns ``(post_progress, worker)``.

    ``post_progress(student_id)`` queues the student's scores (a few reads and at most one short write per
    link; nothing waits for the LMS) and wakes ``worker``, the process's
    ``lms.lti.outbox.PassbackWorker``, which posts them.

    Args:
        store: the quiz store's SQLAlchemy engine; the tool keeps its states, nonces, links and passback
            record there (``LtiTool.use_store``: one set of tables per course, shared by every server process).
        sign_in: ``(request, student_id, role, page_html) -> Response`` (sets the quiz's session cookie).
        completed_stops: ``student_id -> set[int]`` (the stops passed).
        roster: ``() -> list[dict]`` (the quiz's roster rows; empty when it has none).
        worker_options: keyword arguments of ``PassbackWorker`` (intervals and back-off, in seconds).
    """
    from lms.lti.outbox import PassbackWorker, ScoreOutbox
    from lms.lti.services import PlatformServices

    tool.use_store(store)
    links = LinkStore(tool.engine)
    outbox = ScoreOutbox(tool.engine)

    def services_for(issuer: str, client_id: str) -> PlatformServices | None:
        platform = tool.registry.find(issuer, client_id)
        return None if platform is None else PlatformServices(platform, tool.tool_keys, tool.http)

    worker = PassbackWorker(outbox, services_for, **(worker_options or {}))

    def on_launch(request: Request, launch: LaunchData) -> Response:
        student = platform_user("lti-instructor", launch) if launch.is_instructor else student_for(launch, roster())
        if student is None:
            return HTMLResponse(_REFUSED.render(message="You are not on this course's quiz roster: ask your TA to "
                                                        "add your SIS id or email."), status_code=403)
        role = "instructor" if launch.is_instructor else "student"
        links.remember(student, launch)
        stop = launch.custom.get("stop", "") if launch.custom.get("quiz") == "stop" else ""
        target = "/instructor" if launch.is_instructor else (f"/stop/{int(stop)}" if stop.isdigit() else "/")
        html = _SIGNED_IN.render(course=launch.context_title, who=student, target=target)
        print(f"lti launch: {launch_summary(launch)}", flush=True)
        return sign_in(request, student[:200], role, html)

    def post_progress(student_id: str) -> None:
        remembered = links.links(student_id)
        if not remembered:
            return
        done, queued = completed_stops(student_id), False
        for issuer, client_id, user_id, lineitem, stop in remembered:
            score = (1.0 if stop in done else 0.0) if stop else len(done) / 8
            if score == 0.0:
                continue  # nothing earned yet: the LMS keeps its own "not submitted"
            queued = outbox.enqueue(issuer, client_id, lineitem, user_id, score, 1.0) or queued
        if queued:
            worker.wake()

    app.include_router(lti_router(tool, on_launch, stop_titles))
    return post_progress, worker
