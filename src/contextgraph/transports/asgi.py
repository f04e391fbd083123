"""Small raw-ASGI helpers shared by the HTTP endpoints that do not go through Starlette's Request/Response."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.types import Receive, Scope, Send


class AsgiEndpoint:
    """Starlette calls a plain function or bound method with a Request; an instance is mounted as raw ASGI."""

    def __init__(self, handler: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.handler = handler

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.handler(scope, receive, send)


async def respond(send: Send, status: int, body: bytes, content_type: str = "text/plain; charset=utf-8",
                  extra: list[tuple[bytes, bytes]] | None = None) -> None:
    headers = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode()),
               *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def respond_rpc_error(send: Send, status: int, request_id: Any, code: int, message: str,
                            data: dict[str, Any] | None = None, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    """A JSON-RPC error object as the body of an HTTP response."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    body = json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode()
    await respond(send, status, body, "application/json", extra)
