"""Launches bound to the course, target_link_uri, and deep-linking settings: each hostile launch beside its honest twin.

The hostile launches are signed by the LMS itself (the same registration, client id
and deployment): what an account-level deployment gives every teacher of the
institution. Sources: LTI Core 1.3 §5.3.4 (target_link_uri, required), §5.4.1
(context); Deep Linking 2.0 §4.4.1 (deep_linking_settings).
"""

from __future__ import annotations

import base64
import json
import re

from lms.lti import claims as C

OTHER_COURSE = {"id": "course-2", "title": "Databases 201"}
DL_SETTINGS = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
RETURN_URL = "http://127.0.0.1:9100/deeplink/return"


def _refused(response, words: str) -> None:
    assert response.status_code in (400, 403), response.text
    assert "This launch was refused" in response.text and words in response.text, response.text


def _nonce(token: str) -> str:
    return json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))["nonce"]


def _launch(lti, user: str, message: str = "resource", **overrides):
    """A full login; the id_token the LMS signs carries ``overrides`` (the nonce kept)."""
    token, state = lti.login(user, message)
    return lti.launch(lti.lms.id_token(user, _nonce(token), message, **overrides), state)


# ---- the course binding ----

def test_an_instructor_of_another_course_of_the_same_deployment_is_refused(lti):
    hostile = _launch(lti, "u-prof", **{C.CONTEXT: OTHER_COURSE})
    _refused(hostile, "serves another course")
    assert "Databases 201" in hostile.text and hostile.status_code == 403
    assert lti.launches == []  # the quiz (and its instructor pages) never saw the launch
    # the honest twin: the bound course's instructor opens the quiz as an instructor
    assert _launch(lti, "u-prof").status_code == 200
    assert [d.is_instructor for d in lti.launches] == [True]


def test_a_student_of_another_course_is_refused_and_the_courses_student_is_not(lti):
    _refused(_launch(lti, "u-ada", **{C.CONTEXT: OTHER_COURSE}), "serves another course")
    assert _launch(lti, "u-ada").status_code == 200 and lti.launches[0].context_id == "course-1"


def test_a_launch_naming_no_course_is_refused(lti):
    _refused(_launch(lti, "u-prof", **{C.CONTEXT: None}), "names no course")
    assert lti.launches == []


def test_the_first_instructor_launch_binds_the_course(fresh_lti):
    lti = fresh_lti
    _refused(_launch(lti, "u-ada"), "not linked to a course")  # a student cannot bind a course
    assert lti.tool.contexts.all() == []
    assert _launch(lti, "u-prof").status_code == 200  # the instructor's first launch binds course-1
    (binding,) = lti.tool.contexts.all()
    assert (binding.context_id, binding.title, binding.bound_by) == ("course-1", "RLHF 101", "launch by u-prof")
    assert _launch(lti, "u-ada").status_code == 200
    _refused(_launch(lti, "u-prof", **{C.CONTEXT: OTHER_COURSE}), "serves another course")


def test_deep_linking_by_the_first_instructor_binds_the_course(fresh_lti):
    picker = _launch(fresh_lti, "u-prof", "deeplink")
    assert picker.status_code == 200 and "name='ticket'" in picker.text
    assert [b.context_id for b in fresh_lti.tool.contexts.all()] == ["course-1"]
    _refused(_launch(fresh_lti, "u-prof", "deeplink", **{C.CONTEXT: OTHER_COURSE}), "serves another course")


def test_two_first_instructors_at_once_bind_one_course(fresh_lti):
    from lms.lti.launch import LaunchData, LaunchError

    def launch(context: str) -> LaunchData:
        return LaunchData(issuer=fresh_lti.lms.base_url, client_id=fresh_lti.lms.client_id, deployment_id="dep-1",
                          message_type=C.RESOURCE_LINK_REQUEST, user_id="u-prof", roles=(C.ROLE_INSTRUCTOR,),
                          context_id=context)
    from lms.lti import tables

    store = fresh_lti.tool.contexts
    # both saw "nothing bound" before either wrote: the unique "first" slot lets one insert in, not two
    rows = [{"issuer": fresh_lti.lms.base_url, "client_id": fresh_lti.lms.client_id, "context_id": c, "slot": "first",
             "deployment_id": "dep-1", "title": "", "lineitems": "", "memberships": "", "bound_by": c, "bound": 0.0,
             "seen": 0.0} for c in ("course-1", "course-2")]
    with store.engine.connect() as conn, conn.begin():
        assert [tables.insert_or_keep(conn, tables.lti_context, row) for row in rows] == [True, False]
    store.admit(launch("course-1"))
    try:
        store.admit(launch("course-2"))
        raise AssertionError("a second course was admitted")
    except LaunchError as exc:
        assert "serves another course" in str(exc)


def test_an_administrator_binds_a_second_course(lti):
    assert lti.tool.contexts.bind(lti.lms.base_url, lti.lms.client_id, "course-2", title="Databases 201")
    assert _launch(lti, "u-prof", **{C.CONTEXT: OTHER_COURSE}).status_code == 200
    assert lti.tool.contexts.unbind(lti.lms.base_url, lti.lms.client_id, "course-2")
    _refused(_launch(lti, "u-prof", **{C.CONTEXT: OTHER_COURSE}), "serves another course")


# ---- the course's service endpoints, kept per context ----

def test_each_courses_ags_and_nrps_endpoints_are_kept_from_its_launches(lti):
    lti.tool.contexts.bind(lti.lms.base_url, lti.lms.client_id, "course-2")
    assert _launch(lti, "u-ada").status_code == 200
    ags = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
    other = {ags: {"scope": [C.SCOPE_SCORE], "lineitems": "http://127.0.0.1:9100/courses/2/lineitems"},
             C.NRPS_SERVICE: {"context_memberships_url": "http://127.0.0.1:9100/courses/2/memberships",
                              "service_versions": ["2.0"]}}
    assert _launch(lti, "u-prof", **{C.CONTEXT: OTHER_COURSE}, **other).status_code == 200
    found = {b.context_id: (b.lineitems, b.memberships) for b in lti.tool.contexts.all()}
    assert found == {"course-1": ("http://127.0.0.1:9100/courses/1/lineitems",
                                  "http://127.0.0.1:9100/courses/1/memberships"),
                     "course-2": ("http://127.0.0.1:9100/courses/2/lineitems",
                                  "http://127.0.0.1:9100/courses/2/memberships")}
    # a later launch without the services keeps what an earlier one said
    assert _launch(lti, "u-ben", **{ags: None, C.NRPS_SERVICE: None}).status_code == 200
    assert lti.tool.contexts.find(lti.lms.base_url, lti.lms.client_id, "course-1").lineitems.endswith("/1/lineitems")


# ---- target_link_uri ----

def test_a_launch_for_another_url_is_refused(lti):
    _refused(_launch(lti, "u-ada", **{C.TARGET_LINK_URI: "https://evil.example/phish"}), "not this tool")
    _refused(_launch(lti, "u-ada", **{C.TARGET_LINK_URI: "https://127.0.0.1:9200.evil.example/lti/launch"}),
             "not this tool")
    assert lti.launches == []
    twin = _launch(lti, "u-ada", **{C.TARGET_LINK_URI: lti.tool.launch_url + "?from=canvas"})
    assert twin.status_code == 200 and len(lti.launches) == 1


def test_target_link_uri_is_compared_as_a_url_not_as_text():
    import pytest

    from lms.lti.launch import LaunchError, check_target_link_uri

    own = "https://quiz.example.edu/lti/launch"
    for same in (own, "https://QUIZ.example.edu:443/lti/launch", own + "?x=1"):
        check_target_link_uri(same, own)
    for other in ("http://quiz.example.edu/lti/launch", "https://quiz.example.edu:8443/lti/launch",
                  "https://quiz.example.edu/lti/launch/", "https://quiz.example.edu/lti/jwks",
                  "https://user@quiz.example.edu/lti/launch", "https://quiz.example.edu:x/lti/launch", "", 7):
        with pytest.raises(LaunchError):
            check_target_link_uri(other, own)


def test_a_launch_without_target_link_uri_is_refused(lti):
    _refused(_launch(lti, "u-ada", **{C.TARGET_LINK_URI: None}), "no target_link_uri")
    assert lti.launches == []


def test_a_login_for_another_url_is_refused(lti):
    url = lti.lms.login_initiation("u-ada").replace("%2Flti%2Flaunch", "%2Fphish")
    _refused(lti.browser.get(url.replace(lti.tool.base_url, ""), follow_redirects=False), "not this tool")


# ---- deep_linking_settings ----

def _settings(**fields) -> dict:
    base = {"deep_link_return_url": RETURN_URL, "accept_types": ["ltiResourceLink"],
            "accept_presentation_document_targets": ["window"], "data": "opaque-123"}
    return {DL_SETTINGS: {**base, **fields}}


def _pick(lti, picker, *choices):
    ticket = re.search(r"name='ticket' value='([^']+)'", picker.text).group(1)
    return lti.browser.post("/lti/deep-link", data={"ticket": ticket, "choice": list(choices)})


def _items(answer) -> list[dict]:
    token = answer.text.split("name='JWT' value='")[1].split("'")[0]
    return json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))[C.DL_CONTENT_ITEMS]


def test_deep_linking_that_accepts_only_plain_links_is_refused(lti):
    _refused(_launch(lti, "u-prof", "deeplink", **_settings(accept_types=["link", "html"])),
             "accepts content of type(s) link, html; this tool offers only LTI resource links")
    assert _launch(lti, "u-prof", "deeplink", **_settings(accept_types=["link", "ltiResourceLink"])).status_code == 200


def test_deep_linking_into_a_frame_only_is_refused(lti):
    _refused(_launch(lti, "u-prof", "deeplink", **_settings(accept_presentation_document_targets=["iframe", "embed"])),
             "never runs inside a frame")
    assert _launch(lti, "u-prof", "deeplink",
                   **_settings(accept_presentation_document_targets=["iframe", "window"])).status_code == 200


def test_several_items_only_when_the_platform_accepts_multiple(lti):
    single = _launch(lti, "u-prof", "deeplink", **_settings())
    assert "type='radio'" in single.text
    _refused(_pick(lti, single, "stop1", "stop2"), "one item at a time")
    multiple = _launch(lti, "u-prof", "deeplink", **_settings(accept_multiple=True))
    assert "type='checkbox'" in multiple.text
    items = _items(_pick(lti, multiple, "stop1", "stop2"))
    assert [i["custom"] for i in items] == [{"quiz": "stop", "stop": "1"}, {"quiz": "stop", "stop": "2"}]


def test_no_line_item_is_sent_to_a_platform_that_ignores_them(lti):
    ignoring = _launch(lti, "u-prof", "deeplink", **_settings(accept_lineitem=False))
    assert "id='no-line-items'" in ignoring.text
    (item,) = _items(_pick(lti, ignoring, "stop3"))
    assert "lineItem" not in item
    (twin,) = _items(_pick(lti, _launch(lti, "u-prof", "deeplink", **_settings(accept_lineitem=True)), "stop3"))
    assert twin["lineItem"]["resourceId"] == "ppo-stop3"
