"""A request-body size limit for the quiz server (pure ASGI middleware).

A body larger than ``max_bytes`` is refused with 413 and a plain message,
whether the client declared its length (``Content-Length``) or streamed it
chunked: the received bytes are counted as they arrive, and the request is cut
off once they pass the limit, before any form parsing. A path may have a limit
and a message of its own (``routes``): the LTI launch, whose form carries the
platform's id_token, gets one sized for real id_tokens (:data:`LTI_LAUNCH`).
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodyTooLarge(Exception):
    """Raised inside the receive channel once a body passes the limit."""


def _message(max_bytes: int) -> str:
    return (f"Request refused: the body is larger than {max_bytes // 1024} KiB. "
            "An answer is at most a few hundred characters.")


#: The launch form (id_token + state): an LMS's id_token with many roles or custom fields runs to tens of KiB.
LTI_LAUNCH_BYTES = 128 * 1024
LTI_LAUNCH = {"/lti/launch": (LTI_LAUNCH_BYTES, (
    f"Launch refused: the LMS sent a launch form larger than {LTI_LAUNCH_BYTES // 1024} KiB (its id_token, "
    "the signed description of you and the course). Nothing was stored. Ask the LMS administrator to send fewer "
    "custom fields for this tool, then open the activity again."))}


class BodySizeLimit:
    """Refuse request bodies over ``max_bytes`` (bytes) with 413 Payload Too Large and a message saying what.

    Args:
        routes: exact path -> (its limit in bytes, its refusal message), for paths whose bodies differ
            from the quiz's answers (e.g. :data:`LTI_LAUNCH`).
    """

    def __init__(self, app: ASGIApp, max_bytes: int, routes: dict[str, tuple[int, str]] | None = None) -> None:
        self.app, self.max_bytes = app, max_bytes
        self.routes = dict(routes or {})

    async def _refuse(self, send: Send, message: str) -> None:
        body = message.encode("utf-8")
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit, message = self.routes.get(scope.get("path", ""), (self.max_bytes, ""))
        message = message or _message(limit)
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = limit + 1
                if declared > limit:
                    await self._refuse(send, message)
                    return
        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except BodyTooLarge:
            if not started:
                await self._refuse(send, message)
