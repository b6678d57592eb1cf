"""OIDC third-party login initiation and the LTI 1.3 launch (LTI Core 1.3 §5; 1EdTech Security Framework 1.0 §5.1).

The platform starts a launch at the tool's login URL (``iss``, ``login_hint``,
``target_link_uri``, optional ``lti_message_hint``, ``client_id``); the tool stores a
one-time ``state`` and ``nonce`` and redirects the browser to the platform's
authorization endpoint; the platform form-posts a signed ``id_token`` and the
``state`` back to the launch URL, where :func:`validate_launch` checks, in order:

1. ``state`` is one the tool issued, unused, and the same as the browser's state cookie;
2. the issuer and client id (``aud``; ``azp`` when ``aud`` lists several) are registered;
3. the RS256 signature, against the platform's JWKS (fetched, cached, refetched once for an unknown ``kid``);
4. ``exp``/``iat`` (60 s leeway), ``nonce`` = the stored one, used once;
5. ``deployment_id`` registered, ``message_type`` a supported one, ``version`` "1.3.0", ``sub`` present;
6. ``target_link_uri`` present (LTI Core 1.3 §5.3.4: required in every launch) and one of the tool's own
   launch URLs (:func:`check_target_link_uri`; also checked at the login initiation);
7. the message's own required claims (resource link id; deep-linking return URL).

Which course the launch comes from is checked next, by ``lms.lti.contexts``.

Anything else is a :class:`LaunchError` whose message is shown to the person on a
plain error page. Roles are read only from the signed LIS roles claim.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import httpx
import pydantic
from joserfc import jws, jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet
from sqlalchemy import Engine, delete, insert

from lms.lti import claims as C
from lms.lti import tables
from lms.lti.registry import PlatformRegistration, Registry

LEEWAY_S = 60
STATE_TTL_S = 600
#: How long a used nonce is kept (seconds): twice a state's lifetime, past which no state can carry it.
NONCE_KEEP_S = 2 * STATE_TTL_S


class LaunchError(Exception):
    """A login or launch the tool refuses; the message says why, in words for the person launching."""


class LaunchData(pydantic.BaseModel):
    """What a valid launch says, typed (LTI Core 1.3 §5.3–5.4, AGS 2.0 §3.1, NRPS 2.0 §3.6, DL 2.0 §4.4)."""

    model_config = pydantic.ConfigDict(frozen=True)

    issuer: str
    client_id: str
    deployment_id: str
    message_type: str
    user_id: str
    name: str = ""
    email: str = ""
    person_sourcedid: str = ""
    roles: tuple[str, ...] = ()
    context_id: str = ""
    context_title: str = ""
    resource_link_id: str = ""
    target_link_uri: str = ""
    custom: dict[str, str] = {}
    lineitems_url: str = ""
    lineitem_url: str = ""
    ags_scopes: tuple[str, ...] = ()
    memberships_url: str = ""
    deep_link_return_url: str = ""
    deep_link_data: str = ""
    accept_types: tuple[str, ...] = ()
    accept_targets: tuple[str, ...] = ()
    accept_multiple: bool = False
    accept_lineitem: bool | None = None

    @property
    def is_instructor(self) -> bool:
        """True when a staff role (instructor, TA, content developer) is among the signed roles."""
        return any(role in C.STAFF_ROLES for role in self.roles)


class PlatformKeys:
    """The platforms' public JWKS, fetched over HTTP and cached (refetched once for an unknown ``kid``)."""

    def __init__(self, client: httpx.Client | None = None, ttl_s: float = 3600.0) -> None:
        self.client = client or httpx.Client(timeout=10.0)
        self.ttl_s = ttl_s
        self._cache: dict[str, tuple[float, KeySet]] = {}
        self._lock = threading.Lock()

    def key_set(self, platform: PlatformRegistration, kid: str | None) -> KeySet:
        """The platform's key set, holding ``kid`` if the platform publishes it.

        Raises:
            LaunchError: if the JWKS cannot be fetched or parsed.
        """
        with self._lock:
            cached = self._cache.get(platform.jwks_url)
        if cached and time.monotonic() - cached[0] < self.ttl_s and _has_kid(cached[1], kid):
            return cached[1]
        try:
            response = self.client.get(platform.jwks_url)
            response.raise_for_status()
            keys = KeySet.import_key_set(response.json())
        except (httpx.HTTPError, ValueError, JoseError) as exc:
            raise LaunchError(f"the platform's public keys could not be fetched from {platform.jwks_url} ({exc})") from None
        with self._lock:
            self._cache[platform.jwks_url] = (time.monotonic(), keys)
        return keys


def _has_kid(keys: KeySet, kid: str | None) -> bool:
    return kid is None or any(k.kid == kid for k in keys.keys)


class LaunchStore:
    """One-time login states and nonces, in the quiz store's tables, shared by every server process on any machine.

    A state is issued by :meth:`issue` and consumed by :meth:`consume` exactly once
    (``DELETE … RETURNING``: a replayed launch finds it gone); both expire after
    ``STATE_TTL_S`` seconds. A nonce is marked used by one ``INSERT`` into a table
    whose primary key is the nonce, so of two processes accepting the same id_token
    exactly one succeeds (no read-then-write).

    Args:
        target: the quiz store's engine, or an SQLite file path (``lms.lti.tables.engine_of``).
    """

    def __init__(self, target: Engine | Path | str) -> None:
        self.engine = tables.engine_of(target)

    def issue(self, platform: PlatformRegistration) -> tuple[str, str]:
        """A fresh (state, nonce) pair for a login with ``platform``."""
        state, nonce = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        now = time.time()
        with self.engine.connect().execution_options(**tables.WRITE) as conn, conn.begin():
            conn.execute(delete(tables.lti_state).where(tables.lti_state.c.created < now - STATE_TTL_S))
            conn.execute(insert(tables.lti_state).values(state=state, nonce=nonce, issuer=platform.issuer,
                                                         client_id=platform.client_id, created=now))
        return state, nonce

    def consume(self, state: str) -> tuple[str, str, str]:
        """(nonce, issuer, client_id) of ``state``, which is deleted; LaunchError when unknown, used or expired."""
        t = tables.lti_state
        with self.engine.connect().execution_options(**tables.WRITE) as conn, conn.begin():
            row = conn.execute(delete(t).where(t.c.state == state)
                               .returning(t.c.nonce, t.c.issuer, t.c.client_id, t.c.created)).first()
        if row is None:
            raise LaunchError("this launch's state is unknown or was already used: start the launch again from the course")
        if time.time() - row[3] > STATE_TTL_S:
            raise LaunchError("this launch took too long to complete: start it again from the course")
        return row[0], row[1], row[2]

    def use_nonce(self, nonce: str) -> None:
        """Record ``nonce`` as used; LaunchError if it already was (a replayed id_token), by this or any process.

        Used nonces older than ``NONCE_KEEP_S`` are deleted: a nonce is accepted only beside the login state that
        issued it, which lives ``STATE_TTL_S`` and is consumed once, so an older nonce can never be offered again.
        """
        now = time.time()
        with self.engine.connect().execution_options(**tables.WRITE) as conn, conn.begin():
            conn.execute(delete(tables.lti_nonce_used).where(tables.lti_nonce_used.c.used < now - NONCE_KEEP_S))
            fresh = tables.insert_or_keep(conn, tables.lti_nonce_used, {"nonce": nonce, "used": now})
        if not fresh:
            raise LaunchError("this launch was already used (replayed nonce)")


def login_redirect(registry: Registry, store: LaunchStore, params: dict[str, str], launch_url: str) -> tuple[str, str]:
    """The OIDC authentication request for a third-party-initiated login (Security Framework §5.1.1.1–5.1.1.2).

    Args:
        params: the login initiation's parameters (``iss``, ``login_hint``, ``target_link_uri``, ...).
        launch_url: the tool's launch URL (the ``redirect_uri``).

    Returns:
        (the platform's authorization URL with the request's query, the state to set in the browser's cookie).

    Raises:
        LaunchError: for a missing parameter or an unregistered issuer/client.
    """
    for name in ("iss", "login_hint", "target_link_uri"):
        if not params.get(name):
            raise LaunchError(f"the login request lacks '{name}'")
    check_target_link_uri(params["target_link_uri"], launch_url)
    platform = registry.find(params["iss"], params.get("client_id") or None)
    if platform is None:
        raise LaunchError(f"the platform {params['iss']!r} is not registered with this tool"
                          + (f" for client id {params['client_id']!r}" if params.get("client_id") else ""))
    state, nonce = store.issue(platform)
    query = {"scope": "openid", "response_type": "id_token", "response_mode": "form_post", "prompt": "none",
             "client_id": platform.client_id, "redirect_uri": launch_url, "login_hint": params["login_hint"],
             "state": state, "nonce": nonce}
    if params.get("lti_message_hint"):
        query["lti_message_hint"] = params["lti_message_hint"]
    return f"{platform.auth_login_url}?{urlencode(query)}", state


def check_target_link_uri(uri: object, launch_url: str) -> None:
    """Refuse a ``target_link_uri`` that is not the tool's own launch URL (LTI Core 1.3 §5.3.4).

    The platform names the resource the launch is for; a launch for another tool's URL
    (``https://evil.example/phish``) must not sign anyone in here. Scheme, host, port and
    path must equal ``launch_url``'s (a query string is allowed: nothing here redirects by it).

    Raises:
        LaunchError: when ``uri`` is missing, not a string, or not the tool's launch URL.
    """
    if not isinstance(uri, str) or not uri:
        raise LaunchError("the launch has no target_link_uri (LTI 1.3 requires one): the platform must name "
                          "the tool URL it launches")
    try:
        got = urlsplit(uri)
        same = _origin_and_path(got) == _origin_and_path(urlsplit(launch_url))
    except ValueError:  # a port that is not a number
        same = False
    if not same or got.username or got.password or got.fragment:
        raise LaunchError(f"the launch is for {uri[:200]!r}, which is not this tool (its launch URL is {launch_url})")


def _origin_and_path(url) -> tuple[str, str, int | None, str]:
    """(scheme, host, port with the scheme's default filled in, path) of a split URL, lower-cased where case-free."""
    scheme = url.scheme.lower()
    return scheme, (url.hostname or "").lower(), url.port or {"https": 443, "http": 80}.get(scheme), url.path


def validate_launch(registry: Registry, store: LaunchStore, keys: PlatformKeys, *, id_token: str, state: str,
                    state_cookie: str | None, launch_url: str, now: float | None = None) -> LaunchData:
    """Validate one launch (the steps in the module docstring) and return what it says.

    Args:
        launch_url: the tool's own launch URL; the launch's ``target_link_uri`` must be it.

    Raises:
        LaunchError: the first check that fails, in words.
    """
    if not id_token or not state:
        raise LaunchError("the launch carries no id_token or no state")
    if not state_cookie or not secrets.compare_digest(state, state_cookie):
        raise LaunchError("this launch does not belong to this browser (state cookie missing or different); "
                          "start it again from the course")
    nonce, issuer, client_id = store.consume(state)
    header, unverified = _peek(id_token)
    platform = _platform_for(registry, unverified, issuer, client_id)
    if header.get("alg") != "RS256":
        raise LaunchError(f"the id_token is not signed with RS256 (alg {header.get('alg')!r})")
    key_set = keys.key_set(platform, header.get("kid"))
    try:
        token = jwt.decode(id_token, key_set, algorithms=["RS256"])
    except JoseError as exc:
        raise LaunchError(f"the id_token's signature does not verify with the platform's keys ({exc.error})") from None
    body = token.claims
    _check_times(body, now if now is not None else time.time())
    if body.get("nonce") != nonce:
        raise LaunchError("the id_token's nonce is not the one this login issued")
    store.use_nonce(nonce)
    data = _launch_data(platform, body)
    check_target_link_uri(body.get(C.TARGET_LINK_URI), launch_url)
    return data


def _peek(id_token: str) -> tuple[dict, dict]:
    try:
        compact = jws.extract_compact(id_token.encode())
        return dict(compact.protected), json.loads(compact.payload)
    except (JoseError, ValueError, TypeError):
        raise LaunchError("the id_token is not a compact JWS") from None


def _platform_for(registry: Registry, body: dict, issuer: str, client_id: str) -> PlatformRegistration:
    aud = body.get("aud")
    auds = [aud] if isinstance(aud, str) else list(aud) if isinstance(aud, list) else []
    if body.get("iss") != issuer:
        raise LaunchError(f"the id_token's issuer {body.get('iss')!r} is not the platform that started this login")
    if client_id not in auds:
        raise LaunchError(f"the id_token is not addressed to this tool (aud {aud!r}, expected {client_id!r})")
    if len(auds) > 1 and body.get("azp") != client_id:
        raise LaunchError("the id_token names several audiences but its azp is not this tool")
    platform = registry.find(issuer, client_id)
    if platform is None:
        raise LaunchError(f"the platform {issuer!r} with client id {client_id!r} is not registered with this tool")
    return platform


def _check_times(body: dict, now: float) -> None:
    exp, iat = body.get("exp"), body.get("iat")
    if not isinstance(exp, (int, float)) or not isinstance(iat, (int, float)):
        raise LaunchError("the id_token lacks exp or iat")
    if now > exp + LEEWAY_S:
        raise LaunchError("the id_token has expired")
    if iat > now + LEEWAY_S:
        raise LaunchError("the id_token is issued in the future")


def _launch_data(platform: PlatformRegistration, body: dict) -> LaunchData:
    deployment = body.get(C.DEPLOYMENT_ID)
    if deployment not in platform.deployment_ids:
        raise LaunchError(f"deployment {deployment!r} is not registered for this platform")
    message_type = body.get(C.MESSAGE_TYPE)
    if message_type not in C.MESSAGE_TYPES:
        raise LaunchError(f"unsupported LTI message type {message_type!r}")
    if body.get(C.VERSION) != C.LTI_VERSION:
        raise LaunchError(f"unsupported LTI version {body.get(C.VERSION)!r} (1.3.0 expected)")
    if not isinstance(body.get("sub"), str) or not body["sub"]:
        raise LaunchError("anonymous launches are not supported: the id_token has no sub")
    roles = body.get(C.ROLES, [])
    if not isinstance(roles, list) or not all(isinstance(r, str) for r in roles):
        raise LaunchError("the roles claim is not a list of role URIs")
    link, ags, nrps, dl = (_mapping(body, k) for k in (C.RESOURCE_LINK, C.AGS_ENDPOINT, C.NRPS_SERVICE, C.DL_SETTINGS))
    if message_type == C.RESOURCE_LINK_REQUEST and not link.get("id"):
        raise LaunchError("a resource link launch without a resource link id")
    if message_type == C.DEEP_LINKING_REQUEST and not dl.get("deep_link_return_url"):
        raise LaunchError("a deep linking request without a deep_link_return_url")
    context, lis = _mapping(body, C.CONTEXT), _mapping(body, C.LIS)
    custom = {str(k): str(v) for k, v in _mapping(body, C.CUSTOM).items()}
    return LaunchData(
        issuer=platform.issuer, client_id=platform.client_id, deployment_id=deployment, message_type=message_type,
        user_id=body["sub"], name=str(body.get("name", "")), email=str(body.get("email", "")),
        person_sourcedid=str(lis.get("person_sourcedid", "")), roles=tuple(roles),
        context_id=str(context.get("id", "")), context_title=str(context.get("title", "")),
        resource_link_id=str(link.get("id", "")), target_link_uri=str(body.get(C.TARGET_LINK_URI, "")),
        custom=custom, lineitems_url=str(ags.get("lineitems", "")), lineitem_url=str(ags.get("lineitem", "")),
        ags_scopes=tuple(str(s) for s in ags.get("scope", []) if isinstance(s, str)),
        memberships_url=str(nrps.get("context_memberships_url", "")),
        **_deep_linking_settings(dl))


def _deep_linking_settings(dl: dict) -> dict:
    """The ``deep_linking_settings`` claim's fields the tool honours (DL 2.0 §4.4.1), typed."""
    def strings(name: str) -> tuple[str, ...]:
        value = dl.get(name, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise LaunchError(f"deep_linking_settings.{name} is not a list of strings")
        return tuple(value)

    lineitem = dl.get("accept_lineitem")
    return {"deep_link_return_url": str(dl.get("deep_link_return_url", "")), "deep_link_data": str(dl.get("data", "")),
            "accept_types": strings("accept_types"), "accept_targets": strings("accept_presentation_document_targets"),
            "accept_multiple": dl.get("accept_multiple") is True,
            "accept_lineitem": lineitem if isinstance(lineitem, bool) else None}


def _mapping(body: dict, claim: str) -> dict:
    value = body.get(claim, {})
    if not isinstance(value, dict):
        raise LaunchError(f"the claim {claim} is not an object")
    return value
