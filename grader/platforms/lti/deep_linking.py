"""Deep Linking 2.0: the instructor picks "PPO chapter quiz" or one stop, and the tool answers the platform.

The answer is an ``LtiDeepLinkingResponse`` JWT signed with the tool's key
(DL 2.0 §4.5), form-posted by the browser to the request's
``deep_link_return_url``: ``iss`` = the tool's client id, ``aud`` = the platform's
issuer, the request's ``nonce``-free claims, ``data`` echoed, and one
``ltiResourceLink`` content item per choice, each with a line item so that the
platform creates the gradebook column (DL 2.0 §3.1, "lineItem"), and a ``window``
presentation (the quiz is never shown in a frame; DL 2.0 §3.1, "window").

The request's ``deep_linking_settings`` (DL 2.0 §4.4.1) decide what may be offered
(:func:`refusal`): the platform must accept ``ltiResourceLink`` items
(``accept_types``) shown in a ``window`` (``accept_presentation_document_targets``:
the quiz refuses ``iframe`` and ``embed``), else the request is refused with a reason;
several items are returned only when ``accept_multiple`` is true; a line item is sent
unless ``accept_lineitem`` is false (the platform would ignore it).
"""

from __future__ import annotations

import secrets

from grader.platforms.lti import claims as C
from grader.platforms.lti.launch import LaunchData
from grader.platforms.lti.tool_keys import ToolKeys
from ppo_course.syllabus import STOPS

#: What an instructor can add: ``None`` = the whole chapter quiz, else one stop (1-8).
CHOICES: dict[str, int | None] = {"chapter": None, **{f"stop{n}": n for n in STOPS}}


ITEM_TYPE = "ltiResourceLink"
TARGET = "window"


def refusal(launch: LaunchData) -> str | None:
    """Why the tool cannot answer this deep linking request with what it offers, or None when it can.

    The tool offers only ``ltiResourceLink`` items presented in a new ``window``.
    """
    if ITEM_TYPE not in launch.accept_types:
        asked = ", ".join(launch.accept_types) or "nothing"
        return (f"the course accepts content of type(s) {asked}; this tool offers only LTI resource links "
                f"({ITEM_TYPE}), so it cannot add anything here: use an assignment or link placement that accepts them")
    if TARGET not in launch.accept_targets:
        asked = ", ".join(launch.accept_targets) or "no presentation"
        return (f"the course shows added content only as {asked}; the quiz never runs inside a frame and opens in a "
                f"new window, so it cannot be added here: choose a placement that accepts '{TARGET}'")
    return None


def content_item(base_url: str, choice: str, stop_titles: dict[int, str], *, line_item: bool = True) -> dict:
    """One ``ltiResourceLink`` content item for ``choice`` ("chapter" or "stop1".."stop8").

    Args:
        line_item: include the item's ``lineItem`` (False when the platform said it ignores line items).

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
    item = {"type": ITEM_TYPE, "title": title, "url": url, "custom": custom, "window": {"targetName": "_blank"}}
    if line_item:
        item["lineItem"] = {"scoreMaximum": 1, "label": title, "resourceId": tag, "tag": tag}
    return item


def response_jwt(tool_keys: ToolKeys, launch: LaunchData, items: list[dict], message: str = "") -> str:
    """The signed ``LtiDeepLinkingResponse`` for ``launch`` (a deep linking request) holding ``items``.

    Raises:
        ValueError: if ``launch`` is not a deep linking request, or ``items`` holds several and the
            platform does not accept multiple items.
    """
    if launch.message_type != C.DEEP_LINKING_REQUEST:
        raise ValueError("a deep linking response answers a deep linking request only")
    if len(items) > 1 and not launch.accept_multiple:
        raise ValueError("the course accepts one item at a time (accept_multiple is not true): choose one")
    body = {"iss": launch.client_id, "aud": launch.issuer, "nonce": secrets.token_urlsafe(16),
            C.DEPLOYMENT_ID: launch.deployment_id, C.MESSAGE_TYPE: C.DEEP_LINKING_RESPONSE,
            C.VERSION: C.LTI_VERSION, C.DL_CONTENT_ITEMS: items}
    if launch.deep_link_data:
        body[C.DL_DATA] = launch.deep_link_data
    if message:
        body[C.DL_MSG] = message
    return tool_keys.sign(body)
