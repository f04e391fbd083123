"""The JSON-RPC check of HTTP POST bodies to the JSON-RPC endpoints (/mcp, /messages/), as wire.parse_message
does for lines, so that every transport answers a bad message alike.

The SDK reads a request whose `id` is an object, array, float or bool as a notification (the notification
model ignores unknown keys) and answers 202 with nothing, so the client waits forever; it answers a batch or
a body that is JSON but no JSON-RPC message with -32602 and pydantic's report of its own models, and bad
JSON with the parser's words. Here each of them gets what the line transports answer: -32700 for a body
that is not JSON, -32600 for a batch or a body that is no JSON-RPC message, both with id null and HTTP 400,
before the SDK sees the body. This sits behind the body limit, so the body it buffers is already bounded;
a good body passes through untouched, and other paths' bodies are not looked at.
"""

from __future__ import annotations

from collections import deque

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from contextgraph.constitution import Constitution
from contextgraph.transports.asgi import respond
from contextgraph.transports.relay import error_message
from contextgraph.transports.wire import parse_message


class EnvelopeGuard:
    def __init__(self, app: ASGIApp, constitution: Constitution, paths: frozenset[str]) -> None:
        self.app = app
        self.constitution = constitution
        self.paths = paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] not in self.paths:
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
        parsed = parse_message(bytes(body))
        if isinstance(parsed, Exception):
            error = error_message(parsed, self.constitution).message
            await respond(send, 400, error.model_dump_json(by_alias=True, exclude_unset=True).encode(),
                          "application/json")
            return

        async def replay() -> Message:
            return buffered.popleft() if buffered else await receive()

        await self.app(scope, replay, send)
