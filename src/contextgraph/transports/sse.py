"""Legacy HTTP+SSE (the 2024-11-05 transport) with sessions that survive a dropped stream.

The SDK's SseServerTransport ends the MCP session when its GET stream ends. Here a session is its own task
(the Server running over two memory streams) plus a buffer of the messages it sent, and a GET stream is only
a window onto it:

* `GET /sse` opens a session: `event: endpoint` names `/messages/?session_id=ID`, `event: heartbeat` follows at
  once and then every `sse_heartbeat_seconds`; server messages are `event: message` with `id: ID:SEQ`.
* `POST /messages/?session_id=ID` hands a client message to the session (202), whether or not a stream is
  attached; answers go to the buffer and out on the stream.
* When the stream drops, the session keeps running for `sse_grace_seconds`. `GET /sse?session_id=ID` (or a
  plain EventSource reconnect, which sends `Last-Event-ID: ID:SEQ`) within that time re-attaches: the client
  receives every message after the last one it saw and the session continues where it was. With
  Last-Event-ID that is exact; with the session id alone it is every message not written to the old stream
  before the server noticed the drop (a message written into a connection that was already dead is lost
  unless the client names its last event).
* After the grace period the session is gone: its POSTs (and GETs) get the JSON-RPC error -32016
  SSE_SESSION_EXPIRED (HTTP 410; 404 for ids never seen).
* A session answers only to the peer and credential that opened it (transports/session_owner.py): its id
  presented from elsewhere is answered as an unknown one.
* At most `transport.sse_max_sessions` sessions live at once. A new one first retires the session whose
  stream has been gone the longest (it was waiting out its grace period); when every session has a stream
  attached, `GET /sse` is answered 503 and opens nothing.
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from uuid import uuid4

import anyio
from anyio.abc import TaskGroup
from mcp.shared.message import ServerMessageMetadata, SessionMessage
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from contextgraph.app import App
from contextgraph.log import get_logger
from contextgraph.server import ContextGraphServer
from contextgraph.transports.asgi import respond, respond_rpc_error
from contextgraph.transports.relay import error_message
from contextgraph.transports.session_owner import owner_of
from contextgraph.transports.session_tag import tagged
from contextgraph.transports.wire import parse_message

_log = get_logger("server")
MESSAGES_PATH = "/messages/"


class SseSession:
    """One MCP session: what it has sent (bounded), how far a stream delivered it, and whether one is attached."""

    def __init__(self, session_id: str, buffer_size: int, owner: str = "") -> None:
        self.id = session_id
        self.owner = owner
        self.messages: deque[tuple[int, str]] = deque(maxlen=buffer_size)
        self.next_seq = 1
        self.delivered = 0  # highest seq written to a stream that was still connected
        self.attachment = 0  # bumped by every GET that attaches; an older stream sees it and ends
        self.attached = False
        self.detached_at = 0.0  # anyio clock when its last stream went away
        self.to_server: anyio.abc.ObjectSendStream[SessionMessage | Exception] | None = None
        self.scope = anyio.CancelScope()
        self._changed = anyio.Event()

    def append(self, data: str) -> None:
        if len(self.messages) == self.messages.maxlen:
            _log.warning("sse buffer full: oldest message dropped", session=self.id[:8])
        self.messages.append((self.next_seq, data))
        self.next_seq += 1
        self.wake()

    def after(self, cursor: int) -> list[tuple[int, str]]:
        return [m for m in self.messages if m[0] > cursor]

    def wake(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    @property
    def changed(self) -> anyio.Event:
        return self._changed


class SseSessions:
    """Every legacy SSE session of one HTTP server; `run()` is entered by the server's lifespan."""

    def __init__(self, app: App, server: ContextGraphServer) -> None:
        c = app.constitution
        self.app = app
        self.server = server
        self.heartbeat = app.settings.sse_heartbeat_seconds
        self.grace = app.settings.sse_grace_seconds
        self.buffer_size = int(c.get("transport.sse_buffer_messages"))
        self.expired_kept = int(c.get("transport.sse_expired_remembered"))
        self.expired_error = c.error("SSE_SESSION_EXPIRED")
        self.max_sessions = int(c.get("transport.sse_max_sessions"))
        self.token = app.settings.token
        self.live: dict[str, SseSession] = {}
        self.expired: OrderedDict[str, float] = OrderedDict()
        self._tg: TaskGroup | None = None

    @asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tg:
            self._tg = tg
            try:
                yield
            finally:
                self.close_all()
                tg.cancel_scope.cancel()
                self._tg = None

    def close_all(self) -> None:
        """Shutdown: end every session and let every attached stream finish."""
        for session in list(self.live.values()):
            self.live.pop(session.id, None)
            session.scope.cancel()
            session.wake()

    # -- sessions ------------------------------------------------------------------------------------------------
    def _make_room(self) -> bool:
        """Whether a new session may open: below the limit, or after retiring the longest detached one."""
        if len(self.live) < self.max_sessions:
            return True
        detached = [s for s in self.live.values() if not s.attached]
        if not detached:
            return False
        oldest = min(detached, key=lambda s: s.detached_at)
        _log.info("sse session retired to make room", session=oldest.id[:8], open=len(self.live))
        self._retire(oldest)
        return True

    def _owned(self, session_id: str, owner: str) -> SseSession | None:
        """The live session `session_id` if `owner` opened it; else None, as for an unknown id."""
        session = self.live.get(session_id)
        return session if session is not None and session.owner == owner else None

    def _open(self, owner: str) -> SseSession:
        assert self._tg is not None, "SseSessions.run() is not active"
        session = SseSession(tagged(uuid4().hex), self.buffer_size, owner)
        to_server, server_read = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        server_write, from_server = anyio.create_memory_object_stream[SessionMessage](0)
        session.to_server = to_server
        self.live[session.id] = session
        self._tg.start_soon(self._serve, session, server_read, server_write, from_server)
        _log.debug("sse session opened", session=session.id[:8])
        return session

    async def _serve(self, session: SseSession, server_read, server_write, from_server) -> None:
        async def pump() -> None:
            async with from_server:
                async for item in from_server:
                    session.append(item.message.model_dump_json(by_alias=True, exclude_unset=True))

        try:
            with session.scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(pump)
                    await self.server.run(server_read, server_write, self.server.create_initialization_options())
        except Exception:
            _log.exception("sse session failed", session=session.id[:8])
        finally:
            self._retire(session)

    def _retire(self, session: SseSession) -> None:
        self.live.pop(session.id, None)
        self.expired[session.id] = time.time()
        while len(self.expired) > self.expired_kept:
            self.expired.popitem(last=False)
        session.scope.cancel()
        session.wake()

    def _detached(self, session: SseSession, attachment: int) -> None:
        if session.attachment != attachment:
            return  # a newer stream has taken over
        session.attached = False
        session.detached_at = anyio.current_time()
        if session.id in self.live and self._tg is not None:
            self._tg.start_soon(self._expire_after_grace, session, attachment)

    async def _expire_after_grace(self, session: SseSession, attachment: int) -> None:
        await anyio.sleep(self.grace)
        if session.attachment == attachment and not session.attached and session.id in self.live:
            _log.info("sse session expired", session=session.id[:8], grace_s=self.grace)
            self._retire(session)

    # -- GET /sse ------------------------------------------------------------------------------------------------
    async def stream_endpoint(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] != "GET":
            await respond(send, 405, b"Method Not Allowed", extra=[(b"allow", b"GET")])
            return
        request = Request(scope)
        owner = owner_of(scope, self.token)
        session_id = request.query_params.get("session_id")
        cursor: int | None = None
        last_event_id = request.headers.get("last-event-id", "")
        if ":" in last_event_id:
            last_session, _, last_seq = last_event_id.rpartition(":")
            if session_id in (None, last_session) and last_seq.isdigit():
                session_id, cursor = last_session, int(last_seq)
        if session_id is None:
            if not self._make_room():
                _log.warning("sse session refused: too many open", open=len(self.live))
                await respond_rpc_error(send, 503, None, self.app.constitution.error("INTERNAL_ERROR").code,
                                        f"Too many legacy SSE sessions: at most {self.max_sessions} may be open and "
                                        f"each has a stream attached. Retry when one closes, or use /mcp.",
                                        {"max_sessions": self.max_sessions})
                return
            session = self._open(owner)
            cursor = 0
        else:
            session = self._owned(session_id, owner)
            if session is None:
                await self._expired(send, session_id, None)
                return
            _log.info("sse session resumed", session=session.id[:8])
        if cursor is None:
            cursor = session.delivered
        session.attachment += 1
        attachment = session.attachment
        session.attached = True
        session.wake()  # an older stream still attached notices it was superseded
        try:
            await self._stream(scope, receive, send, session, attachment, cursor)
        except OSError:  # the connection broke under a write: the same as a drop
            pass
        finally:
            self._detached(session, attachment)

    async def _stream(self, scope: Scope, receive: Receive, send: Send, session: SseSession, attachment: int,
                      cursor: int) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-store"),
            (b"x-accel-buffering", b"no")]})
        disconnected = False

        async def event(name: str, data: str, event_id: str | None = None) -> None:
            head = f"id: {event_id}\n" if event_id else ""
            await send({"type": "http.response.body", "body": f"{head}event: {name}\ndata: {data}\n\n".encode(),
                        "more_body": True})

        def beat() -> str:
            return json.dumps({"ts": round(time.time(), 3), "session_id": session.id})

        async with anyio.create_task_group() as tg:
            async def watch() -> None:
                nonlocal disconnected
                while (await receive())["type"] != "http.disconnect":
                    pass
                disconnected = True
                tg.cancel_scope.cancel()

            tg.start_soon(watch)
            endpoint = scope.get("root_path", "").rstrip("/") + MESSAGES_PATH + f"?session_id={session.id}"
            # The endpoint event carries an id too, so that an EventSource that drops before any message still
            # reconnects with Last-Event-ID, and so resumes this session rather than opening a new one.
            await event("endpoint", endpoint, f"{session.id}:{cursor}")
            await event("heartbeat", beat())
            next_beat = anyio.current_time() + self.heartbeat
            while session.attachment == attachment and session.id in self.live:
                changed = session.changed
                for seq, data in session.after(cursor):
                    await event("message", data, f"{session.id}:{seq}")
                    cursor = seq
                    if not disconnected:
                        session.delivered = max(session.delivered, seq)
                if session.after(cursor):
                    continue
                with anyio.move_on_after(max(0.0, next_beat - anyio.current_time())):
                    await changed.wait()
                if anyio.current_time() >= next_beat:
                    await event("heartbeat", beat())
                    next_beat = anyio.current_time() + self.heartbeat
            tg.cancel_scope.cancel()
        if not disconnected:
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    # -- POST /messages/ -----------------------------------------------------------------------------------------
    async def post_endpoint(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] != "POST":
            await respond(send, 405, b"Method Not Allowed", extra=[(b"allow", b"POST")])
            return
        request = Request(scope, receive)
        if not request.headers.get("content-type", "").lower().startswith("application/json"):
            await respond(send, 400, b"Content-Type must be application/json")
            return
        session_id = request.query_params.get("session_id")
        if not session_id:
            await respond(send, 400, b"session_id is required")
            return
        body = await request.body()
        session = self._owned(session_id, owner_of(scope, self.token))
        if session is None or session.to_server is None:
            await self._expired(send, session_id, _request_id(body))
            return
        parsed = parse_message(body)
        if isinstance(parsed, Exception):  # answered like a bad line on stdio or TCP
            error = error_message(parsed, self.app.constitution).message
            await respond(send, 400, error.model_dump_json(by_alias=True, exclude_unset=True).encode(),
                          "application/json")
            return
        await respond(send, 202, b"Accepted")
        try:
            metadata = ServerMessageMetadata(request_context=request)
            await session.to_server.send(SessionMessage(parsed.message, metadata=metadata))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            _log.info("sse message for a session that just ended", session=session_id[:8])

    async def _expired(self, send: Send, session_id: str, request_id: object) -> None:
        known = session_id in self.expired
        message = (f"SSE session {session_id} has expired: its stream was gone longer than {self.grace:g} s, so "
                   f"the server dropped its state." if known else
                   f"SSE session {session_id} is unknown or has expired.")
        await respond_rpc_error(send, 410 if known else 404, request_id, self.expired_error.code,
                                f"{message} Open a new session with GET /sse.",
                                {"hint": self.expired_error.hint, "error": self.expired_error.name,
                                 "session_id": session_id})


def _request_id(body: bytes) -> object:
    try:
        parsed = json.loads(body)
    except ValueError:
        return None
    request_id = parsed.get("id") if isinstance(parsed, dict) else None
    return request_id if isinstance(request_id, (str, int)) and not isinstance(request_id, bool) else None
