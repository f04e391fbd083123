"""What keeps the network transports safe:

* **bind**: loopback by default; a non-loopback bind is refused unless a bearer token is configured.
* **token**: with a token, every HTTP request carries `Authorization: Bearer TOKEN` (else 401, for every
  endpoint, /health included, answered as RFC 6750 says: an OAuth error body and a `WWW-Authenticate: Bearer`
  challenge, which MCP clients parse) and every TCP connection opens with the line `{"auth": "TOKEN"}`.
* **DNS rebinding**: every HTTP request's Host must name this server (loopback names, the bind host, or
  CONTEXTGRAPH_ALLOWED_HOSTS; else 421) and an Origin, when sent, must be http(s) on such a host or listed in
  CONTEXTGRAPH_ALLOWED_ORIGINS (else 403).
* **size and time**: HTTP bodies are limited to `transport.max_message_bytes`, TCP lines to the smaller
  `transport.tcp_max_line_bytes`; TCP connections, legacy SSE sessions and Streamable HTTP sessions are
  capped, and an HTTP request's head and body each have a deadline (tcp.py, sse.py, event_store.py,
  http_protocol.py, http_deadline.py).
"""

from __future__ import annotations

import ipaddress
import json
import re
import socket
from collections.abc import Callable
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from contextgraph.config import Settings, SettingsError
from contextgraph.security.tokens import bearer, token_matches
from contextgraph.transports.asgi import respond

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
_WILDCARD = ("0.0.0.0", "::", "")


def is_loopback(host: str) -> bool:
    host = host.strip("[]")
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:  # a name: every address it resolves to must be loopback
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(info[4][0]).is_loopback for info in infos)


def check_bind(settings: Settings) -> None:
    """Refuse a bind that would expose the memory to the network without a token."""
    if not settings.token and not is_loopback(settings.host):
        raise SettingsError(
            f"refusing to listen on {settings.host}: a non-loopback address needs a bearer token. Set "
            f"CONTEXTGRAPH_TOKEN (clients then send `Authorization: Bearer TOKEN` over HTTP, or the first line "
            f'{{"auth": "TOKEN"}} over TCP), or keep the default host 127.0.0.1.')


# What a Host header (or an Origin's authority) may hold: a DNS name, an IPv4 address or a bracketed IPv6
# address, then an optional numeric port. Anything else (userinfo `a@b`, paths, spaces) names no host here.
_HOST = re.compile(r"^(?:\[(?P<ipv6>[0-9a-f:.]+)\]|(?P<name>[a-z0-9_](?:[a-z0-9_.-]*[a-z0-9_])?))"
                   r"(?::(?P<port>[0-9]{1,5}))?$")


def _split_host(value: str) -> tuple[str, str | None] | None:
    """'[::1]:8000' → ('::1', '8000'); 'localhost' → ('localhost', None); None for what is no host[:port]."""
    match = _HOST.match(value.strip().lower())
    if match is None:
        return None
    return match["ipv6"] or match["name"], match["port"]


class HostRules:
    """The Host and Origin allow-lists for one server."""

    def __init__(self, settings: Settings) -> None:
        names = {*LOOPBACK_NAMES}
        if settings.host not in _WILDCARD:
            names.add(settings.host.strip("[]").lower())
        self.entries: list[tuple[str, str | None]] = [(n, None) for n in sorted(names)]
        for allowed in settings.allowed_hosts:
            entry = _split_host(allowed)
            if entry is None:
                raise SettingsError(f"CONTEXTGRAPH_ALLOWED_HOSTS: {allowed!r} is not a host or host:port")
            self.entries.append(entry)
        self.origins = {o.rstrip("/").lower() for o in settings.allowed_origins}

    def host_allowed(self, host: str | None) -> bool:
        if not host:
            return False
        parsed = _split_host(host)
        if parsed is None:
            return False
        name, port = parsed
        return any(name == n and (p is None or p == port) for n, p in self.entries)

    def origin_allowed(self, origin: str | None) -> bool:
        if origin is None:
            return True  # not a browser cross-origin request
        origin = origin.rstrip("/").lower()
        if origin in self.origins:
            return True
        parts = urlsplit(origin)
        return parts.scheme in ("http", "https") and bool(parts.netloc) and self.host_allowed(parts.netloc)


# A second way to present the token for some paths (the dashboard's session cookie): (scope, headers) → accepted.
AlternateCredential = Callable[[Scope, dict[str, str]], bool]
# What a refused request of some paths is told instead of the default (the dashboard's ?token=): scope → message.
RefusalMessage = Callable[[Scope], str | None]


class HttpGuard:
    """ASGI middleware in front of every HTTP endpoint: Host/Origin validation, then the bearer token (or, where
    `alternate` accepts the request, the credential it checks)."""

    def __init__(self, app: ASGIApp, settings: Settings, rules: HostRules,
                 alternate: AlternateCredential | None = None, refusal: RefusalMessage | None = None) -> None:
        self.app = app
        self.token = settings.token
        self.rules = rules
        self.alternate = alternate
        self.refusal = refusal

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if not self.rules.host_allowed(headers.get("host")):
            await respond(send, 421, b"Invalid Host header: this server answers only to the names it is configured "
                                     b"for (CONTEXTGRAPH_ALLOWED_HOSTS).")
            return
        if not self.rules.origin_allowed(headers.get("origin")):
            await respond(send, 403, b"Invalid Origin header: cross-origin requests are refused "
                                     b"(CONTEXTGRAPH_ALLOWED_ORIGINS lists the allowed ones).")
            return
        presented = bearer(headers.get("authorization"))
        if (self.token and not token_matches(presented, self.token)
                and not (self.alternate is not None and self.alternate(scope, headers))):
            message = self.refusal(scope) if self.refusal is not None else None
            await respond_unauthorized(send, sent_token=bool(presented), description=message)
            return
        await self.app(scope, receive, send)


_NO_TOKEN = ("this server takes a static bearer token, not OAuth: send `Authorization: Bearer <token>` (the "
             "server's CONTEXTGRAPH_TOKEN) on every request; there is no authorization server to register with")
_BAD_TOKEN = ("the bearer token is not this server's: send `Authorization: Bearer <token>` with the server's "
              "CONTEXTGRAPH_TOKEN (a static token, not OAuth: there is no authorization server)")
_NOT_IN_A_HEADER = re.compile(r'[^\x20-\x21\x23-\x5b\x5d-\x7e]')  # RFC 6750 error_description characters


async def respond_unauthorized(send: Send, *, sent_token: bool, description: str | None = None) -> None:
    """401 as RFC 6750 (section 3) has it, which is what MCP clients parse (their OAuth code reads the body as an
    OAuth error response): `{"error": "invalid_token" | "invalid_request", "error_description": ...}` and the
    same in `WWW-Authenticate: Bearer realm="contextgraph", error=..., error_description=...`. invalid_request when
    no bearer token came at all, invalid_token when one came and is wrong."""
    error = "invalid_token" if sent_token else "invalid_request"
    text = description or ("Unauthorized: " + (_BAD_TOKEN if sent_token else _NO_TOKEN) + ".")
    body = json.dumps({"error": error, "error_description": text}).encode()
    quoted = _NOT_IN_A_HEADER.sub("'", text)
    challenge = f'Bearer realm="contextgraph", error="{error}", error_description="{quoted}"'
    await respond(send, 401, body, "application/json", [(b"www-authenticate", challenge.encode("ascii")),
                                                        (b"cache-control", b"no-store")])
