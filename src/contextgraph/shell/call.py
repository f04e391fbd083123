"""`contextgraph call TOOL ['{json}']`: one tool call from a shell, through a running server when one answers
on the configured TCP address and serves the store this call was asked for, otherwise in this process through
the same dispatcher (App + dispatcher.call).

Which store a server serves, it says when asked (`contextgraph/identity`, after the handshake): its backend, the
store's id (a uuid4 written into the store when it was created) and, for LMDB, the store directory with links
resolved. The call reads the id of the store it was asked for itself (CONTEXTGRAPH_HOME or the store URL;
read-only, only once a server has answered) and uses the server when both ids are equal and, for LMDB, both
directories are the same directory on this machine (a copied data directory has the same id). Otherwise a
server on a loopback address is passed over, saying so on stderr, and the call runs in this process on the
store asked for; a server on another machine is refused, since running here would write to a store the user
did not point at.

The TCP client is plain sockets and the in-process path builds the App without the `mcp` SDK, so a call from a
hook costs little more than the tool itself (plus the model load, in-process, for tools that embed). `connect`
gives a caller for several calls over one connection (or one in-process App): hooks search before they store.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from contextgraph import __version__
from contextgraph.config import Settings, store_location

IDENTITY_METHOD = "contextgraph/identity"  # server.py answers it (not imported here: it imports the mcp SDK)


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
        self.identity: dict[str, Any] | None = None  # which store the server serves (None: it did not say)
        self._next_id = 3

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
                # the server opens its store to answer (a tool call would, too): the call's own deadline
                session.wire.send({"jsonrpc": "2.0", "id": 2, "method": IDENTITY_METHOD})
                told = session.wire.answer(2, time.monotonic() + timeout_seconds)
                if isinstance(told.get("result"), dict):
                    session.identity = told["result"]
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
    """Raises ServerUnavailable when no ContextGraph server answers (nothing was called). Whichever store the
    server serves: `connect` is what checks it."""
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


@dataclass(frozen=True, slots=True)
class AskedStore:
    """The store a call was asked for, as this machine sees it."""

    backend: str  # "lmdb" or "postgresql"
    store_id: str | None  # None: no readable store there (yet)
    store_dir: Path | None  # the LMDB environment's directory
    shown: str  # the data directory, or the database URL without its password

    @classmethod
    def of(cls, settings: Settings) -> AskedStore:
        backend, where = store_location(settings.store_url, settings.home)
        if backend == "lmdb":
            from contextgraph.storage.lmdb_env import STORE_DIR, LmdbFile

            store_dir = Path(where) / STORE_DIR
            return cls(backend, LmdbFile.read_store_id(store_dir), store_dir, str(where))
        from contextgraph.storage.postgres.connect import read_store_id, redact

        return cls(backend, read_store_id(str(where)), None, redact(str(where)))

    def served_by(self, identity: dict[str, Any] | None) -> str | None:
        """None when a server that answered `identity` serves this store; else what it serves, in words."""
        if not identity:
            return "does not say which store it serves (an older ContextGraph, or another program)"
        theirs = identity.get("data_dir") or identity.get("database") or "?"
        shown = f"{identity.get('backend')} store {str(identity.get('store_id') or '?')[:8]}… in {theirs}"
        if (identity.get("backend") != self.backend or not identity.get("store_id")
                or identity.get("store_id") != self.store_id):
            return f"serves another store ({shown})"
        if self.store_dir is not None and not _same_directory(self.store_dir, identity.get("store_dir")):
            return f"serves a copy of this store in another directory ({shown})"
        return None


def _same_directory(mine: Path, theirs: Any) -> bool:
    try:
        return isinstance(theirs, str) and os.path.samefile(mine, theirs)
    except OSError:
        return False


def _on_stderr(note: str) -> None:
    print(note, file=sys.stderr)


@contextlib.contextmanager
def connect(settings: Settings, notice: Callable[[str], None] = _on_stderr) -> Iterator[Caller]:
    """A caller for one or more tool calls: through the server listening on the configured TCP address when one
    answers and serves the store these settings name, otherwise in this process on that store (`notice` is told
    why a server that answered was passed over); a server on another machine that serves another store is
    refused instead."""
    from contextgraph.constitution import constitution

    t = constitution()["transport"]
    try:
        remote = RemoteSession.open(settings, connect_seconds=float(t["call_connect_seconds"]),
                                    timeout_seconds=float(t["call_timeout_seconds"]),
                                    protocol_version=str(t["call_protocol_version"]))
    except ServerUnavailable:
        remote = None
    if remote is not None and remote.refused is None:
        asked = AskedStore.of(settings)
        other = asked.served_by(remote.identity)
        if other is not None:
            remote.close()
            remote = None
            why = (f"the server at tcp://{settings.host}:{settings.port} {other}, not the store this call names "
                   f"({asked.backend} in {asked.shown}{'' if asked.store_id else ', none there yet'})")
            if not _loopback(settings.host):
                yield _refuse(f"tcp://{settings.host}:{settings.port}", f"{why}. Nothing was run: point "
                              "CONTEXTGRAPH_HOME or CONTEXTGRAPH_STORE_URL at the store that server serves (a "
                              "store shared between machines is a postgresql:// store URL), or "
                              "CONTEXTGRAPH_HOST/CONTEXTGRAPH_PORT at a server that serves this one.")
                return
            notice(f"contextgraph call: {why}; running in this process on that store instead.")
    if remote is not None:
        try:
            yield remote.call
        finally:
            remote.close()
        return
    with in_process(settings) as call:
        yield call


def _loopback(host: str) -> bool:
    from contextgraph.transports.security import is_loopback

    return is_loopback(host)


def _refuse(via: str, message: str) -> Caller:
    def refused(tool: str, arguments: dict[str, Any]) -> CallResult:
        return CallResult(False, via, message=message)

    return refused


def run_call(settings: Settings, tool: str, arguments: dict[str, Any],
             notice: Callable[[str], None] = _on_stderr) -> CallResult:
    with connect(settings, notice) as call:
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
