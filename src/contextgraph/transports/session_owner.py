"""Who owns a Streamable HTTP session: the principal and the peer address of the request that opened it.

A session id is a bearer handle: without more, anyone who learns it (a log, a screen, a proxy) can read and
clear that session's scratchpad, read its session-only context and DELETE it. The SDK already refuses a
session to any request whose `scope["user"]` names another principal than the one that opened it (answered
404, exactly as an unknown session), but only when an authentication layer puts a user there. This
middleware does: every /mcp request gets a user whose identity is a keyed digest of its principal (the
configured token, or none) and its peer address, so a session answers only to requests from where it was
opened, with its credential.

The same digest rides in the scope (`OWNER_SCOPE_KEY`) for server.session_key: a discover-era client
cookie presented from elsewhere names a different, empty session, and only requests that came through here
(and so through the SDK's check) may name their session by the `Mcp-Session-Id` header.
"""

from __future__ import annotations

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.types import ASGIApp, Receive, Scope, Send

from contextgraph.security.session_label import LABELS
from contextgraph.server import OWNER_SCOPE_KEY


def owner_of(scope: Scope, token: str | None) -> str:
    """The keyed digest of a request's principal and peer host (not its port: a client opens several
    connections for one session, the GET stream beside its POSTs)."""
    client = scope.get("client")
    peer = str(client[0]) if client else ""
    return LABELS.fingerprint("token" if token else "anonymous", token or "", peer)


class SessionOwner:
    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        owner = owner_of(scope, self.token)
        user = AuthenticatedUser(AccessToken(token="", client_id=owner, scopes=[]))
        await self.app({**scope, "user": user, OWNER_SCOPE_KEY: owner}, receive, send)
