"""stdio: newline-delimited JSON-RPC on stdin/stdout (stdout carries only protocol bytes; logs go to stderr).

The SDK's stdio_server owns the file descriptors; the relay (transports/relay.py) sits between it and the
Server: it drains in-flight requests when stdin closes and answers non-JSON lines with -32700.
"""

from __future__ import annotations

import anyio
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from contextgraph.app import App
from contextgraph.server import build_server
from contextgraph.transports.relay import relay


async def serve_stdio(app: App) -> None:
    server = build_server(app)
    drain = float(app.constitution.get("transport.stdio_drain_seconds"))
    server_in, server_read = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    server_write, server_out = anyio.create_memory_object_stream[SessionMessage](0)
    try:
        async with stdio_server() as (wire_in, wire_out), anyio.create_task_group() as tg:
            tg.start_soon(lambda: relay(wire_in, wire_out, server_in, server_out,
                                        drain_seconds=drain, constitution=app.constitution))
            await server.run(server_read, server_write, server.create_initialization_options())
    finally:
        await anyio.to_thread.run_sync(app.memory.close)  # saves the indexes; the store is already durable
