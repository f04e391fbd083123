"""stdio: newline-delimited JSON-RPC on stdin/stdout (stdout carries only protocol bytes; logs go to stderr)."""

from __future__ import annotations

from mcp.server.stdio import stdio_server

from contextgraph.app import App
from contextgraph.server import build_server


async def serve_stdio(app: App) -> None:
    server = build_server(app)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
