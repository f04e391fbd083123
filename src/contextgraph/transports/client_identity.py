"""Who a discover-era (MCP 2026-07-28) Streamable HTTP request comes from.

In that era every POST stands alone: no `initialize`, no `Mcp-Session-Id`, and the SDK serves each request on
a fresh connection object whose outbound channel is one shared "no channel" sentinel, so every discover-mode
HTTP client had the same session key: they read each other's temporary_scratchpad and
get_recent_context(session_only) mixed them.

Each discover-era request is given a client identity here: the `contextgraph_client` cookie it presents, or a
new random one (128 bits) that the response sets as that cookie. HTTP clients that keep cookies (the `mcp`
SDK's httpx client does) then keep one identity across requests and connections, like a handshake-era
session; a client that keeps none gets a new identity on every request: isolated, never mixed, with no
session state carried between its calls. HttpOnly and SameSite=Strict: a web page can neither read it nor
make a browser send it cross-site (and the Host/Origin guard refuses such requests anyway).

The identity rides in the ASGI scope (`CLIENT_SCOPE_KEY`), where server.session_key reads it from the
request the SDK hands the handler.
"""

from __future__ import annotations

import re
import secrets
from http.cookies import SimpleCookie

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from contextgraph.server import CLIENT_SCOPE_KEY
from contextgraph.transports.session_tag import COOKIE, tagged

_VALID = re.compile(r"^[0-9a-f]{32}(-w[0-9]{1,4})?$")  # a pool's worker names itself (session_tag.py)


def _header(scope: Scope, name: bytes) -> str | None:
    return next((v.decode("latin-1") for k, v in scope["headers"] if k == name), None)


def _discover_era(scope: Scope) -> bool:
    """The SDK's own routing rule: a protocol-version header naming no handshake-era version."""
    version = _header(scope, b"mcp-protocol-version")
    return version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS


def _presented(scope: Scope) -> str | None:
    raw = _header(scope, b"cookie")
    if not raw:
        return None
    cookie = SimpleCookie()
    try:
        cookie.load(raw)
    except Exception:  # a malformed Cookie header is the client's problem, not a reason to fail the call
        return None
    morsel = cookie.get(COOKIE)
    return morsel.value if morsel is not None and _VALID.match(morsel.value) else None


class ClientIdentity:
    """ASGI middleware for /mcp: puts a discover-era request's client identity in its scope."""

    def __init__(self, app: ASGIApp, path: str = "/mcp") -> None:
        self.app = app
        self.set_cookie = (f"{COOKIE}={{}}; Path={path}; HttpOnly; SameSite=Strict").encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _discover_era(scope):
            await self.app(scope, receive, send)
            return
        identity = _presented(scope)
        if identity is not None:
            await self.app({**scope, CLIENT_SCOPE_KEY: identity}, receive, send)
            return
        identity = tagged(secrets.token_hex(16))
        cookie = self.set_cookie.replace(b"{}", identity.encode())

        async def send_with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), (b"set-cookie", cookie)]}
            await send(message)

        await self.app({**scope, CLIENT_SCOPE_KEY: identity}, receive, send_with_cookie)
