"""stdio: newline-delimited JSON-RPC on stdin/stdout (stdout carries only protocol bytes; logs go to stderr).

The SDK's stdio_server owns the file descriptors; this module puts a small relay between it and the Server that
adds what scripts need:

* **drain on EOF**: `printf '…' | contextgraph serve` closes stdin right after the last request. The SDK cancels
  in-flight handlers when its read stream ends, so answers were lost. The relay holds the server's read side
  open until every request it forwarded has been answered (bounded by `transport.stdio_drain_seconds`).
* **parse errors answered**: a line that is not JSON-RPC gets a -32700 error (id null) instead of silence.
"""

from __future__ import annotations

import anyio
import mcp.types as types
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from contextgraph.app import App
from contextgraph.log import get_logger
from contextgraph.server import build_server

_log = get_logger("server")


class _Pending:
    """Ids of client requests forwarded to the server and not yet answered."""

    def __init__(self) -> None:
        self.ids: set[object] = set()
        self.changed = anyio.Event()

    def add(self, request_id: object) -> None:
        self.ids.add(request_id)

    def discard(self, request_id: object) -> None:
        self.ids.discard(request_id)
        self.changed.set()
        self.changed = anyio.Event()

    async def wait_empty(self) -> None:
        while self.ids:
            await self.changed.wait()


def _parse_error(exc: Exception, parse_code: int) -> SessionMessage:
    detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    error = types.ErrorData(code=parse_code, message=f"Parse error: not a JSON-RPC message ({detail[:200]})")
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=None, error=error))


async def relay_stdio(
    wire_in: ObjectReceiveStream[SessionMessage | Exception],
    wire_out: ObjectSendStream[SessionMessage],
    server_in: ObjectSendStream[SessionMessage | Exception],
    server_out: ObjectReceiveStream[SessionMessage],
    *,
    drain_seconds: float,
    parse_code: int,
) -> None:
    """Forward wire → server and server → wire, tracking request ids; returns when both directions are done."""
    pending = _Pending()

    async def inbound() -> None:
        async with server_in:
            async for item in wire_in:
                if isinstance(item, Exception):
                    await wire_out.send(_parse_error(item, parse_code))
                    continue
                message = item.message
                if isinstance(message, types.JSONRPCRequest):
                    pending.add(message.id)
                await server_in.send(item)
            with anyio.move_on_after(drain_seconds) as scope:
                await pending.wait_empty()
            if scope.cancelled_caught:
                _log.warning("stdin closed with requests unanswered", unanswered=len(pending.ids))

    async def outbound() -> None:
        async with wire_out:
            async for item in server_out:
                message = item.message
                if isinstance(message, (types.JSONRPCResponse, types.JSONRPCError)):
                    await wire_out.send(item)
                    pending.discard(message.id)
                else:
                    await wire_out.send(item)

    async with anyio.create_task_group() as tg:
        tg.start_soon(inbound)
        tg.start_soon(outbound)


async def serve_stdio(app: App) -> None:
    server = build_server(app)
    drain = float(app.constitution.get("transport.stdio_drain_seconds"))
    parse_code = app.constitution.error("PARSE_ERROR").code
    server_in, server_read = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    server_write, server_out = anyio.create_memory_object_stream[SessionMessage](0)
    try:
        async with stdio_server() as (wire_in, wire_out), anyio.create_task_group() as tg:
            tg.start_soon(lambda: relay_stdio(wire_in, wire_out, server_in, server_out,
                                              drain_seconds=drain, parse_code=parse_code))
            await server.run(server_read, server_write, server.create_initialization_options())
    finally:
        await anyio.to_thread.run_sync(app.memory.close)  # saves the indexes; the store is already durable
