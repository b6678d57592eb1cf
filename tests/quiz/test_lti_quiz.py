"""The quiz server as an LTI 1.3 tool, end to end against the mini LMS (tests/lti/mini_lms.py).

A student launched from the LMS on a deep-linked stop lands on that stop signed in
as her roster identity, passes it, and the LMS's gradebook receives 1.0 for her on
that stop's line item, once; a student the roster does not know is refused; the
launch's cross-site POST is accepted while every other cross-site POST stays refused.
"""

from __future__ import annotations

import base64
import json
import re

import pytest
from fastapi.testclient import TestClient

from quiz_server_support import SERVER_SECRET, answer_stop

from lms.lti.registry import PlatformRegistration
from lms.lti.tool import LtiTool
from tests.lti.mini_lms import MiniLMS

LTI_CONTEXT = "https://purl.imsglobal.org/spec/lti/claim/context"
LTI_CUSTOM = "https://purl.imsglobal.org/spec/lti/claim/custom"
TOOL_URL = "https://127.0.0.1:9200"  # the tool over https, as deployed (its state cookie is Secure)
ROSTER = [{"student_id": "s-ada", "name": "Ada", "section": "A", "sis_user_id": "ada", "sis_login_id": "",
           "canvas_id": "", "email": "ada@example.edu"}]


@pytest.fixture
def course(tmp_path, bank, checker):
    from quiz_bank.instructor.server.app import create_app

    lms = MiniLMS()
    lms_client = TestClient(lms.app, base_url=lms.base_url)
    tool = LtiTool(tmp_path / "lti", TOOL_URL, http=lms_client)
    lms.tool_jwks = tool.tool_keys.public_jwks()
    lms.tool_login_url, lms.tool_launch_url = tool.login_url, tool.launch_url
    tool.registry.add(PlatformRegistration(
        issuer=lms.base_url, client_id=lms.client_id, deployment_ids=(lms.deployment_id,),
        auth_login_url=f"{lms.base_url}/auth", auth_token_url=f"{lms.base_url}/token", jwks_url=f"{lms.base_url}/jwks"))
    item = lms.add_line_item("link-stop2", "PPO quiz, stop 2", 1.0, resource_id="ppo-stop2")
    lms.link_custom["link-stop2"] = {"quiz": "stop", "stop": "2"}
    app = create_app(bank, tmp_path / "quiz.sqlite", SERVER_SECRET, roster=ROSTER, checker=checker, lti_tool=tool)
    tool.contexts.bind(lms.base_url, lms.client_id, "course-1", title="RLHF 101")  # as its instructor's first launch
    return lms, lms_client, app, item


def _launch(lms, lms_client, browser, user: str, link: str, context: dict | None = None, **overrides):
    start = browser.get(lms.login_initiation(user, link=link).replace(TOOL_URL, ""), follow_redirects=False)
    assert start.status_code == 302, start.text
    form = lms_client.get(start.headers["location"].replace(lms.base_url, ""))
    fields = dict(re.findall(r"name='(\w+)' value='([^']*)'", form.text))
    if context is not None:  # the same LMS, signing a launch from another course of the same deployment
        overrides[LTI_CONTEXT] = context
    if overrides:
        nonce = json.loads(base64.urlsafe_b64decode(fields["id_token"].split(".")[1] + "=="))["nonce"]
        fields["id_token"] = lms.id_token(user, nonce, link=link, **overrides)
    # the platform's form_post is a cross-site POST: a browser sends Sec-Fetch-Site: cross-site
    return browser.post("/lti/launch", data=fields, headers={"Sec-Fetch-Site": "cross-site", "Origin": lms.base_url})


def test_launch_signs_in_the_roster_student_and_a_passed_stop_reaches_the_gradebook(course):
    lms, lms_client, app, item = course
    browser = TestClient(app, base_url=TOOL_URL)
    landing = _launch(lms, lms_client, browser, "u-ada", "link-stop2")
    assert landing.status_code == 200 and "as s-ada" in landing.text and "/stop/2" in landing.text
    assert "ppo_quiz_token" in landing.cookies or browser.cookies.get("ppo_quiz_token")
    assert "stop 2" in browser.get("/stop/2").text.lower()
    answer_stop(browser, app.state.service, "s-ada", 2)
    assert 2 in app.state.service.db.completed_stops("s-ada")
    app.state.passback_worker.stop()  # the background worker may have posted it already; else post now
    app.state.passback_worker.run_once()
    posted = [(s["userId"], s["lineitem"], s["scoreGiven"], s["scoreMaximum"]) for s in lms.scores]
    assert posted == [("u-ada", item["id"], 1.0, 1.0)]
    browser.get("/stop/2")
    app.state.post_progress("s-ada")  # a later answer or a rerun posts nothing new (idempotent record)
    assert len(lms.scores) == 1


def test_a_student_the_roster_does_not_know_is_refused(course):
    lms, lms_client, app, _ = course
    browser = TestClient(app, base_url=TOOL_URL)
    refused = _launch(lms, lms_client, browser, "u-ben", "link-stop2")
    assert refused.status_code == 403 and "quiz roster" in refused.text
    assert not browser.cookies.get("ppo_quiz_token")


def test_only_the_platform_posts_are_exempt_from_the_cross_site_check(course):
    _, _, app, _ = course
    browser = TestClient(app, base_url=TOOL_URL)
    other = browser.post("/login", data={"token": "x"}, headers={"Sec-Fetch-Site": "cross-site"})
    assert other.status_code == 403
    launch = browser.post("/lti/launch", data={"id_token": "x", "state": "y"}, headers={"Sec-Fetch-Site": "cross-site"})
    assert launch.status_code == 400 and "This launch was refused" in launch.text


def test_an_instructor_of_another_course_does_not_open_the_instructor_pages(course):
    lms, lms_client, app, _ = course
    browser = TestClient(app, base_url=TOOL_URL)
    hostile = _launch(lms, lms_client, browser, "u-prof", "link-stop2", context={"id": "course-9", "title": "Other"})
    assert hostile.status_code == 403 and "serves another course" in hostile.text
    assert not browser.cookies.get("ppo_quiz_token")
    assert "Class dashboard" not in browser.get("/instructor").text
    # the honest twin: the course's own instructor gets the dashboard, with the course's endpoints on it
    assert _launch(lms, lms_client, browser, "u-prof", "link-stop2").status_code == 200
    dashboard = browser.get("/instructor").text
    assert "Class dashboard" in dashboard and f"{lms.base_url}/courses/1/lineitems" in dashboard
    assert f"{lms.base_url}/courses/1/memberships" in dashboard


def test_a_real_sized_id_token_passes_the_launch_limit_and_an_oversized_launch_is_refused_with_its_own_message(course):
    lms, lms_client, app, _ = course
    browser = TestClient(app, base_url=TOOL_URL)
    # an LMS sending many custom fields: a 60 KiB id_token (over the 16 KiB answer limit, under the launch's)
    custom = {"quiz": "stop", "stop": "2", **{f"field_{i}": "x" * 100 for i in range(450)}}
    big = _launch(lms, lms_client, browser, "u-ada", "link-stop2", **{LTI_CUSTOM: custom})
    assert big.status_code == 200 and "as s-ada" in big.text
    huge = browser.post("/lti/launch", data={"id_token": "a" * (200 * 1024), "state": "s"},
                        headers={"Sec-Fetch-Site": "cross-site", "Origin": lms.base_url})
    assert huge.status_code == 413 and "Launch refused" in huge.text and "larger than 128 KiB" in huge.text
    assert "id_token" in huge.text and "answer" not in huge.text
    # elsewhere the quiz's own limit and message hold
    answer = browser.post("/stop/2/answer", data={"answer": "a" * (20 * 1024)})
    assert answer.status_code == 413 and "larger than 16 KiB" in answer.text and "An answer is" in answer.text
