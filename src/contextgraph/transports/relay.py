"""The relay between a line-oriented wire (stdio, a TCP connection) and the SDK's Server streams.

It adds what scripts and raw-socket clients need on every line transport:

* **drain on EOF**: `printf '…' | contextgraph serve` (or a TCP client that half-closes after its last line)
  ends the input right after the last request. The SDK cancels in-flight handlers when its read stream ends,
  so answers were lost. The relay holds the server's read side open until every request it forwarded has
  been answered (bounded by `transport.stdio_drain_seconds`).
* **errors answered**: a line that is not JSON gets a -32700 error (id null); a line over the size limit, a
  batch, JSON that is no JSON-RPC message and a request whose id is not a string or an integer get a -32600
  error (id null), instead of silence; the wire stays usable. Neither quotes Python's own error text.

`serve_lines` runs one whole session over such a wire: stdio and every TCP connection use it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import anyio
import mcp.types as types
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from mcp.server import Server
from mcp.shared.message import SessionMessage

from contextgraph.constitution import Constitution
from contextgraph.log import get_logger
from contextgraph.transports.wire import DISCONNECTED, InvalidEnvelope, MessageTooLarge, NotJson, parse_message

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


def error_message(exc: Exception, constitution: Constitution) -> SessionMessage:
    """The JSON-RPC error (id null) answering a wire item the server never saw."""
    if isinstance(exc, MessageTooLarge):
        entry = constitution.error("INVALID_REQUEST")
        error = types.ErrorData(
            code=entry.code,
            message=f"Request too large: one message may hold at most {exc.limit} bytes; this one was discarded. "
                    f"Send smaller messages.",
            data={"max_bytes": exc.limit, "hint": entry.hint},
        )
    elif isinstance(exc, InvalidEnvelope):
        entry = constitution.error("INVALID_REQUEST")
        error = types.ErrorData(code=entry.code, message=f"Invalid request: {exc}.", data={"hint": entry.hint})
    else:  # NotJson says why in its own words; anything else is described without Python's
        entry = constitution.error("PARSE_ERROR")
        detail = str(exc) if isinstance(exc, NotJson) else "not valid JSON"
        error = types.ErrorData(code=entry.code, message=f"Parse error: {detail}.", data={"hint": entry.hint})
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=None, error=error))


async def relay(
    wire_in: ObjectReceiveStream[SessionMessage | Exception],
    wire_out: ObjectSendStream[SessionMessage],
    server_in: ObjectSendStream[SessionMessage | Exception],
    server_out: ObjectReceiveStream[SessionMessage],
    *,
    drain_seconds: float,
    constitution: Constitution,
) -> None:
    """Forward wire → server and server → wire, tracking request ids; returns when both directions are done."""
    pending = _Pending()

    async def inbound() -> None:
        async with server_in:
            async for item in wire_in:
                if isinstance(item, Exception):
                    await wire_out.send(error_message(item, constitution))
                    continue
                message = item.message
                if isinstance(message, types.JSONRPCRequest):
                    pending.add(message.id)
                await server_in.send(item)
            with anyio.move_on_after(drain_seconds) as scope:
                await pending.wait_empty()
            if scope.cancelled_caught:
                _log.warning("input closed with requests unanswered", unanswered=len(pending.ids))

    async def outbound() -> None:
        async with wire_out:
            async for item in server_out:
                message = item.message
                await wire_out.send(item)
                if isinstance(message, (types.JSONRPCResponse, types.JSONRPCError)):
                    pending.discard(message.id)

    async with anyio.create_task_group() as tg:
        tg.start_soon(inbound)
        tg.start_soon(outbound)


async def serve_lines(server: Server, lines: AsyncIterator[bytes | MessageTooLarge],
                      write: Callable[[bytes], Awaitable[None]], *, drain_seconds: float,
                      constitution: Constitution) -> None:
    """One MCP session over a line wire: `lines` in (see wire.read_lines), `write` out (one encoded message
    and its newline per call). Returns when the input has ended and every answer is written, or at once
    when `write` finds the peer gone."""
    wire_in_send, wire_in = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    wire_out, wire_out_receive = anyio.create_memory_object_stream[SessionMessage](0)
    server_in, server_read = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    server_write, server_out = anyio.create_memory_object_stream[SessionMessage](0)

    async def receive() -> None:
        async with wire_in_send:
            async for line in lines:
                if isinstance(line, MessageTooLarge):
                    await wire_in_send.send(line)
                elif line.strip():
                    await wire_in_send.send(parse_message(line))

    async def send(scope: anyio.CancelScope) -> None:
        async with wire_out_receive:
            try:
                async for item in wire_out_receive:
                    await write((item.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode())
            except DISCONNECTED:
                scope.cancel()  # the peer is gone: nothing more can be answered

    async with anyio.create_task_group() as tg:
        tg.start_soon(receive)
        tg.start_soon(send, tg.cancel_scope)
        tg.start_soon(lambda: relay(wire_in, wire_out, server_in, server_out, drain_seconds=drain_seconds,
                                    constitution=constitution))
        await server.run(server_read, server_write, server.create_initialization_options())
        await server_write.aclose()  # lets the relay and the writer flush the last answers, then end
