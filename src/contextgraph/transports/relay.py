"""The relay between a line-oriented wire (stdio, a TCP connection) and the SDK's Server streams.

It adds what scripts and raw-socket clients need on every line transport:

* **drain on EOF**: `printf '…' | contextgraph serve` (or a TCP client that half-closes after its last line)
  ends the input right after the last request. The SDK cancels in-flight handlers when its read stream ends,
  so answers were lost. The relay holds the server's read side open until every request it forwarded has
  been answered (bounded by `transport.stdio_drain_seconds`).
* **errors answered**: a line that is not JSON-RPC gets a -32700 error (id null); a line over the size limit
  and a request whose id is not a string or an integer get a -32600 error (id null), instead of silence; the
  wire stays usable.
"""

from __future__ import annotations

import anyio
import mcp.types as types
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from mcp.shared.message import SessionMessage

from contextgraph.constitution import Constitution
from contextgraph.log import get_logger

_log = get_logger("server")


class MessageTooLarge(Exception):
    """A wire message longer than the limit; it was discarded unread."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"message longer than {limit} bytes")
        self.limit = limit


class InvalidEnvelope(Exception):
    """A JSON-RPC request the SDK would misread (e.g. its id is an object): answered -32600, id null."""


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
    else:
        entry = constitution.error("PARSE_ERROR")
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        error = types.ErrorData(code=entry.code, message=f"Parse error: not a JSON-RPC message ({detail[:200]})",
                                data={"hint": entry.hint})
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
