"""A deadline on each HTTP request's body.

uvicorn hands the application a request as soon as its head is in and then waits for the body as long as
the client likes; the body limit and the JSON-RPC check read the whole body before anything else runs, so a
client that declares a body and sends part of it holds the connection and a task indefinitely. Here the
body must be complete within `seconds` of the request's start, or the request is answered 408 (JSON-RPC
error, id null) and the connection closed. Once the body is in, `receive` is the application's to wait on
for as long as it likes (a stream waits there for the client's disconnect).
"""

from __future__ import annotations

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from contextgraph.transports.asgi import respond_rpc_error


class _BodyLate(Exception):
    pass


class BodyDeadline:
    def __init__(self, app: ASGIApp, seconds: float, invalid_request_code: int) -> None:
        self.app = app
        self.seconds = seconds
        self.code = invalid_request_code

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        deadline = anyio.current_time() + self.seconds
        body_done = False
        started = False

        async def timed_receive() -> Message:
            nonlocal body_done
            if body_done:
                return await receive()
            with anyio.move_on_at(deadline):
                message = await receive()
                body_done = message["type"] != "http.request" or not message.get("more_body", False)
                return message
            raise _BodyLate

        async def watched_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, timed_receive, watched_send)
        except _BodyLate:
            if not started:
                await respond_rpc_error(send, 408, None, self.code,
                                        f"Request timeout: the body did not arrive within {self.seconds:g} s; "
                                        f"nothing was run.", {"hint": "Send the whole request body promptly."},
                                        extra=[(b"connection", b"close")])
