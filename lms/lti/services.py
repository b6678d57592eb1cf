"""LTI Advantage services the tool calls: OAuth 2 tokens, Assignment and Grade Services, Names and Roles.

- Tokens: the client-credentials grant with a signed JWT client assertion
  (1EdTech Security Framework 1.0 §4.1; RFC 7523), cached per scope set until 30 s before expiry.
- AGS 2.0: line items (find by ``resourceId``/``tag`` or create) and scores
  (``POST {lineitem}/scores``, media type ``application/vnd.ims.lis.v1.score+json``).
- NRPS 2.0: the context's members, following ``Link: <...>; rel="next"`` pages.

Every call goes through one ``httpx.Client`` (a test passes one bound to its own platform).
"""

from __future__ import annotations

import secrets
import time
from datetime import datetime, timezone

import httpx
import pydantic

from lms.lti import claims as C
from lms.lti.registry import PlatformRegistration
from lms.lti.tool_keys import ToolKeys


class ServiceError(Exception):
    """A platform service call that failed; ``retryable`` says whether trying again may help (5xx, 429, network)."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


class LineItem(pydantic.BaseModel):
    """An AGS line item (a gradebook column): AGS 2.0 §3.2."""

    model_config = pydantic.ConfigDict(extra="ignore", populate_by_name=True)

    id: str = ""
    label: str
    score_maximum: float = pydantic.Field(alias="scoreMaximum", gt=0)
    resource_id: str = pydantic.Field("", alias="resourceId")
    tag: str = ""


class Member(pydantic.BaseModel):
    """One NRPS membership (NRPS 2.0 §3.6): the platform's user id, names, email and roles."""

    model_config = pydantic.ConfigDict(extra="ignore")

    user_id: str
    name: str = ""
    email: str = ""
    lis_person_sourcedid: str = ""
    status: str = "Active"
    roles: tuple[str, ...] = ()


class PlatformServices:
    """AGS and NRPS calls to one platform, signed with the tool's keys.

    Args:
        platform: the registration (token endpoint, client id).
        tool_keys: the tool's key pair (signs the client assertion).
        client: the HTTP client; a new one with a 10 s timeout when None.
    """

    def __init__(self, platform: PlatformRegistration, tool_keys: ToolKeys, client: httpx.Client | None = None) -> None:
        self.platform, self.tool_keys = platform, tool_keys
        self.client = client or httpx.Client(timeout=10.0)
        self._tokens: dict[str, tuple[float, str]] = {}

    def access_token(self, scopes: tuple[str, ...]) -> str:
        """A bearer token for ``scopes`` (cached until 30 s before it expires).

        Raises:
            ServiceError: if the token endpoint refuses or cannot be reached.
        """
        scope = " ".join(sorted(scopes))
        cached = self._tokens.get(scope)
        if cached and cached[0] > time.monotonic() + 30:
            return cached[1]
        assertion = self.tool_keys.sign({"iss": self.platform.client_id, "sub": self.platform.client_id,
                                         "aud": self.platform.assertion_audience, "jti": secrets.token_urlsafe(16)})
        data = {"grant_type": "client_credentials", "client_assertion_type": C.CLIENT_ASSERTION_TYPE,
                "client_assertion": assertion, "scope": scope}
        body = self._json(self._send("POST", self.platform.auth_token_url, data=data), "the token endpoint")
        token = body.get("access_token")
        if not isinstance(token, str) or not token:
            raise ServiceError("the token endpoint answered without an access_token", retryable=False)
        self._tokens[scope] = (time.monotonic() + float(body.get("expires_in", 3600)), token)
        return token

    def line_items(self, lineitems_url: str, *, resource_id: str = "") -> list[LineItem]:
        """The context's line items (AGS 2.0 §3.2.4), optionally only those with ``resource_id``."""
        params = {"resource_id": resource_id} if resource_id else None
        response = self._authorized("GET", lineitems_url, (C.SCOPE_LINEITEM,), params=params,
                                    headers={"Accept": C.MEDIA_LINEITEMS})
        items = self._json(response, "the line items endpoint")
        if not isinstance(items, list):
            raise ServiceError("the line items endpoint did not answer a list", retryable=False)
        parsed = [LineItem.model_validate(i) for i in items]
        return [i for i in parsed if not resource_id or i.resource_id == resource_id]

    def ensure_line_item(self, lineitems_url: str, item: LineItem) -> LineItem:
        """The line item with ``item.resource_id``, created when the platform has none (idempotent)."""
        for existing in self.line_items(lineitems_url, resource_id=item.resource_id):
            return existing
        response = self._authorized("POST", lineitems_url, (C.SCOPE_LINEITEM,),
                                    json=item.model_dump(by_alias=True, exclude={"id"}),
                                    headers={"Content-Type": C.MEDIA_LINEITEM, "Accept": C.MEDIA_LINEITEM})
        return LineItem.model_validate(self._json(response, "the line items endpoint"))

    def post_score(self, lineitem_url: str, user_id: str, score_given: float, score_maximum: float,
                   *, comment: str = "", timestamp: datetime | None = None) -> None:
        """Post one score (AGS 2.0 §3.4): ``activityProgress`` Completed, ``gradingProgress`` FullyGraded.

        Raises:
            ValueError: if the score is not within [0, score_maximum].
            ServiceError: if the platform refuses (``retryable`` for 5xx/429/network).
        """
        if not 0 <= score_given <= score_maximum:
            raise ValueError(f"score {score_given} outside [0, {score_maximum}] for user {user_id}")
        stamp = (timestamp or datetime.now(timezone.utc)).isoformat(timespec="milliseconds")
        score = {"userId": user_id, "scoreGiven": score_given, "scoreMaximum": score_maximum,
                 "activityProgress": "Completed", "gradingProgress": "FullyGraded", "timestamp": stamp}
        if comment:
            score["comment"] = comment
        base, _, query = lineitem_url.partition("?")
        url = base.rstrip("/") + "/scores" + (f"?{query}" if query else "")
        self._authorized("POST", url, (C.SCOPE_SCORE,), json=score, headers={"Content-Type": C.MEDIA_SCORE})

    def members(self, memberships_url: str) -> list[Member]:
        """Every member of the context (NRPS 2.0 §3), following the ``next`` links."""
        out: list[Member] = []
        url: str | None = memberships_url
        for _ in range(1000):
            if url is None:
                break
            response = self._authorized("GET", url, (C.SCOPE_NRPS,), headers={"Accept": C.MEDIA_MEMBERSHIP})
            body = self._json(response, "the memberships endpoint")
            out.extend(Member.model_validate(m) for m in body.get("members", []))
            url = response.links.get("next", {}).get("url")
        return out

    def _authorized(self, method: str, url: str, scopes: tuple[str, ...], **kwargs) -> httpx.Response:
        headers = dict(kwargs.pop("headers", {}))
        headers["Authorization"] = f"Bearer {self.access_token(scopes)}"
        return self._send(method, url, headers=headers, **kwargs)

    def _send(self, method: str, url: str, **kwargs) -> httpx.Response:
        try:
            response = self.client.request(method, url, **kwargs)
        except httpx.HTTPError as exc:
            raise ServiceError(f"{method} {url} failed: {exc}", retryable=True) from None
        if response.status_code >= 400:
            retryable = response.status_code >= 500 or response.status_code == 429
            raise ServiceError(f"{method} {url} answered {response.status_code}: {response.text[:200]}",
                               retryable=retryable)
        return response

    @staticmethod
    def _json(response: httpx.Response, what: str):
        try:
            return response.json()
        except ValueError:
            raise ServiceError(f"{what} did not answer JSON", retryable=False) from None
