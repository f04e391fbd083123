"""Helpers for the transport tests: the server started in-process on ephemeral ports, an SDK client transport
for newline-delimited TCP (the SDK has none), and small raw-wire helpers."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import mcp.types as types
from mcp.shared.message import SessionMessage

from contextgraph.app import App
from contextgraph.transports.network import Listening, serve_network
from contextgraph.transports.wire import MessageTooLarge, read_lines

INIT = {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "pytest", "version": "1"}}
PULSE_FIELDS = {"entropy", "coherence", "learning_score", "quadrant", "suggested_action"}


def net_env(**extra: str) -> dict[str, str]:
    """Settings for a server on ephemeral ports with short SSE timings."""
    return {"CONTEXTGRAPH_PORT": "0", "CONTEXTGRAPH_HTTP_PORT": "0", "CONTEXTGRAPH_SSE_HEARTBEAT": "0.2",
            "CONTEXTGRAPH_SSE_GRACE": "5", **extra}


@asynccontextmanager
async def serving(app: App, kinds: tuple[str, ...] = ("tcp", "http")) -> AsyncIterator[Listening]:
    async with anyio.create_task_group() as tg:
        listening = await tg.start(serve_network, app, kinds)
        try:
            yield listening
        finally:
            tg.cancel_scope.cancel()


def list_changed_watch() -> tuple[anyio.Event, Any]:
    """(event, message_handler): the event is set when notifications/tools/list_changed arrives."""
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    return changed, on_message


def http_base(listening: Listening) -> str:
    host, port = listening.http
    return f"http://{host}:{port}"


@asynccontextmanager
async def tcp_transport(host: str, port: int, token: str | None = None):
    """An `mcp` client Transport over newline-delimited TCP (optionally opening with the auth line)."""
    stream = await anyio.connect_tcp(host, port)
    read_send, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_receive = anyio.create_memory_object_stream[SessionMessage](0)

    async def reader() -> None:
        async with read_send:
            async for line in read_lines(stream, 1 << 24):
                if isinstance(line, MessageTooLarge):
                    await read_send.send(line)
                    continue
                try:
                    message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                except Exception as exc:
                    await read_send.send(exc)
                    continue
                await read_send.send(SessionMessage(message))

    async def writer() -> None:
        async with write_receive:
            async for item in write_receive:
                await stream.send((item.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode())

    async with stream, anyio.create_task_group() as tg:
        if token is not None:
            await stream.send(json.dumps({"auth": token}).encode() + b"\n")
        tg.start_soon(reader)
        tg.start_soon(writer)
        try:
            yield read_stream, write_stream
        finally:
            tg.cancel_scope.cancel()


class RawLines:
    """A raw TCP connection speaking JSON lines, for malformed input and limits."""

    def __init__(self, stream: anyio.abc.SocketStream) -> None:
        self.stream = stream
        self.lines = read_lines(stream, 1 << 24)

    @classmethod
    @asynccontextmanager
    async def connect(cls, host: str, port: int) -> AsyncIterator[RawLines]:
        async with await anyio.connect_tcp(host, port) as stream:
            yield cls(stream)

    async def send(self, message: Any) -> None:
        data = message if isinstance(message, (str, bytes)) else json.dumps(message)
        await self.stream.send((data.encode() if isinstance(data, str) else data) + b"\n")

    async def receive(self, timeout: float = 10) -> dict[str, Any] | None:
        with anyio.fail_after(timeout):
            line = await anext(self.lines, None)
        return None if line is None else json.loads(line)


def request(id_: int, method: str, params: dict | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        message["params"] = params
    return message


def tool_call(id_: int, name: str, arguments: dict | None = None, **params: Any) -> dict[str, Any]:
    return request(id_, "tools/call", {"name": name, "arguments": arguments or {}, **params})


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


async def open_http_session(http: httpx2.AsyncClient, version: str = "2025-06-18") -> dict[str, str]:
    """A Streamable HTTP session opened the handshake way (initialize, then initialized): the headers that name it."""
    initialize = request(1, "initialize", {**INIT, "protocolVersion": version})
    opened = await http.post("/mcp", headers=ACCEPT, json=initialize)
    assert opened.status_code == 200, opened.text
    headers = {**ACCEPT, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": version}
    assert (await http.post("/mcp", headers=headers, json=INITIALIZED)).status_code == 202
    return headers


class SseEvents:
    """Parses a text/event-stream response into (event, id, data) tuples."""

    def __init__(self, response: httpx2.Response) -> None:
        self.lines = response.aiter_lines()

    async def next(self, timeout: float = 10) -> tuple[str, str | None, str]:
        event, event_id, data = "message", None, []
        with anyio.fail_after(timeout):
            async for line in self.lines:
                if not line:
                    if data or event != "message":
                        return event, event_id, "\n".join(data)
                    continue
                field, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if field == "event":
                    event = value
                elif field == "id":
                    event_id = value
                elif field == "data":
                    data.append(value)
        raise EOFError("the stream ended")

    async def next_message(self, timeout: float = 10) -> tuple[str | None, dict[str, Any]]:
        """The next `message` event (skipping heartbeats and priming events), as (id, JSON)."""
        while True:
            event, event_id, data = await self.next(timeout)
            if event == "message" and data:
                return event_id, json.loads(data)
