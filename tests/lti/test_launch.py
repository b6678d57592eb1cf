"""LTI 1.3 launches against the mini LMS: the valid one signs in, every hostile one is refused with a page.

Each refusal is checked twice: the status/page text, and that the quiz's launch
handler never ran (no identity reached the quiz). Sources: LTI Core 1.3 §5.1,
1EdTech Security Framework 1.0 §5.1.3 (the id_token validation steps).
"""

from __future__ import annotations

import base64
import json

from joserfc.jwk import RSAKey

from lms.lti import claims as C


def _refused(response, words: str) -> None:
    assert response.status_code in (400, 403), response.text
    assert "This launch was refused" in response.text
    assert words in response.text, response.text


def test_student_launch_reaches_the_quiz_as_that_student(lti):
    token, state = lti.login("u-ada")
    response = lti.launch(token, state)
    assert response.status_code == 200 and "u-ada" in response.text
    (data,) = lti.launches
    assert data.user_id == "u-ada" and not data.is_instructor and data.person_sourcedid == "ada"
    assert data.lineitems_url.endswith("/courses/1/lineitems") and C.SCOPE_SCORE in data.ags_scopes


def test_instructor_role_comes_from_the_signed_roles(lti):
    token, state = lti.login("u-prof")
    assert lti.launch(token, state).status_code == 200
    assert lti.launches[0].is_instructor


def test_replayed_launch_is_refused(lti):
    token, state = lti.login("u-ada")
    assert lti.launch(token, state).status_code == 200
    _refused(lti.launch(token, state), "does not belong to this browser")  # the state cookie is spent
    lti.browser.cookies.set("ppo_lti_state", state, path="/lti")  # even with the cookie replayed
    _refused(lti.launch(token, state), "already used")
    assert len(lti.launches) == 1


def test_id_token_replayed_under_a_new_login_is_refused(lti):
    token, state = lti.login("u-ada")
    assert lti.launch(token, state).status_code == 200
    _, fresh_state = lti.login("u-ada")
    _refused(lti.launch(token, fresh_state), "nonce")
    assert len(lti.launches) == 1


def test_launch_without_the_browser_state_cookie_is_refused(lti):
    token, state = lti.login("u-ada")
    lti.browser.cookies.clear()
    _refused(lti.launch(token, state), "does not belong to this browser")


def _relaunch(lti, user="u-ada", **overrides):
    """A login whose id_token is replaced by one the LMS signs with ``overrides`` (the nonce kept)."""
    token, state = lti.login(user)
    nonce = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))["nonce"]
    return lti.launch(lti.lms.id_token(user, nonce, **overrides), state)


def test_wrong_audience_is_refused(lti):
    _refused(_relaunch(lti, aud="some-other-tool"), "not addressed to this tool")
    assert not lti.launches


def test_several_audiences_need_azp(lti):
    _refused(_relaunch(lti, aud=[lti.lms.client_id, "other"]), "azp")
    assert _relaunch(lti, aud=[lti.lms.client_id, "other"], azp=lti.lms.client_id).status_code == 200


def test_expired_token_is_refused(lti):
    _refused(_relaunch(lti, exp=1_000_000, iat=999_000), "expired")


def test_unsigned_token_is_refused(lti):
    token, state = lti.login("u-ada")
    header, payload, _ = token.split(".")
    unsigned_header = base64.urlsafe_b64encode(json.dumps({"alg": "none"}).encode()).rstrip(b"=").decode()
    _refused(lti.launch(f"{unsigned_header}.{payload}.", state), "RS256")
    assert not lti.launches


def test_token_signed_by_an_unregistered_key_is_refused(lti):
    stranger = RSAKey.generate_key(2048, auto_kid=True)
    _refused(_relaunch(lti, key=stranger), "signature")


def test_login_from_an_unregistered_platform_is_refused(lti):
    url = lti.lms.login_initiation("u-ada").replace("iss=http", "iss=https").replace("127.0.0.1%3A9100", "evil.example")
    _refused(lti.browser.get(url.replace(lti.tool.base_url, ""), follow_redirects=False), "not registered")


def test_student_who_edits_the_roles_claim_breaks_the_signature(lti):
    token, state = lti.login("u-ada")
    header, payload, signature = token.split(".")
    body = json.loads(base64.urlsafe_b64decode(payload + "=="))
    body[C.ROLES] = [C.ROLE_INSTRUCTOR]
    forged = base64.urlsafe_b64encode(json.dumps(body).encode()).rstrip(b"=").decode()
    _refused(lti.launch(f"{header}.{forged}.{signature}", state), "signature")
    assert not lti.launches


def test_custom_claim_cannot_make_a_student_an_instructor(lti):
    response = _relaunch(lti, **{C.CUSTOM: {"role": "Instructor", "roles": C.ROLE_INSTRUCTOR}})
    assert response.status_code == 200
    assert not lti.launches[0].is_instructor


def test_unregistered_deployment_and_wrong_version_are_refused(lti):
    _refused(_relaunch(lti, **{C.DEPLOYMENT_ID: "dep-unknown"}), "deployment")
    _refused(_relaunch(lti, **{C.VERSION: "1.1"}), "version")


def test_student_cannot_open_the_deep_linking_picker(lti):
    token, state = lti.login("u-ada", message="deeplink")
    _refused(lti.launch(token, state), "only an instructor")


def test_instructor_adds_one_stop_by_deep_linking(lti):
    token, state = lti.login("u-prof", message="deeplink")
    picker = lti.launch(token, state)
    assert picker.status_code == 200 and "Stop 2: The clipped objective" in picker.text
    ticket = picker.text.split("name='ticket' value='")[1].split("'")[0]
    answer = lti.browser.post("/lti/deep-link", data={"ticket": ticket, "choice": "stop2"})
    jwt_value = answer.text.split("name='JWT' value='")[1].split("'")[0]
    assert lti.lms_client.post("/deeplink/return", data={"JWT": jwt_value}).status_code == 200
    (claims,) = lti.lms.deep_link_results
    assert claims[C.MESSAGE_TYPE] == "LtiDeepLinkingResponse" and claims[C.DL_DATA] == "opaque-123"
    (item,) = claims[C.DL_CONTENT_ITEMS]
    assert item["type"] == "ltiResourceLink" and item["custom"] == {"quiz": "stop", "stop": "2"}
    assert item["lineItem"]["resourceId"] == "ppo-stop2"
    assert item["window"] == {"targetName": "_blank"}  # the quiz refuses framing: the platform opens a window
    # the ticket is single-use
    _refused(lti.browser.post("/lti/deep-link", data={"ticket": ticket, "choice": "stop2"}), "expired or was already used")


def test_jwks_endpoint_publishes_only_public_keys(lti):
    keys = lti.browser.get("/lti/jwks").json()["keys"]
    assert keys and all("d" not in k and "p" not in k and k["alg"] == "RS256" for k in keys)


def test_state_cookie_is_secure_samesite_none_so_it_rides_the_platforms_cross_site_post(lti):
    # RFC 6265bis §5.6.7/§8.8: only SameSite=None is sent on a cross-site POST, and only with Secure.
    start = lti.browser.get(lti.lms.login_initiation("u-ada").replace(lti.tool.base_url, ""), follow_redirects=False)
    cookie = start.headers["set-cookie"].lower()
    assert "ppo_lti_state=" in cookie and "samesite=none" in cookie and "secure" in cookie and "httponly" in cookie


def test_state_cookie_flags_follow_the_tools_base_url():
    from lms.lti.tool import cross_site_launches, state_cookie_flags

    for url in ("https://quiz.example.edu", "http://127.0.0.1:8000", "http://localhost:8000", "http://[::1]:8000"):
        assert state_cookie_flags(url) == {"secure": True, "samesite": "none"} and cross_site_launches(url), url
    # plain http elsewhere: a browser drops Secure cookies there, so Lax (a same-site platform only)
    for url in ("http://quiz.example.edu", "http://localhost.evil.example:8000", "http://127.0.0.1.nip.io"):
        assert state_cookie_flags(url) == {"secure": False, "samesite": "lax"} and not cross_site_launches(url), url


def test_plain_http_platform_urls_are_accepted_only_on_a_loopback_host():
    import pydantic
    import pytest

    from lms.lti.registry import PlatformRegistration

    def registration(url: str) -> PlatformRegistration:
        return PlatformRegistration(issuer=url, client_id="c", deployment_ids=("d",), auth_login_url=url + "/auth",
                                    auth_token_url=url + "/token", jwks_url=url + "/jwks")

    for url in ("http://127.0.0.1:9100", "http://localhost:9100", "http://[::1]:9100", "https://lms.example.edu"):
        assert registration(url).issuer == url
    for url in ("http://localhost.evil.example", "http://127.0.0.1.evil.example", "http://lms.example.edu"):
        with pytest.raises(pydantic.ValidationError, match="not an https URL"):
            registration(url)


def test_tool_base_url_is_the_root_of_a_host(tmp_path):
    import pytest

    from lms.lti.tool import LtiTool

    tool = LtiTool(tmp_path / "a", "https://quiz.example.edu/")
    assert (tool.login_url, tool.launch_url) == ("https://quiz.example.edu/lti/login", "https://quiz.example.edu/lti/launch")
    # the quiz's pages link from the root (/stop/N): a path prefix would send the student off the tool
    for bad in ("https://uni.example.edu/quiz", "quiz.example.edu", "ftp://quiz.example.edu", "https://q.example.edu/?x=1"):
        with pytest.raises(ValueError, match="base URL"):
            LtiTool(tmp_path / "b", bad)


def test_deep_linking_picker_posts_back_to_its_own_origin(lti):
    token, state = lti.login("u-prof", message="deeplink")
    picker = lti.launch(token, state)
    assert "action='/lti/deep-link'" in picker.text  # relative: the origin the browser is on, whatever its name
