"""A small LMS that follows LTI 1.3 closely enough to test the tool against it end to end.

It has its own RSA key and JWKS, an OIDC authorization endpoint (form_post of a
signed id_token), an OAuth 2 token endpoint that takes only a client assertion
signed by the registered tool key (RFC 7523, aud = the token URL, jti used once),
AGS line-item and score endpoints that check the bearer token's scopes, NRPS with
two pages, a deep-linking return endpoint that verifies the tool's JWT and adds
each returned ``ltiResourceLink`` to the course (with its line item, DL 2.0 §3.1),
and a course page (``/course/{user}``) whose links start launches the way an LMS
does, for a real browser.
Written from the specifications (LTI Core 1.3, Security Framework 1.0, AGS 2.0,
NRPS 2.0, DL 2.0), independently of ``lms.lti``: it imports only the claim
names' strings from nowhere and spells them out itself.
"""

from __future__ import annotations

import html
import json
import secrets
import time
from collections.abc import Callable
from urllib.parse import urlencode

import httpx

from fastapi import FastAPI, Form, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet, RSAKey

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
SCOPE_SCORE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
SCOPE_LINEITEM = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
SCOPE_NRPS = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"


class MiniLMS:
    """The platform's state and its FastAPI app (``self.app``), reachable at ``base_url``."""

    def __init__(self, base_url: str = "http://127.0.0.1:9100", client_id: str = "ppo-tool-1",
                 deployment_id: str = "dep-1") -> None:
        self.base_url, self.client_id, self.deployment_id = base_url, client_id, deployment_id
        self.key = RSAKey.generate_key(2048, auto_kid=True)
        self.tool_jwks: dict | None = None
        self.tool_jwks_url = ""  # when set (and tool_jwks is None), the tool's keys are fetched from it
        self.tool_login_url = self.tool_launch_url = ""
        self.users = {"u-ada": {"name": "Ada Lovelace", "email": "ada@example.edu", "sourcedid": "ada", "role": LEARNER},
                      "u-ben": {"name": "Ben Okafor", "email": "ben@example.edu", "sourcedid": "ben", "role": LEARNER},
                      "u-prof": {"name": "Prof Noether", "email": "noether@example.edu", "sourcedid": "noether",
                                 "role": INSTRUCTOR}}
        self.line_items: dict[str, dict] = {}
        self.scores: list[dict] = []
        self.tokens: dict[str, set[str]] = {}
        self.used_jti: set[str] = set()
        self.deep_link_results: list[dict] = []
        self.link_custom: dict[str, dict[str, str]] = {}
        self.fail_next_scores = 0
        self.links: dict[str, str] = {}  # resource link id -> title, shown on the course page
        self.issued: list[str] = []  # every id_token the authorization endpoint form-posted, in order
        self.rewrite_id_token: Callable[[str], str] | None = None  # a test's man in the middle (hostile launches)
        self.app = self._build()

    # ---- what a test uses to start launches and to craft hostile tokens ----
    def login_initiation(self, user: str, message: str = "resource", link: str = "link-quiz") -> str:
        """The URL the LMS sends the browser to when ``user`` opens the activity (third-party initiated login)."""
        hint = json.dumps({"message": message, "link": link})
        return f"{self.tool_login_url}?" + urlencode({"iss": self.base_url, "login_hint": user,
                                                      "target_link_uri": self.tool_launch_url,
                                                      "lti_message_hint": hint, "client_id": self.client_id})

    def id_token(self, user: str, nonce: str, message: str = "resource", link: str = "link-quiz",
                 key: RSAKey | None = None, **overrides) -> str:
        """A signed id_token for ``user`` (``overrides`` replace claims; None removes one)."""
        now = int(time.time())
        person = self.users[user]
        body = {"iss": self.base_url, "aud": self.client_id, "sub": user, "iat": now, "exp": now + 300,
                "nonce": nonce, "name": person["name"], "email": person["email"],
                LTI + "deployment_id": self.deployment_id, LTI + "version": "1.3.0",
                LTI + "roles": [person["role"]], LTI + "target_link_uri": self.tool_launch_url,
                LTI + "context": {"id": "course-1", "title": "RLHF 101"},
                LTI + "lis": {"person_sourcedid": person["sourcedid"]},
                "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint": {
                    "scope": [SCOPE_LINEITEM, SCOPE_SCORE], "lineitems": f"{self.base_url}/courses/1/lineitems"},
                "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice": {
                    "context_memberships_url": f"{self.base_url}/courses/1/memberships", "service_versions": ["2.0"]}}
        if message == "deeplink":
            body[LTI + "message_type"] = "LtiDeepLinkingRequest"
            body["https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"] = {
                "deep_link_return_url": f"{self.base_url}/deeplink/return", "accept_types": ["ltiResourceLink"],
                "accept_presentation_document_targets": ["iframe", "window"], "data": "opaque-123"}
        else:
            body[LTI + "message_type"] = "LtiResourceLinkRequest"
            body[LTI + "resource_link"] = {"id": link, "title": "PPO quiz"}
            if link in self.link_custom:  # the custom parameters a deep-linked item carries (DL 2.0 §3.1)
                body[LTI + "custom"] = dict(self.link_custom[link])
            item = self.line_items.get(link)
            if item:
                body["https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"]["lineitem"] = item["id"]
        for name, value in overrides.items():
            name = name.replace("__", "/")
            if value is None:
                body.pop(name, None)
            else:
                body[name] = value
        signer = key or self.key
        return jwt.encode({"alg": "RS256", "kid": signer.kid}, body, signer)

    def add_line_item(self, link: str, label: str, maximum: float, resource_id: str = "") -> dict:
        """A gradebook column bound to resource link ``link`` (as a deep-linked item would create)."""
        item_id = f"{self.base_url}/courses/1/lineitems/{len(self.line_items) + 1}"
        item = {"id": item_id, "label": label, "scoreMaximum": maximum, "resourceId": resource_id or link,
                "resourceLinkId": link}
        self.line_items[link] = item
        return item

    def tool_key_set(self) -> KeySet:
        """The tool's public keys: the registered JWKS, else fetched from the tool's JWKS URL."""
        if self.tool_jwks is not None:
            return KeySet.import_key_set(self.tool_jwks)
        if self.tool_jwks_url:
            return KeySet.import_key_set(httpx.get(self.tool_jwks_url, timeout=10.0).json())
        return KeySet.import_key_set({"keys": []})

    def add_deep_linked(self, item: dict) -> str:
        """Add one returned ``ltiResourceLink`` to the course: a link, its custom parameters, its line item."""
        link = f"dl-{len(self.links) + 1}"
        self.links[link] = str(item.get("title", link))
        self.link_custom[link] = {str(k): str(v) for k, v in (item.get("custom") or {}).items()}
        spec = item.get("lineItem")
        if isinstance(spec, dict):
            self.add_line_item(link, str(spec.get("label", self.links[link])), float(spec["scoreMaximum"]),
                               resource_id=str(spec.get("resourceId", "")))
        return link

    def course_page(self, user: str) -> str:
        """The course's page for ``user``: one link per activity; an instructor also gets "Add an activity"."""
        rows = "".join(f"<li><a id='{html.escape(link)}' href='{html.escape(self.login_initiation(user, link=link))}'>"
                       f"{html.escape(title)}</a></li>" for link, title in self.links.items())
        add = (f"<p><a id='add-activity' href='{html.escape(self.login_initiation(user, message='deeplink'))}'>"
               "Add an activity</a></p>" if self.users[user]["role"] == INSTRUCTOR else "")
        return (f"<!doctype html><html><head><title>RLHF 101</title></head><body><h1>RLHF 101</h1>"
                f"<ul>{rows}</ul>{add}</body></html>")

    # ---- the platform's endpoints ----
    def _build(self) -> FastAPI:
        app = FastAPI()

        @app.get("/course/{user}")
        def course(user: str) -> Response:
            if user not in self.users:
                return Response(status_code=404)
            return HTMLResponse(self.course_page(user))

        @app.get("/jwks")
        def jwks() -> JSONResponse:
            return JSONResponse({"keys": [self.key.as_dict(private=False)]})

        @app.get("/auth")
        def authorize(request: Request) -> Response:
            q = request.query_params
            problems = [name for name, want in (("scope", "openid"), ("response_type", "id_token"),
                                                ("response_mode", "form_post"), ("prompt", "none"),
                                                ("client_id", self.client_id), ("redirect_uri", self.tool_launch_url))
                        if q.get(name) != want]
            if problems or q.get("login_hint") not in self.users or not q.get("nonce") or not q.get("state"):
                return Response(f"bad authentication request: {problems}", status_code=400)
            hint = json.loads(q.get("lti_message_hint") or "{}")
            token = self.id_token(q["login_hint"], q["nonce"], hint.get("message", "resource"),
                                  hint.get("link", "link-quiz"))
            self.issued.append(token)
            if self.rewrite_id_token is not None:
                token = self.rewrite_id_token(token)
            fields = "".join(f"<input type='hidden' name='{n}' value='{v}'>" for n, v in
                             (("id_token", token), ("state", q["state"])))
            return HTMLResponse(f"<html><body onload='document.forms[0].submit()'><form method='post' "
                                f"action='{self.tool_launch_url}'>{fields}<button>go</button></form></body></html>")

        @app.post("/token")
        def token(grant_type: str = Form(...), client_assertion_type: str = Form(...),
                  client_assertion: str = Form(...), scope: str = Form("")) -> Response:
            if grant_type != "client_credentials" or not client_assertion_type.endswith("jwt-bearer"):
                return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)
            try:
                claims = jwt.decode(client_assertion, self.tool_key_set(), algorithms=["RS256"]).claims
            except (JoseError, ValueError, httpx.HTTPError):
                return JSONResponse({"error": "invalid_client"}, status_code=401)
            ok = (claims.get("iss") == claims.get("sub") == self.client_id and claims.get("aud") == f"{self.base_url}/token"
                  and claims.get("exp", 0) > time.time() and claims.get("jti") not in self.used_jti)
            if not ok:
                return JSONResponse({"error": "invalid_client"}, status_code=401)
            self.used_jti.add(claims["jti"])
            access = secrets.token_urlsafe(16)
            self.tokens[access] = set(scope.split())
            return JSONResponse({"access_token": access, "token_type": "Bearer", "expires_in": 3600, "scope": scope})

        def allowed(request: Request, scope: str) -> bool:
            auth = request.headers.get("authorization", "")
            return auth.startswith("Bearer ") and scope in self.tokens.get(auth[7:], set())

        @app.get("/courses/1/lineitems")
        def lineitems(request: Request) -> Response:
            if not allowed(request, SCOPE_LINEITEM):
                return Response(status_code=401)
            rid = request.query_params.get("resource_id")
            items = [i for i in self.line_items.values() if not rid or i["resourceId"] == rid]
            return JSONResponse(items, media_type="application/vnd.ims.lis.v2.lineitemcontainer+json")

        @app.post("/courses/1/lineitems")
        async def new_lineitem(request: Request) -> Response:
            if not allowed(request, SCOPE_LINEITEM):
                return Response(status_code=401)
            body = await request.json()
            item = self.add_line_item(f"tool-{body['resourceId']}", body["label"], body["scoreMaximum"], body["resourceId"])
            return JSONResponse(item, media_type="application/vnd.ims.lis.v2.lineitem+json")

        @app.post("/courses/1/lineitems/{n}/scores")
        async def score(n: int, request: Request) -> Response:
            if not allowed(request, SCOPE_SCORE):
                return Response(status_code=401)
            if request.headers.get("content-type") != "application/vnd.ims.lis.v1.score+json":
                return Response(status_code=415)
            if self.fail_next_scores > 0:
                self.fail_next_scores -= 1
                return Response(status_code=503)
            body = await request.json()
            item = next(i for i in self.line_items.values() if i["id"].endswith(f"/lineitems/{n}"))
            if not 0 <= body["scoreGiven"] <= body["scoreMaximum"] or body["userId"] not in self.users:
                return Response(status_code=400)
            self.scores.append({**body, "lineitem": item["id"]})
            return Response(status_code=200)

        @app.get("/courses/1/memberships")
        def memberships(request: Request) -> Response:
            if not allowed(request, SCOPE_NRPS):
                return Response(status_code=401)
            ids = sorted(self.users)
            page = int(request.query_params.get("page", "1"))
            chunk = ids[:2] if page == 1 else ids[2:]
            members = [{"user_id": u, "name": self.users[u]["name"], "email": self.users[u]["email"],
                        "lis_person_sourcedid": self.users[u]["sourcedid"], "status": "Active",
                        "roles": [self.users[u]["role"]]} for u in chunk]
            headers = {"Link": f'<{self.base_url}/courses/1/memberships?page=2>; rel="next"'} if page == 1 else {}
            return JSONResponse({"id": "m", "context": {"id": "course-1"}, "members": members}, headers=headers,
                                media_type="application/vnd.ims.lti-nrps.v2.membershipcontainer+json")

        @app.post("/deeplink/return")
        def deeplink_return(JWT: str = Form(...)) -> Response:
            try:
                claims = jwt.decode(JWT, self.tool_key_set(), algorithms=["RS256"]).claims
            except (JoseError, ValueError, httpx.HTTPError):
                return Response("bad signature", status_code=400)
            if claims.get("aud") != self.base_url or claims.get("iss") != self.client_id:
                return Response("wrong audience or issuer", status_code=400)
            if claims.get(LTI + "message_type") != "LtiDeepLinkingResponse":
                return Response("not a deep linking response", status_code=400)
            self.deep_link_results.append(claims)
            items = claims.get("https://purl.imsglobal.org/spec/lti-dl/claim/content_items") or []
            added = [self.add_deep_linked(i) for i in items if isinstance(i, dict) and i.get("type") == "ltiResourceLink"]
            return HTMLResponse(f"<html><body><p id='added'>Added to the course: {html.escape(', '.join(added))}.</p>"
                                "</body></html>")

        return app
