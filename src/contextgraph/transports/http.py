"""HTTP (Starlette, served by uvicorn): every endpoint over the same Server and App.

* `/mcp`: Streamable HTTP (the SDK's session manager), resumable: an in-memory event store per session
  replays what a dropped stream missed when the client reconnects with `Last-Event-ID`. Idle sessions are
  reaped and their number bounded (event_store.SessionManager); discover-era (2026-07-28) requests, which
  have no session, get a client identity of their own (client_identity.py).
* `/sse` + `/messages/`: the legacy HTTP+SSE transport for 2024-11-05 clients, with heartbeats and sessions
  that survive a dropped stream (transports/sse.py).
* `/health`: liveness and a few counters.
* `/dashboard`: the live dashboard and its JSON API (contextgraph.dashboard), same guard as everything else; a
  browser may present the token once (`/dashboard?token=…` sets a dashboard-only session cookie).

In front of all of them (transports/security.py): Host/Origin validation, the bearer token when one is
configured, a deadline on the body's arrival (transports/http_deadline.py) and the request body limit; then
the JSON-RPC envelope check (transports/http_envelope.py). The request's head has its own deadline in the
protocol (transports/http_protocol.py).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import RequestBodyLimitMiddleware
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp

from contextgraph import __version__
from contextgraph.app import App
from contextgraph.dashboard.auth import DashboardAuth
from contextgraph.dashboard.routes import DashboardRoutes
from contextgraph.server import ContextGraphServer
from contextgraph.transports import session_tag
from contextgraph.transports.asgi import AsgiEndpoint
from contextgraph.transports.client_identity import ClientIdentity
from contextgraph.transports.event_store import InMemoryEventStore, SessionManager
from contextgraph.transports.http_deadline import BodyDeadline
from contextgraph.transports.http_envelope import EnvelopeGuard
from contextgraph.transports.security import HostRules, HttpGuard
from contextgraph.transports.session_owner import SessionOwner
from contextgraph.transports.sse import MESSAGES_PATH, SseSessions


class HttpService:
    """The ASGI application for `serve --transport http`, and handles on its parts for health and tests."""

    def __init__(self, app: App, server: ContextGraphServer, *, max_body: int | None = None,
                 extra_health: Callable[[], dict] | None = None) -> None:
        c = app.constitution
        self.app = app
        self.max_body = max_body or int(c.get("transport.max_message_bytes"))
        self.event_store = InMemoryEventStore(int(c.get("transport.event_store_events_per_stream")),
                                              int(c.get("transport.event_store_streams_per_session")))
        self.manager = SessionManager(
            app=server,
            event_store=self.event_store,
            retry_interval=int(c.get("transport.http_retry_ms")),
            session_idle_timeout=app.settings.http_session_idle_seconds,
            max_sessions=app.settings.http_max_sessions,
            max_request_body_size=self.max_body,
            security_settings=None,  # Host/Origin are checked for every endpoint by HttpGuard
        )
        self.sse = SseSessions(app, server)
        self._extra_health = extra_health
        # who sent each request (a session answers only to its opener), then discover-era clients apart
        mcp_endpoint = SessionOwner(ClientIdentity(StreamableHTTPASGIApp(self.manager)), app.settings.token)
        stream, post = AsgiEndpoint(self.sse.stream_endpoint), AsgiEndpoint(self.sse.post_endpoint)
        self.dashboard = DashboardRoutes(app)
        starlette = Starlette(
            routes=[
                Route("/mcp", endpoint=mcp_endpoint),
                Route("/mcp/", endpoint=mcp_endpoint),
                Route("/sse", endpoint=stream),
                Route(MESSAGES_PATH, endpoint=post),
                Route(MESSAGES_PATH.rstrip("/"), endpoint=post),
                Route("/health", endpoint=self.health, methods=["GET"]),
                *self.dashboard.routes(),
            ],
            lifespan=self._lifespan,
        )
        # behind the body limit: bounded buffering
        checked = EnvelopeGuard(starlette, c, frozenset({"/mcp", "/mcp/", MESSAGES_PATH, MESSAGES_PATH.rstrip("/")}))
        invalid = c.error("INVALID_REQUEST")
        # the body limit buffers the whole body first: the deadline on its arrival sits in front of it
        limited = BodyDeadline(RequestBodyLimitMiddleware(checked, self.max_body),
                               float(c.get("transport.http_body_seconds")), invalid.code)
        dashboard_auth: DashboardAuth | None = self.dashboard.auth
        self.asgi: ASGIApp = HttpGuard(limited, app.settings, HostRules(app.settings),
                                       alternate=dashboard_auth.accepts if dashboard_auth is not None else None,
                                       refusal=dashboard_auth.refusal if dashboard_auth is not None else None)

    @asynccontextmanager
    async def _lifespan(self, _starlette: Starlette) -> AsyncIterator[None]:
        async with self.manager.run(), self.sse.run():
            yield

    async def health(self, request: Request) -> JSONResponse:
        body = {
            "status": "ok",
            "server": "contextgraph",
            "version": __version__,
            "uptime_s": round(time.time() - self.app.services.started_at, 1),
            "model": self.app.services.perception.model_status(),
            "tools_active": len(self.app.registry.active),
            "sessions": {"streamable_http": self.manager.open_sessions, "sse": len(self.sse.live)},
        }
        if (worker := session_tag.worker()) is not None:  # a pool's worker (serve --workers N) says which
            body["worker"] = worker
        if self._extra_health is not None:
            body.update(self._extra_health())
        return JSONResponse(body, headers={"cache-control": "no-store"})
