"""The LTI tool's state in one object, and its routes (FastAPI): JWKS, login, launch, deep linking.

``LtiTool(folder, base_url)`` keeps its files in one folder: ``platforms.json``
(registrations), ``tool_keys.json`` (the tool's private JWKS, mode 0600); once given the
quiz store (:meth:`LtiTool.use_store`) it imports them and keeps both there instead
(``grader.platforms.lti.stored``), so every machine behind the store has the same ones. Login states,
used nonces, the passback record, pending deep links and the students' line items are
tables of the quiz store (``grader.platforms.lti.tables``), shared by every server
process on every machine; the quiz server hands its engine to :meth:`LtiTool.use_store`.
A tool used without a quiz store keeps those tables in ``lti.sqlite`` in the folder.
:func:`lti_router` mounts ``/lti/...`` on the quiz server; the quiz server decides
what a valid resource-link launch opens (``on_launch``).
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from jinja2 import Environment
from sqlalchemy import Engine, delete, insert

from grader.platforms.lti import claims as C
from grader.platforms.lti import deep_linking, tables
from grader.platforms.lti.contexts import ContextStore
from grader.platforms.lti.launch import LaunchData, LaunchError, LaunchStore, PlatformKeys, login_redirect, validate_launch
from grader.platforms.lti.passback import Passback
from grader.platforms.lti.registry import Registry, is_loopback_url
from grader.platforms.lti.services import PlatformServices
from grader.platforms.lti.stored import StoreRegistry, StoreToolKeys, import_folder
from grader.platforms.lti.tool_keys import ToolKeys
from ppo_course.syllabus import STOPS

STATE_COOKIE = "ppo_lti_state"
_PAGES = Environment(autoescape=True)
_ERROR = _PAGES.from_string(
    "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Launch refused</title></head><body>"
    "<main><h1>This launch was refused</h1><p role='alert' id='lti-error'>{{ message }}</p>"
    "<p>Go back to your course and open the activity again. If this keeps happening, tell your instructor.</p>"
    "</main></body></html>")
_AUTOPOST = _PAGES.from_string(
    "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{{ title }}</title></head>"
    "<body onload='document.forms[0].submit()'><form method='post' action='{{ action }}'>"
    "{% for name, value in fields %}<input type='hidden' name='{{ name }}' value='{{ value }}'>{% endfor %}"
    "<noscript><button type='submit'>Continue</button></noscript></form></body></html>")
_PICKER = _PAGES.from_string(
    "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Add the PPO quiz</title></head><body><main>"
    "<h1>Add the PPO quiz to {{ course or 'your course' }}</h1><form method='post' action='{{ action }}'>"
    "<input type='hidden' name='ticket' value='{{ ticket }}'>"
    "{% if multiple %}<p>Tick one or more.</p>{% endif %}"
    "{% for value, label in choices %}<p><label><input type='{{ 'checkbox' if multiple else 'radio' }}' name='choice' "
    "value='{{ value }}'{% if loop.first %} checked{% endif %}> {{ label }}</label></p>{% endfor %}"
    "{% if not line_items %}<p id='no-line-items'>This course ignores line items from tools: no gradebook column "
    "is created, so quiz completions are not posted for what you add here.</p>{% endif %}"
    "<button type='submit' id='add'>Add to course</button></form></main></body></html>")


class LtiTool:
    """The tool's registrations, keys and stores under ``folder``; ``base_url`` is where the platform reaches it.

    Args:
        folder: a private folder (created 0700 when missing).
        base_url: the tool's public URL, the root of its host (``https://quiz.example.edu``; a trailing slash is dropped).
        http: the HTTP client for the platforms' JWKS and services (tests pass one bound to their LMS).

    Raises:
        ValueError: if ``base_url`` is not an http(s) URL of a host's root (see :func:`tool_base_url`).
    """

    def __init__(self, folder: Path | str, base_url: str, http: httpx.Client | None = None) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.base_url = tool_base_url(base_url)
        self.http = http or httpx.Client(timeout=10.0)
        self.registry: Registry | StoreRegistry = Registry(self.folder / "platforms.json")
        self._tool_keys: ToolKeys | StoreToolKeys | None = None
        self.platform_keys = PlatformKeys(self.http)
        self._engine: Engine | None = None
        self._store: LaunchStore | None = None
        self._passback: Passback | None = None
        self._contexts: ContextStore | None = None

    def use_store(self, engine: Engine) -> dict[str, int] | None:
        """Keep the tool's tables, registrations and keys in the quiz store ``engine`` (migrated to 0003 or later).

        The folder's former ``lti.sqlite``, ``platforms.json`` and ``tool_keys.json``, if any, are
        imported into it once (then renamed ``*.imported``; ``grader.platforms.lti.stored``). Returns the
        rows imported per table from ``lti.sqlite``, or None when there was no such file.
        """
        imported = tables.import_folder_file(self.folder, engine)
        import_folder(self.folder, engine)
        self._engine, self._store, self._passback, self._contexts = engine, None, None, None
        self.registry, self._tool_keys = StoreRegistry(engine), StoreToolKeys(engine)
        return imported

    @property
    def tool_keys(self) -> ToolKeys | StoreToolKeys:
        """The tool's signing keys: the quiz store's once :meth:`use_store` ran, else the folder's file."""
        if self._tool_keys is None:
            self._tool_keys = ToolKeys(self.folder / "tool_keys.json")
        return self._tool_keys

    @property
    def engine(self) -> Engine:
        """The engine holding the tool's tables: the quiz store's, or the folder's ``lti.sqlite``."""
        if self._engine is None:
            self._engine = tables.engine_of(self.folder / tables.FOLDER_FILE)
        return self._engine

    @property
    def store(self) -> LaunchStore:
        """The one-time login states and used nonces."""
        if self._store is None:
            self._store = LaunchStore(self.engine)
        return self._store

    @property
    def contexts(self) -> ContextStore:
        """The courses each registration serves, with their AGS and NRPS endpoints."""
        if self._contexts is None:
            self._contexts = ContextStore(self.engine)
        return self._contexts

    @property
    def passback(self) -> Passback:
        """The record of posted scores."""
        if self._passback is None:
            self._passback = Passback(self.engine)
        return self._passback

    @property
    def login_url(self) -> str:
        """The OIDC login initiation URL to give the platform."""
        return f"{self.base_url}/lti/login"

    @property
    def launch_url(self) -> str:
        """The redirect (launch) URL to give the platform."""
        return f"{self.base_url}/lti/launch"

    def services(self, launch: LaunchData) -> PlatformServices:
        """AGS/NRPS calls for the platform of ``launch``."""
        platform = self.registry.find(launch.issuer, launch.client_id)
        if platform is None:
            raise LaunchError(f"the platform {launch.issuer!r} is no longer registered")
        return PlatformServices(platform, self.tool_keys, self.http)

    def hold_launch(self, launch: LaunchData) -> str:
        """Keep a deep linking launch for the picker's answer; returns a one-time ticket."""
        ticket = secrets.token_urlsafe(24)
        with self.engine.connect().execution_options(**tables.WRITE) as conn, conn.begin():
            conn.execute(insert(tables.lti_pending_link).values(ticket=ticket, launch=launch.model_dump_json(),
                                                                created=time.time()))
        return ticket

    def take_launch(self, ticket: str) -> LaunchData:
        """The deep linking launch held under ``ticket`` (once, within 10 minutes)."""
        t = tables.lti_pending_link
        with self.engine.connect().execution_options(**tables.WRITE) as conn, conn.begin():
            row = conn.execute(delete(t).where(t.c.ticket == ticket).returning(t.c.launch, t.c.created)).first()
        if row is None or time.time() - row[1] > 600:
            raise LaunchError("this course picker expired or was already used: open it again from the course")
        return LaunchData.model_validate_json(row[0])


def lti_router(tool: LtiTool, on_launch: Callable[[Request, LaunchData], Response],
               stop_titles: dict[int, str] | None = None) -> APIRouter:
    """The ``/lti`` routes; ``on_launch`` answers a valid resource-link launch (the quiz server signs the user in)."""
    router = APIRouter(prefix="/lti")
    refused = _refused

    @router.get("/jwks")
    def jwks() -> JSONResponse:
        return JSONResponse(tool.tool_keys.public_jwks())

    @router.api_route("/login", methods=["GET", "POST"])
    async def login(request: Request) -> Response:
        params = dict(request.query_params)
        if request.method == "POST":
            params.update({k: str(v) for k, v in (await request.form()).items()})
        try:
            url, state = login_redirect(tool.registry, tool.store, params, tool.launch_url)
        except LaunchError as exc:
            return refused(str(exc))
        response = RedirectResponse(url, status_code=302)
        response.set_cookie(STATE_COOKIE, state, max_age=600, httponly=True, path="/lti",
                            **state_cookie_flags(tool.base_url))
        return response

    @router.post("/launch")
    def launch(request: Request, id_token: str = Form(""), state: str = Form("")) -> Response:
        try:
            data = validate_launch(tool.registry, tool.store, tool.platform_keys, id_token=id_token, state=state,
                                   state_cookie=request.cookies.get(STATE_COOKIE), launch_url=tool.launch_url)
        except LaunchError as exc:
            return refused(str(exc))
        if data.message_type == C.DEEP_LINKING_REQUEST:
            return _picker(tool, data, stop_titles or {})
        try:
            tool.contexts.admit(data)
        except LaunchError as exc:
            return refused(str(exc), 403)
        response = on_launch(request, data)
        response.delete_cookie(STATE_COOKIE, path="/lti", httponly=True, **state_cookie_flags(tool.base_url))
        return response

    @router.post("/deep-link")
    def deep_link(ticket: str = Form(""), choice: list[str] = Form([])) -> Response:
        return _deep_link_answer(tool, ticket, choice, stop_titles or {})

    return router


def _refused(message: str, status: int = 400) -> HTMLResponse:
    return HTMLResponse(_ERROR.render(message=message), status_code=status)


def _picker(tool: LtiTool, data: LaunchData, stop_titles: dict[int, str]) -> Response:
    """The instructor's picker for a deep linking request the tool can answer (else the refusal page)."""
    if not data.is_instructor:
        return _refused("only an instructor can add this activity to a course", 403)
    reason = deep_linking.refusal(data)
    if reason is not None:
        return _refused(reason)
    try:
        tool.contexts.admit(data)  # an instructor adding the quiz binds the course, as a launch does
    except LaunchError as exc:
        return _refused(str(exc), 403)
    choices = [("chapter", "The whole chapter quiz (stops 1-8)")] + [
        (f"stop{n}", f"Stop {n}: {stop_titles.get(n, '')}".rstrip(": ")) for n in STOPS]
    return HTMLResponse(_PICKER.render(course=data.context_title, action="/lti/deep-link",
                                       ticket=tool.hold_launch(data), choices=choices,
                                       multiple=data.accept_multiple, line_items=data.accept_lineitem is not False))


def _deep_link_answer(tool: LtiTool, ticket: str, choice: list[str], stop_titles: dict[int, str]) -> Response:
    """The page that form-posts the signed deep linking response with the chosen items to the platform."""
    try:
        data = tool.take_launch(ticket)
    except LaunchError as exc:
        return _refused(str(exc))
    unknown = [c for c in choice if c not in deep_linking.CHOICES]
    if unknown or not choice:
        return _refused(f"unknown choice {unknown[0]!r}" if unknown else "nothing was chosen: open the picker again")
    if len(choice) > 1 and not data.accept_multiple:
        return _refused("the course accepts one item at a time here: open the picker again and choose one")
    items = [deep_linking.content_item(tool.base_url, c, stop_titles, line_item=data.accept_lineitem is not False)
             for c in dict.fromkeys(choice)]
    token = deep_linking.response_jwt(tool.tool_keys, data, items)
    return HTMLResponse(_AUTOPOST.render(title="Returning to your course", action=data.deep_link_return_url,
                                         fields=[("JWT", token)]))


def tool_base_url(url: str) -> str:
    """``url`` without its trailing slash, checked to be ``http(s)://host[:port]``.

    The quiz server's pages link to ``/stop/N``, ``/instructor`` and ``/lti/...`` from the
    root of the host, so the tool cannot live under a path prefix; the URLs handed to
    the platform (login, launch, JWKS) are built from this one.

    Raises:
        ValueError: for another scheme, no host, a path, a query or a fragment.
    """
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"the tool's base URL {url!r} is not an http(s) URL with a host (https://quiz.example.edu)")
    if parts.path.rstrip("/") or parts.query or parts.fragment or parts.username or parts.password:
        raise ValueError(f"the tool's base URL {url!r} must be the root of its host, with no path, query or user "
                         "(the quiz's pages link from the root): serve it on its own host name or port")
    return f"{parts.scheme}://{parts.netloc}"


def state_cookie_flags(base_url: str) -> dict[str, Any]:
    """``secure`` and ``samesite`` of the login state cookie, for a tool reached at ``base_url``.

    The cookie is set when the browser comes to the login URL and must come back
    with the platform's form_post of the id_token, a cross-site POST: only a
    ``SameSite=None`` cookie rides it, and browsers keep ``SameSite=None`` only with
    ``Secure`` (RFC 6265bis §5.6.7, §8.8; LTI Security Framework 1.0 §5.1.1.2). So:
    ``Secure; SameSite=None`` over https and on a loopback host (a secure context
    even over http: W3C Secure Contexts §3.1). Over plain http elsewhere a browser
    would drop a ``Secure`` cookie, so the cookie is ``SameSite=Lax``, which only a
    platform on the same site as the tool gets back (``cross_site_launches`` says so).
    """
    if cross_site_launches(base_url):
        return {"secure": True, "samesite": "none"}
    return {"secure": False, "samesite": "lax"}


def cross_site_launches(base_url: str) -> bool:
    """True when a browser can complete a launch from a platform on another site (https, or a loopback host)."""
    return base_url.startswith("https://") or (base_url.startswith("http://") and is_loopback_url(base_url))


def launch_summary(data: LaunchData) -> str:
    """A one-line JSON of who launched what (for the server's log; no token, no key)."""
    return json.dumps({"iss": data.issuer, "sub": data.user_id, "type": data.message_type,
                       "instructor": data.is_instructor, "link": data.resource_link_id})
