"""`contextgraph call TOOL ['{json}']`: one tool call from a shell, through a running server when one answers
on the configured TCP address, otherwise in this process through the same dispatcher (App + dispatcher.call).

The TCP client is plain sockets and the in-process path builds the App without the `mcp` SDK, so a call from a
hook costs little more than the tool itself (plus the model load, in-process, for tools that embed). `connect`
gives a caller for several calls over one connection (or one in-process App): hooks search before they store.
"""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from contextgraph import __version__
from contextgraph.config import Settings


@dataclass
class CallResult:
    ok: bool
    via: str  # "tcp://host:port" or "in-process"
    payload: dict[str, Any] | None = None  # the tool's payload, pulse included
    code: int | None = None
    message: str | None = None
    data: dict[str, Any] = field(default_factory=dict)


class ServerUnavailable(Exception):
    """Nothing that speaks our protocol answered before the tool call was sent: safe to run it in-process."""


class _Lines:
    """Newline-delimited JSON over a socket, each read bounded by a deadline."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.reader = sock.makefile("rb")

    def send(self, message: dict[str, Any]) -> None:
        self.sock.sendall(json.dumps(message).encode() + b"\n")

    def answer(self, request_id: Any, deadline: float) -> dict[str, Any]:
        """The response to `request_id` (or an id-less error, which the server sends before closing);
        notifications (progress, list_changed) are skipped."""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no answer in time")
            self.sock.settimeout(remaining)
            line = self.reader.readline()
            if not line:
                raise ConnectionError("the server closed the connection")
            message = json.loads(line)
            if not isinstance(message, dict):
                raise ValueError("not a JSON-RPC message")
            if message.get("id") == request_id or ("error" in message and message.get("id") is None):
                return message


class RemoteSession:
    """One connection to a running server, initialized once, for one or more tool calls (a hook that searches
    before it stores pays for one connect and one handshake)."""

    def __init__(self, sock: socket.socket, via: str, timeout_seconds: float) -> None:
        self.sock = sock
        self.wire = _Lines(sock)
        self.via = via
        self.timeout_seconds = timeout_seconds
        self.refused: CallResult | None = None  # the server answered initialize with an error
        self._next_id = 2

    @classmethod
    def open(cls, settings: Settings, *, connect_seconds: float, timeout_seconds: float,
             protocol_version: str) -> RemoteSession:
        """Raises ServerUnavailable when no ContextGraph server answers (nothing was called)."""
        via = f"tcp://{settings.host}:{settings.port}"
        try:
            sock = socket.create_connection((settings.host, settings.port), timeout=connect_seconds)
        except OSError as exc:
            raise ServerUnavailable(str(exc)) from None
        session = cls(sock, via, timeout_seconds)
        try:
            if settings.token:
                session.wire.send({"auth": settings.token})
            session.wire.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": protocol_version, "capabilities": {},
                "clientInfo": {"name": "contextgraph-call", "version": __version__}}})
            opened = session.wire.answer(1, time.monotonic() + max(connect_seconds, 5.0))
            if "error" not in opened:
                session.wire.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        except (OSError, ValueError) as exc:  # refused, reset, timed out, or not JSON: not our server
            session.close()
            raise ServerUnavailable(str(exc)) from None
        if "error" in opened:  # a ContextGraph server that refuses us (e.g. the token): report, do not fall back
            session.refused = _failed(opened["error"], via)
        return session

    def call(self, tool: str, arguments: dict[str, Any]) -> CallResult:
        if self.refused is not None:
            return self.refused
        request_id, self._next_id = self._next_id, self._next_id + 1
        try:
            self.wire.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                            "params": {"name": tool, "arguments": arguments}})
            answer = self.wire.answer(request_id, time.monotonic() + self.timeout_seconds)
        except (OSError, ValueError) as exc:
            # The call was sent and may have run: never repeat it in-process.
            self.refused = CallResult(False, self.via, code=None,
                                      message=f"lost the server at {self.via} during the call ({exc}); the call "
                                              "may or may not have run")
            return self.refused
        if "error" in answer:
            return _failed(answer["error"], self.via)
        result = answer.get("result") or {}
        payload = result.get("structuredContent")
        text = next((c.get("text") for c in result.get("content", []) if c.get("type") == "text"), None)
        if result.get("isError"):  # sessions from 2025-11-25 on: a refusal is a tool result the model can read
            data = payload if isinstance(payload, dict) else {}
            return CallResult(False, self.via, code=data.get("code"), message=data.get("message") or text,
                              data={**data, "error": data.get("name") or data.get("error")})
        if payload is None:  # a server without structured output: the payload is the text item
            payload = json.loads(text or "{}")
        return CallResult(True, self.via, payload=payload)

    def close(self) -> None:
        try:
            self.wire.reader.close()
        finally:
            self.sock.close()


def call_remote(settings: Settings, tool: str, arguments: dict[str, Any], *, connect_seconds: float,
                timeout_seconds: float, protocol_version: str) -> CallResult:
    """Raises ServerUnavailable when no ContextGraph server answers (nothing was called)."""
    session = RemoteSession.open(settings, connect_seconds=connect_seconds, timeout_seconds=timeout_seconds,
                                 protocol_version=protocol_version)
    try:
        return session.call(tool, arguments)
    finally:
        session.close()


def _failed(error: dict[str, Any], via: str) -> CallResult:
    data = error.get("data")
    return CallResult(False, via, code=error.get("code"), message=error.get("message"),
                      data=data if isinstance(data, dict) else {})


class Caller(Protocol):
    def __call__(self, tool: str, arguments: dict[str, Any]) -> CallResult: ...


@contextlib.contextmanager
def in_process(settings: Settings) -> Iterator[Caller]:
    """Calls through a dispatcher of an App built here, on one event loop for all of them; the App is closed
    after the last (the indexes are saved when a call changed them; the store itself is durable)."""
    from anyio.from_thread import start_blocking_portal

    from contextgraph.app import build_app
    from contextgraph.tools.dispatch import ToolCallFailed

    app = build_app(settings)
    try:
        with start_blocking_portal() as portal:
            def call(tool: str, arguments: dict[str, Any]) -> CallResult:
                try:
                    outcome = portal.call(app.dispatcher.call, tool, arguments, app.tool_context("cli"))
                except ToolCallFailed as failure:
                    return CallResult(False, "in-process", code=failure.code, message=failure.message,
                                      data=failure.data)
                return CallResult(True, "in-process", payload=outcome.payload)

            yield call
    finally:
        app.close()


def call_in_process(settings: Settings, tool: str, arguments: dict[str, Any]) -> CallResult:
    with in_process(settings) as call:
        return call(tool, arguments)


@contextlib.contextmanager
def connect(settings: Settings) -> Iterator[Caller]:
    """A caller for one or more tool calls: through the server listening on the configured TCP address when one
    answers, otherwise in this process on the same data directory."""
    from contextgraph.constitution import constitution

    t = constitution()["transport"]
    try:
        remote = RemoteSession.open(settings, connect_seconds=float(t["call_connect_seconds"]),
                                    timeout_seconds=float(t["call_timeout_seconds"]),
                                    protocol_version=str(t["call_protocol_version"]))
    except ServerUnavailable:
        remote = None
    if remote is not None:
        try:
            yield remote.call
        finally:
            remote.close()
        return
    with in_process(settings) as call:
        yield call


def run_call(settings: Settings, tool: str, arguments: dict[str, Any]) -> CallResult:
    with connect(settings) as call:
        return call(tool, arguments)


def describe_failure(tool: str, result: CallResult) -> str:
    name = result.data.get("error")
    code = f" ({result.code}{' ' + name if name else ''})" if result.code is not None else ""
    lines = [f"contextgraph call: {tool} failed{code}: {result.message}"]
    if result.data.get("hint"):
        lines.append(f"hint: {result.data['hint']}")
    if result.data.get("suggestions"):
        lines.append("did you mean: " + ", ".join(map(str, result.data["suggestions"])))
    return "\n".join(lines)
