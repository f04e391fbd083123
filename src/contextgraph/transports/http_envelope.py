"""The JSON-RPC envelope check for HTTP POST bodies (/mcp and /messages/), as wire.parse_message does for lines.

The SDK reads a request whose `id` is an object, array, float or bool as a notification (the notification
model ignores unknown keys) and answers 202 with nothing, so the client waits forever. JSON-RPC 2.0 wants
-32600 with id null: this middleware answers it (HTTP 400) before the SDK sees the body. It sits behind the
body limit, so the body it buffers is already bounded; any other body passes through untouched.
"""

from __future__ import annotations

import json
from collections import deque

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from contextgraph.transports.asgi import respond_rpc_error
from contextgraph.transports.wire import envelope_problem


class EnvelopeGuard:
    def __init__(self, app: ASGIApp, invalid_request_code: int, hint: str) -> None:
        self.app = app
        self.code = invalid_request_code
        self.hint = hint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = bytearray()
        buffered: deque[Message] = deque()
        while True:
            message = await receive()
            buffered.append(message)
            if message["type"] != "http.request":
                break
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        problem = _problem(bytes(body))
        if problem is not None:
            await respond_rpc_error(send, 400, None, self.code, f"Invalid request: {problem}.", {"hint": self.hint})
            return

        async def replay() -> Message:
            return buffered.popleft() if buffered else await receive()

        await self.app(scope, replay, send)


def _problem(body: bytes) -> str | None:
    try:
        decoded = json.loads(body)
    except (ValueError, RecursionError):  # not JSON: the endpoint answers its own parse error
        return None
    return envelope_problem(decoded)
