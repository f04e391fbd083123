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

from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.types import JSONRPCMessage

from contextgraph.log import get_logger

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
    abandoned (no DELETE) lock new clients out for up to the idle timeout. Here the session idle the longest
    (no request in flight, no open stream) is closed to make room, exactly as its idle timeout would close it;
    only when every session is busy does a new client get the 503. (The hooks and the transports' idle state
    are the SDK's private members; tests/e2e/transports pin the behaviour, so an SDK change fails loudly.)"""

    event_store: InMemoryEventStore | None

    def _admit_session(self, requestor: Any) -> Any:
        if self.max_sessions is not None and len(self._server_instances) >= self.max_sessions:
            self._evict_longest_idle()
        transport = super()._admit_session(requestor)
        if transport is not None and self.event_store is not None and transport.mcp_session_id is not None:
            transport._event_store = self.event_store.for_session(transport.mcp_session_id)
        return transport

    async def _discard_session(self, session_id: str, transport: Any) -> None:
        await super()._discard_session(session_id, transport)
        if self.event_store is not None:
            self.event_store.forget(session_id)

    def _evict_longest_idle(self) -> None:
        idle = [(scope.deadline, session_id, scope) for session_id, transport in self._server_instances.items()
                if (scope := transport.idle_scope) is not None and not transport._requests_in_flight]
        if not idle:
            return
        _, session_id, scope = min(idle, key=lambda entry: entry[:2])
        self._server_instances.pop(session_id)  # room now; the session's task discards the rest
        self._session_owners.pop(session_id, None)
        _log.info("http session evicted to make room", session=session_id, open=len(self._server_instances))
        scope.cancel()  # ends the session's loop the way its idle timeout would

    @property
    def open_sessions(self) -> int:
        return len(self._server_instances)
