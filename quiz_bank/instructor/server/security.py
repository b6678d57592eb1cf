"""HTTP hardening of the quiz server: cross-site POSTs refused, framing refused, the session cookie's flags.

- **Cross-site requests.** Every state-changing request (POST, PUT, PATCH,
  DELETE) must come from the server's own pages: a browser's
  ``Sec-Fetch-Site`` must be ``same-origin`` or ``none`` (typed by the user),
  and an ``Origin`` header, when sent, must be this server's own origin. A
  form on another site that posts ``/login`` (or ``/stop/1/answer``) is
  refused with 403 before any route runs (OWASP "Verifying Origin with
  Standard Headers"; Fetch Metadata, W3C). Clients that send neither header
  (curl, the test client) are not browsers and carry no victim's cookie.
- **Framing.** Every response carries ``X-Frame-Options: DENY`` and
  ``Content-Security-Policy: frame-ancestors 'none'`` (no clickjacking), plus
  ``X-Content-Type-Options: nosniff`` and ``Referrer-Policy: same-origin``.
- **HTTPS.** :func:`is_https` is true when the request came over HTTPS, or
  when the server is configured to trust its proxy (``--trust-proxy``) and the
  proxy's ``X-Forwarded-Proto`` says ``https``; the session cookie is then
  ``Secure``.
"""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import PlainTextResponse
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
SAME_SITE_VALUES = frozenset({"same-origin", "none"})
SECURITY_HEADERS = {
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}


def is_https(request: Request, trust_proxy: bool) -> bool:
    """True when the client reached this server over HTTPS (the proxy's word counts only when trusted)."""
    if request.url.scheme == "https":
        return True
    if trust_proxy:
        proto = request.headers.get("x-forwarded-proto", "").split(",")[0].strip().lower()
        return proto == "https"
    return False


def own_origin(request: Request, trust_proxy: bool) -> str:
    """``scheme://host[:port]`` of this server as the browser sees it."""
    scheme = "https" if is_https(request, trust_proxy) else request.url.scheme
    host = request.headers.get("host") or request.url.netloc
    if trust_proxy and request.headers.get("x-forwarded-host"):
        host = request.headers["x-forwarded-host"].split(",")[0].strip()
    return f"{scheme}://{host}".lower()


#: POSTs that come from the course platform by design (LTI 1.3's login initiation and form_post launch);
#: they carry their own proof instead (a signed id_token bound to a one-time state and the browser's cookie).
PLATFORM_POST_PATHS = frozenset({"/lti/login", "/lti/launch"})


def cross_site_reason(request: Request, trust_proxy: bool) -> str | None:
    """Why an unsafe request is refused as cross-site (None when it may proceed)."""
    if request.method not in UNSAFE_METHODS or request.url.path in PLATFORM_POST_PATHS:
        return None
    site = request.headers.get("sec-fetch-site")
    if site is not None and site.lower() not in SAME_SITE_VALUES:
        return f"a form on another site ({site}) tried to post here"
    origin = request.headers.get("origin")
    if origin is not None and origin.lower() != own_origin(request, trust_proxy):
        return "a form from another origin tried to post here"
    return None


class Hardening:
    """Pure ASGI middleware: the cross-site check before any route runs, and the security headers on every
    response (a header the route set itself is kept). No task or body stream of its own per request, unlike
    ``BaseHTTPMiddleware``: the request's body and the response pass through untouched.

    Args:
        app: the ASGI app it wraps. trust_proxy: as in :func:`is_https`.
    """

    def __init__(self, app: ASGIApp, trust_proxy: bool = False) -> None:
        self.app, self.trust_proxy = app, trust_proxy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        reason = cross_site_reason(Request(scope), self.trust_proxy)
        if reason is not None:
            response = PlainTextResponse(f"Refused: {reason}. Nothing was changed; sign in from the quiz's own page.",
                                         status_code=403, headers=SECURITY_HEADERS)
            await response(scope, receive, send)
            return

        async def send_hardened(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers.setdefault(name, value)
            await send(message)

        await self.app(scope, receive, send_hardened)


def install(app, *, trust_proxy: bool) -> None:
    """Add the cross-site check and the security headers to ``app`` (:class:`Hardening`)."""
    app.add_middleware(Hardening, trust_proxy=trust_proxy)
