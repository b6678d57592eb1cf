"""AGS, NRPS, the passback record and key rotation against the mini LMS (AGS 2.0 §3, NRPS 2.0 §3, Security Framework §4.1, §6)."""

from __future__ import annotations

import pytest

from lms.lti.passback import Passback
from lms.lti.services import LineItem, PlatformServices


@pytest.fixture
def services(lti) -> PlatformServices:
    platform = lti.tool.registry.find(lti.lms.base_url, lti.lms.client_id)
    return PlatformServices(platform, lti.tool.tool_keys, lti.lms_client)


LINEITEMS = "http://127.0.0.1:9100/courses/1/lineitems"


def test_line_item_is_created_once(lti, services):
    first = services.ensure_line_item(LINEITEMS, LineItem(label="Exercise 4 (GAE)", scoreMaximum=10, resourceId="ex4_gae"))
    again = services.ensure_line_item(LINEITEMS, LineItem(label="Exercise 4 (GAE)", scoreMaximum=10, resourceId="ex4_gae"))
    assert first.id == again.id and len(lti.lms.line_items) == 1


def test_score_reaches_the_gradebook_and_is_posted_once(lti, services, tmp_path):
    item = services.ensure_line_item(LINEITEMS, LineItem(label="Stop 2", scoreMaximum=1, resourceId="ppo-stop2"))
    record = Passback(tmp_path / "p.sqlite", sleep=lambda s: None)
    assert record.post(services, item.id, "u-ada", 1.0, 1.0).status == "posted"
    assert record.post(services, item.id, "u-ada", 1.0, 1.0).status == "unchanged"
    assert [(s["userId"], s["scoreGiven"], s["gradingProgress"]) for s in lti.lms.scores] == [("u-ada", 1.0, "FullyGraded")]


def test_a_failing_platform_is_retried_then_left_pending(lti, services, tmp_path):
    item = services.ensure_line_item(LINEITEMS, LineItem(label="Stop 3", scoreMaximum=1, resourceId="ppo-stop3"))
    waits: list[float] = []
    record = Passback(tmp_path / "p.sqlite", retries=3, sleep=waits.append)
    lti.lms.fail_next_scores = 2
    outcome = record.post(services, item.id, "u-ben", 1.0, 1.0)
    assert (outcome.status, outcome.attempts) == ("posted", 3) and waits == [0.5, 1.0]
    lti.lms.fail_next_scores = 5
    stuck = record.post(services, item.id, "u-ada", 0.0, 1.0)
    assert stuck.status == "pending" and "503" in stuck.error
    assert [row[3] for row in record.pending()] == ["u-ada"]


def test_score_outside_its_range_is_never_posted(lti, services, tmp_path):
    item = services.ensure_line_item(LINEITEMS, LineItem(label="Ex 7", scoreMaximum=20, resourceId="ex7"))
    with pytest.raises(ValueError, match="outside"):
        Passback(tmp_path / "p.sqlite").post(services, item.id, "u-ada", 20.5, 20)
    assert lti.lms.scores == []


def test_roster_comes_from_names_and_roles_across_pages(services):
    members = services.members("http://127.0.0.1:9100/courses/1/memberships")
    assert sorted(m.user_id for m in members) == ["u-ada", "u-ben", "u-prof"]
    assert {m.lis_person_sourcedid for m in members} == {"ada", "ben", "noether"}


def test_token_endpoint_refuses_an_assertion_from_a_rotated_out_key(lti, services):
    services.access_token(("https://purl.imsglobal.org/spec/lti-ags/scope/score",))
    old_jwks = lti.tool.tool_keys.public_jwks()
    new_kid = lti.tool.tool_keys.rotate()
    assert [k["kid"] for k in lti.tool.tool_keys.public_jwks()["keys"]][0] == new_kid
    lti.lms.tool_jwks = old_jwks  # the platform has not refreshed the tool's JWKS: the new key is unknown to it
    services._tokens.clear()
    with pytest.raises(Exception, match="401"):
        services.access_token(("https://purl.imsglobal.org/spec/lti-ags/scope/score",))
    lti.lms.tool_jwks = lti.tool.tool_keys.public_jwks()
    assert services.access_token(("https://purl.imsglobal.org/spec/lti-ags/scope/score",))
    assert lti.tool.tool_keys.retire(keep=1) and len(lti.tool.tool_keys.public_jwks()["keys"]) == 1
