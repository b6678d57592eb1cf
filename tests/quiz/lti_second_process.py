"""A second quiz server process for the LTI store tests: reads a JSON request on stdin, prints the reply as JSON.

The request names the store (an SQLite path or a PostgreSQL URL), this process's own
tool folder (a copy of the first one's registrations and keys, as a second machine
has, or an empty folder: the store holds them), the platform's public JWKS (served to this process's HTTP client by an
``httpx.MockTransport``: no LMS runs here) and the launch POST to make:
``{"store", "folder", "tool_url", "jwks", "secret", "roster", "fields", "state_cookie"}``.
Prints ``{"status": int, "text": str, "jwks": dict}``: this process's answer to ``POST /lti/launch``
and the JWKS it publishes.
"""

from __future__ import annotations

import json
import sys

import httpx
from fastapi.testclient import TestClient

from lms.lti.tool import STATE_COOKIE, LtiTool
from quiz_bank.instructor.server.app import create_app
from quiz_bank.loader import load_bank


def main() -> None:
    """Serve one launch POST from a fresh app on the shared store and print the reply."""
    request = json.loads(sys.stdin.read())
    jwks = request["jwks"]
    http = httpx.Client(transport=httpx.MockTransport(lambda _req: httpx.Response(200, json=jwks)))
    tool = LtiTool(request["folder"], request["tool_url"], http=http)
    app = create_app(load_bank(), request["store"], request["secret"].encode(), roster=request["roster"],
                     lti_tool=tool)
    browser = TestClient(app, base_url=request["tool_url"])
    browser.cookies.set(STATE_COOKIE, request["state_cookie"], path="/lti")
    reply = browser.post("/lti/launch", data=request["fields"],
                         headers={"Sec-Fetch-Site": "cross-site", "Origin": request["origin"]})
    print(json.dumps({"status": reply.status_code, "text": reply.text, "jwks": browser.get("/lti/jwks").json()}))


if __name__ == "__main__":
    main()
