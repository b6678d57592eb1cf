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
``POST /logout``, ``GET /stop/{n}``, ``POST /stop/{n}/start``,
``POST /stop/{n}/answer``. Instructor: ``GET /instructor``
(``quiz_bank.instructor.server.instructor``). Interactives: ``/interactive/...`` and
``/api/...`` (``quiz_bank.instructor.server.interactive_routes``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Form, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from quiz_bank.loader import Bank
from quiz_bank.instructor.server.auth import AuthError, Identity, TokenSigner
from quiz_bank.instructor.server.db import Conflict, QuizDB
from quiz_bank.instructor.server.limits import BodySizeLimit
from quiz_bank.instructor.server.policy import PolicyFile, load_policy
from quiz_bank.instructor.server.quiz import BadAnswer, QuizService
from quiz_bank.instructor.server import security

HERE = Path(__file__).resolve().parent
COOKIE = "ppo_quiz_token"
MAX_BODY_BYTES = 16 * 1024
DEFAULT_SESSION_HOURS = 12.0
_HINTS = {
    "single": "Choose one option.",
    "multi": "Choose every option that applies.",
    "true_false": "True or false?",
    "numeric": "A number: 0.2, 1/5, 2e-1 and 20% all work.",
    "ordering": "Type the letters first to last, e.g. c a b.",
}


class NotSignedIn(Exception):
    """No valid token with the request."""


def templates() -> Jinja2Templates:
    """The package's templates, autoescaped (Starlette's Jinja2Templates escapes .html by default).

    Compiled once per process and not checked against the files again (``auto_reload`` off:
    no ``stat`` per page); restart the server after editing a template.
    """
    views = Jinja2Templates(directory=str(HERE / "templates"))
    views.env.auto_reload = False
    return views


def create_app(bank: Bank, db_path: Path | str, secret: bytes, *, roster: list[dict[str, str]] | None = None,
               policy: PolicyFile | None = None, checker: Any = None, trust_proxy: bool = False,
               session_hours: float = DEFAULT_SESSION_HOURS, lti_tool: Any = None) -> FastAPI:
    """The quiz application.

    Args:
        bank: the instructor bank (keys installed). db_path: the store: an SQLite file or a ``postgresql://`` URL.
        secret: the token-signing secret (``auth.load_secret``). roster: rows to load (optional).
        policy: attempt policies (default: the course's file). checker: a SymbolicChecker (optional).
        trust_proxy: believe ``X-Forwarded-Proto``/``-Host`` (only behind your own reverse proxy).
        session_hours: lifetime of the session cookie.
        lti_tool: a ``grader.platforms.lti.tool.LtiTool``: the LMS launches the quiz (``/lti/...``) and receives the
            passed stops (``quiz_bank.instructor.server.lti_glue``); None: sign-in by token only.
    """
    app = FastAPI(title="PPO chapter quiz", docs_url=None, redoc_url=None, openapi_url=None)
    db = QuizDB(db_path)
    if roster:
        db.load_roster(roster)
        db.prune_roster(roster)  # a student taken off the roster loses access (their answers stay)
    service = QuizService(bank, db, policy or load_policy(), checker)
    signer = TokenSigner(secret, revoked_before=db.revoked_before)
    views = templates()
    app.state.service, app.state.signer, app.state.views = service, signer, views
    app.add_middleware(BodySizeLimit, max_bytes=MAX_BODY_BYTES)
    security.install(app, trust_proxy=trust_proxy)
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")

    def page(request: Request, name: str, status: int = 200, **context) -> HTMLResponse:
        return views.TemplateResponse(request, name, context, status_code=status)

    def error(request: Request, status: int, message: str, back: str = "/") -> HTMLResponse:
        return page(request, "error.html", status, message=message, back=back, me=_identity_or_none(request))

    def _identity_or_none(request: Request) -> Identity | None:
        try:
            return identity(request)
        except (NotSignedIn, AuthError):
            return None

    def identity(request: Request) -> Identity:
        token = request.cookies.get(COOKIE)
        if not token:
            raise NotSignedIn
        who = signer.verify(token)
        if not who.is_instructor and not db.may_sign_in(who.student_id):
            raise AuthError(f"{who.student_id!r} is not on this course's roster; ask your TA")
        return who

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

    app.state.identity = identity
    app.state.identity_or_none = _identity_or_none
    app.state.page = page
    app.state.error = error

    # ------------------------------------------------------------------ sign-in

    @app.get("/", response_class=HTMLResponse)
    def home(request: Request):
        who = _identity_or_none(request)
        if who is None:
            return page(request, "login.html", me=None, message=None)
        if who.is_instructor:
            return RedirectResponse("/instructor", status_code=303)
        stops = service.progress(who.student_id)
        return page(request, "home.html", me=who, stops=stops, complete=all(s.passed for s in stops))

    def _sign_in(request: Request, token: str, confirmed: bool) -> Response:
        try:
            who = signer.verify(token)
            if not who.is_instructor and not db.may_sign_in(who.student_id):
                raise AuthError(f"{who.student_id!r} is not on this course's roster; ask your TA")
        except AuthError as exc:
            return page(request, "login.html", 401, me=None, message=str(exc))
        current = _identity_or_none(request)
        if current is not None and current != who and not confirmed:
            # Never replace a signed-in identity silently (issue 20 item 9): ask first.
            return page(request, "confirm_login.html", me=current, new=who, token=token.strip())
        response = RedirectResponse("/instructor" if who.is_instructor else "/", status_code=303)
        response.set_cookie(COOKIE, token.strip(), httponly=True, samesite="strict",
                            max_age=int(session_hours * 3600), secure=security.is_https(request, trust_proxy))
        return response

    @app.get("/login")
    def login_form(request: Request):
        """The sign-in form only: a token in the query string is ignored (links never sign anyone in)."""
        message = ("Sign-in links are not accepted: paste your token below and press Sign in."
                   if "token" in request.query_params else None)
        return page(request, "login.html", me=_identity_or_none(request), message=message)

    @app.post("/login")
    def login(request: Request, token: str = Form(""), confirm: str = Form("")):
        return _sign_in(request, token, confirmed=confirm == "yes")

    @app.post("/logout")
    def logout():
        response = RedirectResponse("/", status_code=303)
        response.delete_cookie(COOKIE)
        return response

    # ------------------------------------------------------------------ stops

    def _stop_or_404(request: Request, n: int):
        if n not in bank.stops:
            return error(request, 404, f"there is no stop {n}; the chapter has stops 1–8")
        return None

    @app.get("/stop/{n}", response_class=HTMLResponse)
    def stop_page(request: Request, n: int):
        who = identity(request)
        if (missing := _stop_or_404(request, n)) is not None:
            return missing
        current = service.open_attempt(who.student_id, n)
        if current is not None:
            nxt = service.next_question(current)
            if nxt is not None:
                number, variant = nxt
                return page(request, "question.html", me=who, stop=n, title=bank.stops[n].title, attempt=current,
                            number=number, total=len(current.question_order), variant=variant,
                            hint=_HINTS.get(variant.question.type, "An expression in "
                                            + ", ".join(f"{k} ({v})" for k, v in variant.question.symbols.items())
                                            + "; use * and ** (or ^)." if variant.question.type == "symbolic" else ""),
                            message=None, typed="")
        attempts = service.db.attempts(who.student_id, n)
        last = attempts[-1] if attempts else None
        passed = any(a.passed for a in attempts)
        stop_policy = service.policy.for_stop(n)
        missed = (service.missed_claims(who.student_id, n, last.attempt)
                  if last and not passed and stop_policy.is_mastery else [])
        return page(request, "stop.html", me=who, stop=n, title=bank.stops[n].title,
                    n_questions=service.claims_per_attempt(n), attempts=attempts, last=last,
                    passed=passed, verdicts=stop_policy.shows_verdicts, missed=missed,
                    exhausted=[] if passed else service.exhausted_claims(who.student_id, n),
                    review=service.review(who.student_id, n, last.attempt) if last else [],
                    policy=service.policy.for_stop(n).describe(),
                    refusal=service.refusal(who.student_id, n, time.time()))

    @app.post("/stop/{n}/start")
    def start(request: Request, n: int):
        who = identity(request)
        if (missing := _stop_or_404(request, n)) is not None:
            return missing
        try:
            service.start(who.student_id, n)
        except Conflict as exc:
            return error(request, 409, f"A new attempt cannot start: {exc}.", back=f"/stop/{n}")
        return RedirectResponse(f"/stop/{n}", status_code=303)

    @app.post("/stop/{n}/answer", response_class=HTMLResponse)
    async def answer(request: Request, n: int):
        who = identity(request)
        if (missing := _stop_or_404(request, n)) is not None:
            return missing
        form = await request.form()
        for_student = str(form.get("student", who.student_id))
        if for_student != who.student_id:
            return error(request, 403, f"This answer form belongs to student {for_student!r}, but you are signed in "
                                       f"as {who.student_id!r}: nothing was recorded. Sign out and in with your own "
                                       "token.", back=f"/stop/{n}")
        try:
            attempt = int(str(form.get("attempt", "")))
        except ValueError:
            return error(request, 400, "The form's attempt number is not a number: nothing was recorded.",
                         back=f"/stop/{n}")
        question_id = str(form.get("question", ""))
        raw = [str(v) for v in form.getlist("answer")]
        raw_answer: str | list[str] = raw if len(raw) != 1 else raw[0]
        try:
            verdict = await _run_sync(service.answer, who.student_id, n, attempt, question_id, raw_answer)
        except Conflict as exc:
            return error(request, 409, f"Not recorded: {exc}.", back=f"/stop/{n}")
        except BadAnswer as exc:
            current = service.open_attempt(who.student_id, n)
            if current is None or current.attempt != attempt or question_id not in current.question_order:
                return error(request, 400, f"Not recorded: {exc}.", back=f"/stop/{n}")
            variant = service.variant(who.student_id, question_id, attempt)
            return page(request, "question.html", 400, me=who, stop=n, title=bank.stops[n].title, attempt=current,
                        number=current.question_order.index(question_id) + 1, total=len(current.question_order),
                        variant=variant, hint=_HINTS.get(variant.question.type, ""),
                        message=f"{exc}. Nothing was recorded; answer again.",
                        typed=raw_answer if isinstance(raw_answer, str) else "")
        response = page(request, "feedback.html", me=who, stop=n, verdict=verdict, title=bank.stops[n].title)
        post_progress = getattr(app.state, "post_progress", None)
        if post_progress is not None:  # LTI: a passed stop reaches the LMS's gradebook after this response
            from starlette.background import BackgroundTask

            response.background = BackgroundTask(post_progress, who.student_id)
        return response

    if lti_tool is not None:
        from quiz_bank.instructor.server.lti_glue import install_lti

        def lti_sign_in(request: Request, student_id: str, role: str, html: str) -> Response:
            response = HTMLResponse(html)
            response.set_cookie(COOKIE, signer.issue(student_id, role), httponly=True, samesite="strict",
                                max_age=int(session_hours * 3600), secure=security.is_https(request, trust_proxy))
            return response

        app.state.post_progress = install_lti(
            app, lti_tool, store=db.engine, sign_in=lti_sign_in, completed_stops=db.completed_stops, roster=lambda: db.roster() if db.has_roster() else [],
            stop_titles={n: stop.title for n, stop in bank.stops.items()})

    from quiz_bank.instructor.server import instructor, interactive_routes

    app.include_router(instructor.router)
    app.include_router(interactive_routes.router)
    return app


async def _run_sync(fn, *args):
    """Run a blocking call (SQLite, the symbolic checker) in the thread pool."""
    from starlette.concurrency import run_in_threadpool

    return await run_in_threadpool(fn, *args)
