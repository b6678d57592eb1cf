"""Fixtures for the LTI tests: the mini LMS, the tool (with a stand-in quiz page), both on in-process HTTP."""

from __future__ import annotations

import re

import pytest
from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from fastapi.testclient import TestClient

from lms.lti.registry import PlatformRegistration
from lms.lti.tool import LtiTool, lti_router
from tests.lti.mini_lms import MiniLMS

TOOL_URL = "https://127.0.0.1:9200"  # the tool over https, as deployed (its state cookie is Secure)


class Setup:
    """The LMS, the tool, and one 'browser' per site (cookies kept per client, as a browser keeps them per site)."""

    def __init__(self, tmp_path, bound: bool = True) -> None:
        self.lms = MiniLMS()
        self.lms_client = TestClient(self.lms.app, base_url=self.lms.base_url)
        self.tool = LtiTool(tmp_path / "lti", TOOL_URL, http=self.lms_client)
        self.lms.tool_jwks = self.tool.tool_keys.public_jwks()
        self.lms.tool_login_url, self.lms.tool_launch_url = self.tool.login_url, self.tool.launch_url
        self.tool.registry.add(PlatformRegistration(
            name="mini", issuer=self.lms.base_url, client_id=self.lms.client_id,
            deployment_ids=(self.lms.deployment_id,), auth_login_url=f"{self.lms.base_url}/auth",
            auth_token_url=f"{self.lms.base_url}/token", jwks_url=f"{self.lms.base_url}/jwks"))
        if bound:  # the course is linked, as after its instructor's first launch (tests/lti/test_contexts.py)
            self.tool.contexts.bind(self.lms.base_url, self.lms.client_id, "course-1", title="RLHF 101")
        self.launches = []
        app = FastAPI()

        def on_launch(request, data):
            self.launches.append(data)
            return HTMLResponse(f"<p id='who'>{data.user_id}</p>")

        app.include_router(lti_router(self.tool, on_launch, {2: "The clipped objective"}))
        self.app = app
        self.browser = TestClient(app, base_url=TOOL_URL)

    def login(self, user: str, message: str = "resource") -> tuple[str, str]:
        """Run the login initiation and the platform's authorization; returns (id_token, state) as posted."""
        start = self.browser.get(self.lms.login_initiation(user, message).replace(TOOL_URL, ""), follow_redirects=False)
        assert start.status_code == 302, start.text
        page = self.lms_client.get(start.headers["location"].replace(self.lms.base_url, ""))
        assert page.status_code == 200, page.text
        fields = dict(re.findall(r"name='(\w+)' value='([^']*)'", page.text))
        return fields["id_token"], fields["state"]

    def launch(self, id_token: str, state: str):
        return self.browser.post("/lti/launch", data={"id_token": id_token, "state": state})


@pytest.fixture
def lti(tmp_path) -> Setup:
    return Setup(tmp_path)


@pytest.fixture
def fresh_lti(tmp_path) -> Setup:
    """A registration that serves no course yet (the first staff launch binds one)."""
    return Setup(tmp_path, bound=False)
