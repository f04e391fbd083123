"""In-memory EventStore for Streamable HTTP resumability (`mcp` 2.3 ships only the abstract class).

The SDK names a stream by the JSON-RPC request id it answers (or one name for the standalone GET stream), so
two sessions both have a stream "1". One store shared by every session would replay one client's events to
another; here each session gets its own view (`for_session`), and the manager drops it when the session ends.

Bounded: `transport.event_store_events_per_stream` events per stream (oldest dropped first) and
`transport.event_store_streams_per_session` streams per session (least recently written dropped first).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass
from itertools import count
from typing import Any

import anyio
from mcp.server.streamable_http import GET_STREAM_KEY, EventCallback, EventMessage, EventStore
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.types import JSONRPCMessage

from contextgraph.log import get_logger
from contextgraph.transports.session_tag import tagged

_log = get_logger("server")


@dataclass(frozen=True, slots=True)
class _Event:
    event_id: str
    stream_id: str
    message: JSONRPCMessage | None  # None: a priming event (a cursor, nothing to replay)


class SessionEventStore(EventStore):
    """The events of one session's streams."""

    def __init__(self, prefix: str, events_per_stream: int, max_streams: int) -> None:
        self._prefix = prefix
        self._events_per_stream = events_per_stream
        self._max_streams = max_streams
        self._serial = count(1)
        self._streams: OrderedDict[str, deque[_Event]] = OrderedDict()
        self._by_id: dict[str, _Event] = {}

    async def store_event(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        event = _Event(f"{self._prefix}-{next(self._serial)}", stream_id, message)
        stream = self._streams.get(stream_id)
        if stream is None:
            stream = self._streams[stream_id] = deque()
            while len(self._streams) > self._max_streams:
                _, dropped = self._streams.popitem(last=False)
                for old in dropped:
                    self._by_id.pop(old.event_id, None)
        else:
            self._streams.move_to_end(stream_id)
        if len(stream) >= self._events_per_stream:
            self._by_id.pop(stream.popleft().event_id, None)
        stream.append(event)
        self._by_id[event.event_id] = event
        return event.event_id

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> str | None:
        last = self._by_id.get(last_event_id)
        if last is None:
            return None
        after = False
        for event in list(self._streams.get(last.stream_id, ())):
            if after and event.message is not None:
                await send_callback(EventMessage(event.message, event.event_id))
            elif event.event_id == last_event_id:
                after = True
        return last.stream_id

    # No __len__: the SDK tests `if self._event_store:`, and an empty store must still count as one.


class InMemoryEventStore(EventStore):
    """Hands each session its own SessionEventStore; usable directly only by a single-session transport."""

    def __init__(self, events_per_stream: int, streams_per_session: int) -> None:
        self.events_per_stream = events_per_stream
        self.streams_per_session = streams_per_session
        self.sessions: dict[str, SessionEventStore] = {}
        self._shared = SessionEventStore("shared", events_per_stream, streams_per_session)

    def for_session(self, session_id: str) -> SessionEventStore:
        store = self.sessions.get(session_id)
        if store is None:
            store = self.sessions[session_id] = SessionEventStore(session_id, self.events_per_stream,
                                                                   self.streams_per_session)
        return store

    def forget(self, session_id: str) -> None:
        self.sessions.pop(session_id, None)

    async def store_event(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        return await self._shared.store_event(stream_id, message)

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> str | None:
        return await self._shared.replay_events_after(last_event_id, send_callback)


class SessionManager(StreamableHTTPSessionManager):
    """The SDK's session manager, with one event-store view per session, and room made at the session limit.

    mcp 2.3 creates every session's transport with the manager's one store; this swaps in the session's own
    view as the session is admitted and drops it as the session is discarded.

    At `max_sessions` the SDK answers every new client 503 until a session ends, so sessions that clients
    abandoned (no DELETE) lock new clients out for up to the idle timeout, and sessions that merely hold their
    GET stream open never time out at all: a hundred held streams made every new `initialize` a 503. Here a
    new session makes room: the session idle the longest (no request in flight) is closed, exactly as its
    idle timeout would close it; failing that, the one whose only open request is its GET stream and whose
    last other request is the oldest (its client re-initializes on the 404, as MCP requires). Only when every
    session has a request being answered does a new client get the 503. (The hooks and the transports' idle
    state are the SDK's private members; tests/e2e/transports pin the behaviour, so an SDK change fails
    loudly.)"""

    event_store: InMemoryEventStore | None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._last_request: dict[str, float] = {}  # session → anyio clock of its last request other than GET

    async def _handle_stateful_request(self, scope: Any, receive: Any, send: Any) -> None:
        session_id = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"mcp-session-id"), None)
        if session_id in self._server_instances and scope["method"] != "GET":
            self._last_request[session_id] = anyio.current_time()
        await super()._handle_stateful_request(scope, receive, send)

    def _admit_session(self, requestor: Any) -> Any:
        if self.max_sessions is not None and len(self._server_instances) >= self.max_sessions:
            self._evict_one()
        transport = super()._admit_session(requestor)
        if transport is not None and transport.mcp_session_id is not None:
            self._tag(transport)
            self._last_request[transport.mcp_session_id] = anyio.current_time()
            if self.event_store is not None:
                transport._event_store = self.event_store.for_session(transport.mcp_session_id)
        return transport

    def _tag(self, transport: Any) -> None:
        """Give the new session the id that names this worker (transports/session_tag.py), so that a pool's
        front process brings its later connections here."""
        old = transport.mcp_session_id
        new = tagged(old)
        if new == old:
            return
        transport.mcp_session_id = new
        self._server_instances[new] = self._server_instances.pop(old)
        if old in self._session_owners:
            self._session_owners[new] = self._session_owners.pop(old)

    async def _discard_session(self, session_id: str, transport: Any) -> None:
        self._last_request.pop(session_id, None)
        await super()._discard_session(session_id, transport)
        if self.event_store is not None:
            self.event_store.forget(session_id)

    def _evict_one(self) -> None:
        idle, streaming = [], []
        for session_id, transport in self._server_instances.items():
            scope = transport.idle_scope
            if scope is None:
                continue
            in_flight = transport._requests_in_flight
            if not in_flight:
                idle.append((scope.deadline, session_id, scope))
            elif in_flight == 1 and GET_STREAM_KEY in transport._request_streams:
                streaming.append((self._last_request.get(session_id, 0.0), session_id, scope))
        candidates = idle or streaming
        if not candidates:
            return
        _, session_id, scope = min(candidates, key=lambda entry: entry[:2])
        self._server_instances.pop(session_id)  # room now; the session's task discards the rest
        self._session_owners.pop(session_id, None)
        _log.info("http session evicted to make room", session=session_id[:8], open=len(self._server_instances),
                  held_stream=not idle)
        scope.cancel()  # ends the session's loop (and its GET stream) the way its idle timeout would

    @property
    def open_sessions(self) -> int:
        return len(self._server_instances)
