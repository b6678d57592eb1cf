"""Deep Linking 2.0: the instructor picks "PPO chapter quiz" or one stop, and the tool answers the platform.

The answer is an ``LtiDeepLinkingResponse`` JWT signed with the tool's key
(DL 2.0 §4.5), form-posted by the browser to the request's
``deep_link_return_url``: ``iss`` = the tool's client id, ``aud`` = the platform's
issuer, the request's ``nonce``-free claims, ``data`` echoed, and one
``ltiResourceLink`` content item per choice, each with a line item so that the
platform creates the gradebook column (DL 2.0 §3.1, "lineItem"), and a ``window``
presentation (the quiz is never shown in a frame; DL 2.0 §3.1, "window").
"""

from __future__ import annotations

import secrets

from grader.platforms.lti import claims as C
from grader.platforms.lti.launch import LaunchData
from grader.platforms.lti.tool_keys import ToolKeys

#: What an instructor can add: ``None`` = the whole chapter quiz, else one stop (1-8).
CHOICES: dict[str, int | None] = {"chapter": None, **{f"stop{n}": n for n in range(1, 9)}}


def content_item(base_url: str, choice: str, stop_titles: dict[int, str]) -> dict:
    """One ``ltiResourceLink`` content item for ``choice`` ("chapter" or "stop1".."stop8").

    Raises:
        KeyError: for an unknown choice.
    """
    stop = CHOICES[choice]
    if stop is None:
        title, url, custom, tag = "PPO chapter quiz", f"{base_url}/lti/launch", {"quiz": "chapter"}, "ppo-chapter"
    else:
        title = f"PPO quiz, stop {stop}: {stop_titles.get(stop, '')}".rstrip(": ")
        url, custom, tag = f"{base_url}/lti/launch", {"quiz": "stop", "stop": str(stop)}, f"ppo-stop{stop}"
    # The quiz refuses to be framed (X-Frame-Options: DENY, quiz_bank.instructor.server.security): ask for a new window.
    return {"type": "ltiResourceLink", "title": title, "url": url, "custom": custom, "window": {"targetName": "_blank"},
            "lineItem": {"scoreMaximum": 1, "label": title, "resourceId": tag, "tag": tag}}


def response_jwt(tool_keys: ToolKeys, launch: LaunchData, items: list[dict], message: str = "") -> str:
    """The signed ``LtiDeepLinkingResponse`` for ``launch`` (a deep linking request) holding ``items``.

    Raises:
        ValueError: if ``launch`` is not a deep linking request.
    """
    if launch.message_type != C.DEEP_LINKING_REQUEST:
        raise ValueError("a deep linking response answers a deep linking request only")
    body = {"iss": launch.client_id, "aud": launch.issuer, "nonce": secrets.token_urlsafe(16),
            C.DEPLOYMENT_ID: launch.deployment_id, C.MESSAGE_TYPE: C.DEEP_LINKING_RESPONSE,
            C.VERSION: C.LTI_VERSION, C.DL_CONTENT_ITEMS: items}
    if launch.deep_link_data:
        body[C.DL_DATA] = launch.deep_link_data
    if message:
        body[C.DL_MSG] = message
    return tool_keys.sign(body)
