"""A request-body size limit for the quiz server (pure ASGI middleware).

A body larger than ``max_bytes`` is refused with 413 and a plain message,
whether the client declared its length (``Content-Length``) or streamed it
chunked: the received bytes are counted as they arrive, and the request is cut
off once they pass the limit, before any form parsing.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodyTooLarge(Exception):
    """Raised inside the receive channel once a body passes the limit."""


def _message(max_bytes: int) -> bytes:
    return (f"Request refused: the body is larger than {max_bytes // 1024} KiB. "
            "An answer is at most a few hundred characters.").encode("utf-8")


class BodySizeLimit:
    """Refuse request bodies over ``max_bytes`` with 413 Payload Too Large."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def _refuse(self, send: Send) -> None:
        body = _message(self.max_bytes)
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = self.max_bytes + 1
                if declared > self.max_bytes:
                    await self._refuse(send)
                    return
        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
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
                await self._refuse(send)
