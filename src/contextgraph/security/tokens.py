"""The bearer token: reading it from an Authorization header and comparing it in constant time. Shared by every
place that checks the server's token (the HTTP guard, the TCP auth line, the dashboard's cookie), none of which
should depend on another for it."""

from __future__ import annotations

import hmac


def token_matches(presented: str | None, token: str) -> bool:
    return presented is not None and hmac.compare_digest(presented.encode(), token.encode())


def bearer(header: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, None for any other scheme or none at all."""
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" else None
