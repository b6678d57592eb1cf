"""The quiz web application (FastAPI + Jinja2): sign-in, the eight stops, one question at a time.

``create_app(bank, db_path, secret, ...)`` builds the app; ``ppo-course quiz
serve`` runs it under uvicorn. Every page is plain HTML with forms, so
answering works without JavaScript; the interactives' script only makes the
sliders live. Jinja2 autoescaping is on for every template, so anything a
student typed is shown as text, never as markup.

Sign-in is a POST of the token from the server's own form (``GET /login``
only shows the form; a ``/login#token=…`` link fills it in the browser,
the fragment never reaches the server); cross-site POSTs are refused
(``quiz_bank.instructor.server.security``), and a sign-in that would replace another
signed-in identity asks for confirmation first. The session cookie holds the
token (expiring, revocable: ``quiz_bank.instructor.server.auth``), is HttpOnly,
SameSite=Strict, ``Secure`` over HTTPS (or behind a trusted proxy that says
so) and lasts ``session_hours``.

Routes (students): ``GET /`` (sign-in or the stops), ``GET|POST /login``,
``POST /logout``, and the stops ``GET /stop/{n}``, ``POST /stop/{n}/start``,
``POST /stop/{n}/answer`` (``quiz_bank.instructor.server.stop_routes``). Instructor: ``GET /instructor``
(``quiz_bank.instructor.server.instructor``). Interactives: ``/interactive/...`` and
``/api/...`` (``quiz_bank.instructor.server.interactive_routes``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from quiz_bank.loader import Bank
from quiz_bank.instructor.server.auth import AuthError, TokenSigner
from quiz_bank.instructor.server.db import QuizDB
from quiz_bank.instructor.server.limits import LTI_LAUNCH, BodySizeLimit
from quiz_bank.instructor.server.policy import PolicyFile, load_policy
from quiz_bank.instructor.server.quiz import QuizService
from quiz_bank.instructor.server import security, signin_routes
from quiz_bank.instructor.server.signin_routes import COOKIE, CookieSettings, NotSignedIn, identity, identity_or_none

HERE = Path(__file__).resolve().parent
MAX_BODY_BYTES = 16 * 1024
DEFAULT_SESSION_HOURS = 12.0


def templates() -> Jinja2Templates:
    """The package's templates, autoescaped (Starlette's Jinja2Templates escapes .html by default).

    Compiled once per process and not checked against the files again (``auto_reload`` off:
    no ``stat`` per page); restart the server after editing a template.
    """
    views = Jinja2Templates(directory=str(HERE / "templates"))
    views.env.auto_reload = False
    return views


def variant_key(secret: bytes) -> bytes:
    """The key the server seeds its variants with (``QuizService.variant_id``), derived from the token secret:
    HMAC-SHA256(secret, "ppo-course/quiz/variant-key"); 32 bytes. A TA re-grading offline derives the same."""
    import hashlib
    import hmac

    return hmac.new(secret, b"ppo-course/quiz/variant-key", hashlib.sha256).digest()


def create_app(bank: Bank, db_path: Path | str, secret: bytes, *, roster: list[dict[str, str]] | None = None,
               policy: PolicyFile | None = None, checker: Any = None, trust_proxy: bool = False,
               session_hours: float = DEFAULT_SESSION_HOURS, lti_tool: Any = None,
               passback_options: dict | None = None) -> FastAPI:
    """The quiz application.

    Args:
        bank: the instructor bank (keys installed). db_path: the store: an SQLite file or a ``postgresql://`` URL.
        secret: the token-signing secret (``auth.load_secret``). roster: rows to load (optional).
        policy: attempt policies (default: the course's file). checker: a SymbolicChecker (optional).
        trust_proxy: believe ``X-Forwarded-Proto``/``-Host`` (only behind your own reverse proxy).
        session_hours: lifetime of the session cookie.
        lti_tool: a ``lms.lti.tool.LtiTool``: the LMS launches the quiz (``/lti/...``) and receives the
            passed stops (``quiz_bank.instructor.server.lti_glue``); None: sign-in by token only.
        passback_options: keyword arguments of the passback worker
            (``lms.lti.outbox.PassbackWorker``: intervals and back-off in seconds).
    """
    app = FastAPI(title="PPO chapter quiz", docs_url=None, redoc_url=None, openapi_url=None)
    db = QuizDB(db_path)
    if roster:
        db.load_roster(roster)
        db.prune_roster(roster)  # a student taken off the roster loses access (their answers stay)
    service = QuizService(bank, db, policy or load_policy(), checker, variant_key=variant_key(secret))
    signer = TokenSigner(secret, revoked_before=db.revoked_before)
    views = templates()
    app.state.service, app.state.signer, app.state.views = service, signer, views
    app.add_middleware(BodySizeLimit, max_bytes=MAX_BODY_BYTES, routes=LTI_LAUNCH if lti_tool is not None else None)
    security.install(app, trust_proxy=trust_proxy)
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")

    def page(request: Request, name: str, status: int = 200, **context) -> HTMLResponse:
        return views.TemplateResponse(request, name, context, status_code=status)

    def error(request: Request, status: int, message: str, back: str = "/") -> HTMLResponse:
        return page(request, "error.html", status, message=message, back=back, me=identity_or_none(request))

    _install_error_pages(app, page, error)
    app.state.identity, app.state.identity_or_none, app.state.page, app.state.error = identity, identity_or_none, page, error
    app.state.cookie = cookie = CookieSettings(session_hours, trust_proxy)

    _install_lti(app, lti_tool, db, signer, cookie, bank, passback_options)

    from quiz_bank.instructor.server import instructor, interactive_routes, stop_routes

    app.include_router(signin_routes.router)
    app.include_router(stop_routes.router)
    app.include_router(instructor.router)
    app.include_router(interactive_routes.router)
    return app


def _install_lti(app: FastAPI, lti_tool: Any, db: QuizDB, signer: TokenSigner, cookie: CookieSettings, bank: Bank,
                 passback_options: dict | None) -> None:
    """The LTI routes, the passback queue's worker (started and stopped with the app) and the instructor
    page's LTI tables (``app.state.lti_courses``, ``app.state.lti_outbox``); empty tables without a tool."""
    if lti_tool is None:
        app.state.lti_courses = app.state.lti_outbox = lambda: []
        return
    from quiz_bank.instructor.server.lti_glue import install_lti

    def lti_sign_in(request: Request, student_id: str, role: str, html: str) -> Response:
        return cookie.set(request, HTMLResponse(html), signer.issue(student_id, role))

    app.state.post_progress, worker = install_lti(
        app, lti_tool, store=db.engine, sign_in=lti_sign_in, completed_stops=db.completed_stops,
        roster=lambda: db.roster() if db.has_roster() else [],
        stop_titles={n: stop.title for n, stop in bank.stops.items()}, worker_options=passback_options)
    app.state.passback_worker = worker
    app.router.on_startup.append(worker.wake)  # scores queued before a restart are posted without a new answer
    app.router.on_shutdown.append(worker.stop)
    app.state.lti_courses, app.state.lti_outbox = lti_tool.contexts.all, worker.outbox.rows


def _install_error_pages(app: FastAPI, page, error) -> None:
    """What the app answers when nobody is signed in (back to ``/``), when a token is refused (why, and the
    cookie dropped), and when a request is malformed (400, in JSON under ``/api/``); ``page``/``error`` render."""
    @app.exception_handler(NotSignedIn)
    async def _not_signed_in(request: Request, exc: NotSignedIn):
        return RedirectResponse("/", status_code=303)

    @app.exception_handler(AuthError)
    async def _bad_token(request: Request, exc: AuthError):
        response = page(request, "error.html", 401, message=str(exc), back="/", me=None)
        response.delete_cookie(COOKIE)
        return response

    @app.exception_handler(RequestValidationError)
    async def _malformed(request: Request, exc: RequestValidationError):
        problems = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg', '')}" for e in exc.errors())
        if request.url.path.startswith("/api/"):
            from fastapi.responses import JSONResponse

            return JSONResponse({"error": f"malformed request: {problems}"[:500]}, status_code=400)
        return error(request, 400, f"Malformed request: {problems}"[:500])
