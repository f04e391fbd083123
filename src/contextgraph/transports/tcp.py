"""TCP: newline-delimited JSON-RPC, one MCP session per connection, every connection served by the same Server
over the same App.

Per connection, as on stdio (the same relay): a line that is not JSON gets a -32700 reply (one that is JSON
but no single JSON-RPC message, -32600) and the connection stays usable; a line over
`transport.tcp_max_line_bytes` is discarded unread and answered with -32600; when the client half-closes, the
requests in flight are still answered before the connection closes.

What clients can hold is bounded: each connection buffers at most `tcp_max_line_bytes` of an unfinished line
(smaller than the 4 MiB message limit: no tool call comes near it), and at most `tcp_max_connections` are
served at once; one more gets a single error line saying so and is closed, so stalled connections can cost
no more than their product.

A connection whose first line is an HTTP request line or header (`POST / HTTP/1.1`, `Host: ...`) is closed
without running anything: that is what a web page's `fetch` (a text/plain POST needs no CORS preflight)
sends, and its body could otherwise carry JSON-RPC lines that would run (a cross-site write to the memory).

With a token configured, the first line must be `{"auth": "TOKEN"}`; anything else is answered with a -32600
"Unauthorized" error and the connection is closed. Nothing is answered to a good auth line, so a client may
send its auth line and its first requests at once.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator

import anyio
import mcp.types as types
from anyio.abc import ByteStream, SocketAttribute, SocketListener, TaskStatus
from mcp.shared.message import SessionMessage

from contextgraph.app import App
from contextgraph.log import get_logger
from contextgraph.security.tokens import token_matches
from contextgraph.server import ContextGraphServer
from contextgraph.transports.relay import serve_lines
from contextgraph.transports.wire import DISCONNECTED, MessageTooLarge, looks_like_http, read_lines

_log = get_logger("server")
# Answered to an HTTP request that reached the TCP port, then the connection is closed. No CORS headers: a
# page that sent it cannot read it; curl users learn where they are.
_NOT_HTTP = (b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n"
             b"Content-Length: %d\r\n\r\n%s")
_NOT_HTTP_BODY = (b"This is ContextGraph's TCP port: newline-delimited JSON-RPC, not HTTP. Nothing was run. "
                  b"HTTP clients use /mcp on the HTTP port.\n")


def _is_auth_line(line: bytes | MessageTooLarge, token: str) -> bool:
    if isinstance(line, MessageTooLarge):
        return False
    try:
        presented = json.loads(line)
    except ValueError:
        return False
    auth = presented.get("auth") if isinstance(presented, dict) else None
    return isinstance(auth, str) and token_matches(auth, token)  # a missing or null auth is no string "None"


class TcpServer:
    def __init__(self, app: App, server: ContextGraphServer, *, limit: int | None = None,
                 max_connections: int | None = None) -> None:
        c = app.constitution
        self.app = app
        self.server = server
        self.limit = limit or int(c.get("transport.tcp_max_line_bytes"))
        self.max_connections = max_connections or int(c.get("transport.tcp_max_connections"))
        self.drain = float(c.get("transport.stdio_drain_seconds"))
        self.connections = 0

    async def serve(self, listener: SocketListener, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
                    ) -> None:
        async with listener:
            task_status.started()
            await listener.serve(self.handle)

    async def handle(self, stream: ByteStream) -> None:
        if self.connections >= self.max_connections:
            await self._refuse(stream)
            return
        self.connections += 1
        peer = _peer(stream)
        _log.debug("tcp connection opened", peer=peer)
        try:
            async with stream:
                await self._session(stream)
        except Exception:  # one connection's failure never reaches the listener
            _log.exception("tcp connection failed", peer=peer)
        finally:
            self.connections -= 1
            _log.debug("tcp connection closed", peer=peer)

    async def _refuse(self, stream: ByteStream) -> None:
        _log.warning("tcp connection refused: too many open", peer=_peer(stream), open=self.connections,
                     max=self.max_connections)
        entry = self.app.constitution.error("INTERNAL_ERROR")
        error = types.ErrorData(
            code=entry.code,
            message=f"Too many connections: this server serves at most {self.max_connections} TCP connections at "
                    f"once and all are in use. Nothing was run; close an idle connection or retry shortly.",
            data={"max_connections": self.max_connections, "hint": "Retry when another connection has closed."})
        async with stream:
            with anyio.move_on_after(1), contextlib.suppress(*DISCONNECTED):
                await _write(stream, SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=None, error=error)))

    async def _session(self, stream: ByteStream) -> None:
        lines = read_lines(stream, self.limit)
        first = await _first_line(lines)
        if first is None:
            return
        if not isinstance(first, MessageTooLarge) and looks_like_http(first):
            _log.warning("tcp connection refused: it speaks HTTP (a web page or an HTTP client on the TCP port); "
                         "closed without running anything", peer=_peer(stream))
            with anyio.move_on_after(1), contextlib.suppress(*DISCONNECTED):
                await stream.send(_NOT_HTTP % (len(_NOT_HTTP_BODY), _NOT_HTTP_BODY))
            return
        token = self.app.settings.token
        if token:
            if not _is_auth_line(first, token):
                await _write(stream, _unauthorized(self.app))
                return
        else:  # no auth line to consume: the first line is the first message
            lines = _chain(first, lines)
        await serve_lines(self.server, lines, stream.send, drain_seconds=self.drain,
                          constitution=self.app.constitution)


async def _first_line(lines: AsyncIterator[bytes | MessageTooLarge]) -> bytes | MessageTooLarge | None:
    """The first line that is not blank, or None at EOF."""
    async for line in lines:
        if isinstance(line, MessageTooLarge) or line.strip():
            return line
    return None


async def _chain(first: bytes | MessageTooLarge, rest: AsyncIterator[bytes | MessageTooLarge]
                 ) -> AsyncIterator[bytes | MessageTooLarge]:
    yield first
    async for line in rest:
        yield line


async def _write(stream: ByteStream, item: SessionMessage) -> None:
    data = item.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
    await stream.send(data.encode())


def _unauthorized(app: App) -> SessionMessage:
    entry = app.constitution.error("INVALID_REQUEST")
    error = types.ErrorData(code=entry.code, message='Unauthorized: this server requires the first line '
                                                     '{"auth": "<token>"} on every connection.')
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=None, error=error))


def _peer(stream: ByteStream) -> str:
    try:
        address = stream.extra(SocketAttribute.remote_address)
    except Exception:
        return "?"
    return f"{address[0]}:{address[1]}" if isinstance(address, tuple) else str(address)
