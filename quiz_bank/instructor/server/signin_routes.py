"""Who is asking: the session cookie, sign-in and sign-out of the quiz server.

The session cookie (``COOKIE``) holds the signed token (``quiz_bank.instructor.server.auth``): HttpOnly,
SameSite=Strict, ``Secure`` over HTTPS (or behind a trusted proxy that says so), ``session_hours``
long. ``identity(request)`` reads it on every page: a missing cookie raises ``NotSignedIn`` (the app
redirects to ``/``), a bad, expired or revoked token or a student no longer on the roster raises
``AuthError`` (the app shows why and drops the cookie).

Routes: ``GET /`` (the sign-in form, or the student's stops), ``GET /login`` (the form only: a token
in the query string is ignored, so a link never signs anyone in), ``POST /login`` (a sign-in that
would replace another signed-in identity asks first), ``POST /logout``. Everything is reached
through ``request.app.state`` (``service``, ``signer``, ``page``, ``cookie``), set by
``quiz_bank.instructor.server.app.create_app``.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from quiz_bank.instructor.server import security
from quiz_bank.instructor.server.auth import AuthError, Identity

COOKIE = "ppo_quiz_token"

router = APIRouter()


class NotSignedIn(Exception):
    """No valid token with the request."""


@dataclass(frozen=True)
class CookieSettings:
    """How the session cookie is set: its lifetime (hours) and whether a proxy's ``X-Forwarded-Proto`` is believed."""

    session_hours: float
    trust_proxy: bool

    def set(self, request: Request, response: Response, token: str) -> Response:
        """Put ``token`` in ``response``'s session cookie (HttpOnly, SameSite=Strict, Secure over HTTPS)."""
        response.set_cookie(COOKIE, token, httponly=True, samesite="strict", max_age=int(self.session_hours * 3600),
                            secure=security.is_https(request, self.trust_proxy))
        return response


def verified(request: Request, token: str) -> Identity:
    """The identity ``token`` proves, for a student only while on the roster.

    Raises:
        AuthError: a bad, expired or revoked token, or a student not on the course's roster.
    """
    state = request.app.state
    who = state.signer.verify(token)
    if not who.is_instructor and not state.service.db.may_sign_in(who.student_id):
        raise AuthError(f"{who.student_id!r} is not on this course's roster; ask your TA")
    return who


def identity(request: Request) -> Identity:
    """The signed-in identity of ``request``'s session cookie.

    Raises:
        NotSignedIn: no cookie. AuthError: as ``verified``.
    """
    token = request.cookies.get(COOKIE)
    if not token:
        raise NotSignedIn
    return verified(request, token)


def identity_or_none(request: Request) -> Identity | None:
    """``identity(request)``, or None when nobody (valid) is signed in."""
    try:
        return identity(request)
    except (NotSignedIn, AuthError):
        return None


@router.get("/", response_class=HTMLResponse)
def home(request: Request):
    """The sign-in form, the student's stops, or (an instructor) the dashboard."""
    page = request.app.state.page
    who = identity_or_none(request)
    if who is None:
        return page(request, "login.html", me=None, message=None)
    if who.is_instructor:
        return RedirectResponse("/instructor", status_code=303)
    stops = request.app.state.service.progress(who.student_id)
    return page(request, "home.html", me=who, stops=stops, complete=all(s.passed for s in stops))


@router.get("/login")
def login_form(request: Request):
    """The sign-in form only: a token in the query string is ignored (links never sign anyone in)."""
    message = ("Sign-in links are not accepted: paste your token below and press Sign in."
               if "token" in request.query_params else None)
    return request.app.state.page(request, "login.html", me=identity_or_none(request), message=message)


@router.post("/login")
def login(request: Request, token: str = Form(""), confirm: str = Form("")):
    """Sign in with a pasted token; replacing another signed-in identity needs ``confirm=yes``."""
    page = request.app.state.page
    try:
        who = verified(request, token)
    except AuthError as exc:
        return page(request, "login.html", 401, me=None, message=str(exc))
    current = identity_or_none(request)
    if current is not None and current != who and confirm != "yes":
        # Never replace a signed-in identity silently: ask first.
        return page(request, "confirm_login.html", me=current, new=who, token=token.strip())
    response = RedirectResponse("/instructor" if who.is_instructor else "/", status_code=303)
    return request.app.state.cookie.set(request, response, token.strip())


@router.post("/logout")
def logout():
    """Drop the session cookie."""
    response = RedirectResponse("/", status_code=303)
    response.delete_cookie(COOKIE)
    return response
