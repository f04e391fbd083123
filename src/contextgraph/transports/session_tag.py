"""Which worker a session lives in, written into the session's own id (`serve --workers N`, README).

A Streamable HTTP or legacy SSE session is state in one process: its transport, its event store, its stream;
so is a discover-era client's identity (its scratchpad, its session-only context). With several workers the
front process (transports/worker_pool.py) must hand every connection that carries one to the worker that made
it, and it sees nothing but the request's head. So a worker ends each session id and client cookie it mints
with `-w<index>`, and the front reads that suffix from the `Mcp-Session-Id` header, the `session_id` query
parameter or the client cookie. A single-process server mints them as before (no suffix).
"""

from __future__ import annotations

import re

_worker: int | None = None  # this process's worker index; None when it serves alone

_SUFFIX = re.compile(r"-w(\d{1,4})$")
# in a request head: the header (any case), or the legacy SSE POST's query parameter
_HEADER = re.compile(rb"^mcp-session-id:[ \t]*([!-~]+)[ \t]*\r?$", re.IGNORECASE | re.MULTILINE)
COOKIE = "contextgraph_client"  # a discover-era client's identity (transports/client_identity.py)
_COOKIE = re.compile(rb"^cookie:[^\r\n]*?\b" + COOKIE.encode() + rb"=([0-9a-f]{32}-w\d{1,4})\b",
                     re.IGNORECASE | re.MULTILINE)
_QUERY = re.compile(rb"^[A-Z]+ [^ ?]*\?(?:[^ ]*&)?session_id=([0-9A-Za-z-]+)", re.IGNORECASE)


def set_worker(index: int | None) -> None:
    """Called once at start by a worker of a pool."""
    global _worker
    _worker = index


def worker() -> int | None:
    return _worker


def tagged(session_id: str) -> str:
    """`session_id` with this worker's suffix (unchanged in a server that runs alone)."""
    return session_id if _worker is None else f"{session_id}-w{_worker}"


def worker_of(session_id: str) -> int | None:
    found = _SUFFIX.search(session_id)
    return int(found.group(1)) if found else None


def worker_of_head(head: bytes) -> int | None:
    """The worker that owns the session a request head names, or None when it names none (a new session, a
    health check, the dashboard): then any worker may serve it."""
    found = _HEADER.search(head) or _QUERY.search(head) or _COOKIE.search(head)
    return worker_of(found.group(1).decode("ascii")) if found else None
