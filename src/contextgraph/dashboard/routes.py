"""The dashboard's routes, mounted by the HTTP transport (transports/http.py) behind its Host/Origin/token guard:

* `GET /dashboard`: the page, with a first snapshot of every panel inside it (no request needed to draw);
  `?live=0` draws that snapshot only and opens no stream; `?q=` runs a search and `?memory=` opens a memory
  in it; `?token=` (when a token is configured) sets the session cookie and redirects without it (auth.py).
* `GET /dashboard/static/{name}`: the page's script and stylesheet (package data, no CDN).
* `GET /dashboard/api/{now,history,recent,search,memory/{id},neighbourhood/{id},curation}` and
  `POST /dashboard/api/curation/{merge,forget,restore}`: the panels' data (api.py).
* `GET /dashboard/api/stream`: Server-Sent Events, `event: now` (and `event: history` when it gained a sample)
  every `dashboard.live_interval_seconds`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from importlib import resources
from typing import Any
from urllib.parse import parse_qsl, urlencode

import anyio
from sse_starlette.sse import EventSourceResponse
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from contextgraph.app import App
from contextgraph.dashboard.api import CURATION_ACTIONS, NO_STORE, ApiError, BodyError, DashboardApi, read_json
from contextgraph.dashboard.auth import PREFIX, DashboardAuth
from contextgraph.dashboard.page import render_page

STATIC = {"dashboard.js": "text/javascript; charset=utf-8", "charts.js": "text/javascript; charset=utf-8",
          "graph.js": "text/javascript; charset=utf-8", "dashboard.css": "text/css; charset=utf-8"}
Handler = Callable[[Request], Awaitable[Response]]


def _int_or_raw(value: str | None) -> Any:
    """Query strings are text; a number is passed as one, anything else as given, so the tool's validation
    names the field and its bounds exactly as it does for MCP."""
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return value


def _guarded(handler: Handler) -> Handler:
    async def run(request: Request) -> Response:
        try:
            return await handler(request)
        except ApiError as exc:
            return exc.response()

    return run


class DashboardRoutes:
    def __init__(self, app: App) -> None:
        self.app = app
        self.api = DashboardApi(app)
        d = app.constitution["dashboard"]
        self.interval = float(d["live_interval_seconds"])
        token = app.settings.token
        self.auth = DashboardAuth(token, int(d["cookie_max_age_seconds"])) if token else None
        self.invalid_code = app.constitution.error("INVALID_PARAMS").code
        self._streams: set[anyio.Event] = set()  # one per open live stream: set to end it (server shutdown)
        self._static = {name: resources.files("contextgraph.dashboard").joinpath("static", name).read_bytes()
                        for name in STATIC}

    def routes(self) -> list[Route]:
        g = _guarded
        return [
            Route(PREFIX, self.page, methods=["GET"]),
            Route(PREFIX + "/", self.page, methods=["GET"]),
            Route(PREFIX + "/static/{name}", self.static, methods=["GET"]),
            Route(PREFIX + "/api/now", g(self.now), methods=["GET"]),
            Route(PREFIX + "/api/history", g(self.history), methods=["GET"]),
            Route(PREFIX + "/api/recent", g(self.recent), methods=["GET"]),
            Route(PREFIX + "/api/search", g(self.search), methods=["GET"]),
            Route(PREFIX + "/api/memory/{memory_id}", g(self.memory), methods=["GET"]),
            Route(PREFIX + "/api/neighbourhood/{memory_id}", g(self.neighbourhood), methods=["GET"]),
            Route(PREFIX + "/api/curation", g(self.curation), methods=["GET"]),
            Route(PREFIX + "/api/curation/{action}", g(self.curate), methods=["POST"]),
            Route(PREFIX + "/api/stream", self.stream, methods=["GET"]),
        ]

    # -- the page ----------------------------------------------------------------------------------------------
    async def page(self, request: Request) -> Response:
        params = request.query_params
        if self.auth is not None and "token" in params and self.auth.query_token_valid(request.scope):
            kept = [(k, v) for k, v in parse_qsl(request.url.query, keep_blank_values=True) if k != "token"]
            target = PREFIX + ("?" + urlencode(kept) if kept else "")
            return RedirectResponse(target, status_code=303, headers={"set-cookie": self.auth.set_cookie(),
                                                                      "cache-control": "no-store"})
        live = params.get("live", "1") != "0"
        snapshot = await self.snapshot(params.get("q"), params.get("memory"))
        html = render_page(snapshot, live=live)
        return Response(html, media_type="text/html; charset=utf-8",
                        headers={**NO_STORE, "content-security-policy": _CSP, "x-content-type-options": "nosniff",
                                 "referrer-policy": "no-referrer", "x-frame-options": "DENY"})

    async def snapshot(self, query: str | None, memory_id: str | None) -> dict[str, Any]:
        """Every panel's first data. A refused part (a bad search, an unknown memory) is shown as its refusal,
        not as a failed page."""
        now, recent, curation = await asyncio.gather(self._part(self.api.now()), self._part(self.api.recent()),
                                                     self._part(self.api.curation()))
        out: dict[str, Any] = {"now": now, "history": self.api.history(), "recent": recent, "curation": curation}
        if query:
            out["search"] = await self._part(self.api.search(query, breakdown=True))
        memories = recent.get("memories") or []
        chosen = memory_id or (memories[0]["id"] if memories else None)
        if chosen:
            out["memory"] = await self._part(self.api.memory(chosen))
        return out

    @staticmethod
    async def _part(call: Awaitable[dict[str, Any]]) -> dict[str, Any]:
        try:
            return await call
        except ApiError as exc:
            return {"error": {"code": exc.failure.code, "message": exc.failure.message}}

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC:
            return Response(f"No dashboard file {name!r}.", status_code=404, media_type="text/plain")
        return Response(self._static[name], media_type=STATIC[name], headers={"cache-control": "no-cache"})

    # -- the API -----------------------------------------------------------------------------------------------
    async def now(self, request: Request) -> Response:
        return _json(await self.api.now())

    async def history(self, request: Request) -> Response:
        return _json(self.api.history())

    async def recent(self, request: Request) -> Response:
        return _json(await self.api.recent(_int_or_raw(request.query_params.get("limit"))))

    async def search(self, request: Request) -> Response:
        p = request.query_params
        breakdown = p.get("breakdown", "0") not in ("0", "false", "")
        return _json(await self.api.search(p.get("q", ""), _int_or_raw(p.get("top_k")), breakdown))

    async def memory(self, request: Request) -> Response:
        return _json(await self.api.memory(request.path_params["memory_id"]))

    async def neighbourhood(self, request: Request) -> Response:
        depth = _int_or_raw(request.query_params.get("depth"))
        return _json(await self.api.neighbourhood(request.path_params["memory_id"], depth))

    async def curation(self, request: Request) -> Response:
        return _json(await self.api.curation())

    async def curate(self, request: Request) -> Response:
        action = request.path_params["action"]
        if action not in CURATION_ACTIONS:
            return JSONResponse({"error": {"code": self.invalid_code, "message": f"No curation action {action!r}; "
                                           f"allowed: {', '.join(CURATION_ACTIONS)}.", "data": {"field": "action"}}},
                                status_code=404, headers=NO_STORE)
        try:
            body = await read_json(request)
        except BodyError as exc:
            return exc.response(self.invalid_code)
        return _json(await self.api.curate(action, body))

    async def stream(self, request: Request) -> Response:
        return EventSourceResponse(self._events(), headers=NO_STORE, ping=15)

    def close_all(self) -> None:
        """End every live stream (the server is shutting down): the pages see the stream close and reconnect to
        whichever server answers next, instead of holding the shutdown for its grace period."""
        for closing in list(self._streams):
            closing.set()

    async def _events(self) -> AsyncIterator[dict[str, str]]:
        closing = anyio.Event()
        self._streams.add(closing)
        try:
            async for event in self._ticks(closing):
                yield event
        finally:
            self._streams.discard(closing)

    async def _ticks(self, closing: anyio.Event) -> AsyncIterator[dict[str, str]]:
        sent: list[float] | None = None  # the newest sample's time the page has
        while not closing.is_set():
            try:
                yield {"event": "now", "data": json.dumps(await self.api.now())}
                history = self.api.history()
                newest = history["samples"]["t"][-1:]
                if newest != sent:
                    sent = newest
                    yield {"event": "history", "data": json.dumps(history)}
            except ApiError as exc:  # e.g. the store failed to open: say so, keep the stream for the next tick
                yield {"event": "problem", "data": json.dumps({"code": exc.failure.code,
                                                               "message": exc.failure.message})}
            with anyio.move_on_after(self.interval):
                await closing.wait()


# The page loads only its own script and stylesheet; inline JSON data is not script. No frames, no other origins.
_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")


def _json(body: dict[str, Any]) -> JSONResponse:
    return JSONResponse(body, headers=NO_STORE)
