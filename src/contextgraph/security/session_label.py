"""Opaque labels for the sessions that memories and per-session state are filed under.

A transport's own session handle (a Streamable HTTP `Mcp-Session-Id`, a discover-era client cookie) is a
bearer secret: whoever presents it is that session. Memory records are readable by every client
(get_recent_context, search_graph), so what they carry must not be that secret. A label is a keyed hash of
the handle (HMAC-SHA256 under a key made at start and never written anywhere): the same handle always gets
the same label within one server process, and a label can be neither turned back into the handle nor
presented as one (the transports look sessions up by their raw handle only).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

# What label() makes; a client may not file memories under such a label unless it is its own session's.
_LABEL = re.compile(r"^[a-z]+:[0-9a-f]{32}$")


def is_session_label(value: str) -> bool:
    return _LABEL.match(value) is not None


class SessionLabels:
    def __init__(self, key: bytes | None = None) -> None:
        self._key = key if key is not None else secrets.token_bytes(32)

    def label(self, kind: str, handle: str) -> str:
        """`kind:<32 hex>`; `kind` says which transport the session came from (http, client, conn, ...)."""
        digest = hmac.new(self._key, f"{kind}\0{handle}".encode(), hashlib.sha256).hexdigest()
        return f"{kind}:{digest[:32]}"

    def fingerprint(self, *parts: str) -> str:
        """A keyed digest of who a request comes from (principal, peer address): comparable, not readable."""
        return hmac.new(self._key, "\0".join(parts).encode(), hashlib.sha256).hexdigest()[:32]


# One key per process: session handles live only as long as the process that issued them.
LABELS = SessionLabels()
