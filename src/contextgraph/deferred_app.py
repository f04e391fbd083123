"""The App, built after the handshake (docs/budgets.md#cpu-budgets). `contextgraph serve` over stdio answers
initialize and tools/list with the MCP SDK, the constitution and the tool listing snapshot (tools/listing.py);
the tool modules and every service, ~200 modules, are imported and built in a background thread once the tool
list is answered (or when the first request needs them, whichever comes first), and every request that needs
the App waits for it. Logging is configured at once, so that nothing logged meanwhile escapes the ring and
the level.

A server built from an App that already exists (the network transports, the tests) gets it through
`DeferredApp.ready`, the same interface with nothing deferred."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio.to_thread

from contextgraph import log
from contextgraph.config import Settings
from contextgraph.constitution import Constitution, constitution
from contextgraph.start_up_heap import start_up_heap
from contextgraph.tools.listing import ListedTool, ListingSnapshot, live_listing, load_snapshot

if TYPE_CHECKING:
    from contextgraph.app import App

_log = log.get_logger("server")


class AppNotBuilt(RuntimeError):
    """Building the App failed; every request that needs it is refused with this (the cause is logged)."""


class DeferredApp:
    def __init__(self, settings: Settings, c: Constitution, build: Callable[[], App],
                 snapshot: ListingSnapshot | None) -> None:
        self.settings = settings
        self.constitution = c
        self._build = build
        self._snapshot = snapshot
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._app: App | None = None
        self._failure: BaseException | None = None
        self._when_built: list[Callable[[App], None]] = []
        self._closed = False
        self._settled = threading.Event()  # built and the callbacks run (or the build failed)

    @classmethod
    def of_settings(cls, settings: Settings) -> DeferredApp:
        c = constitution()
        ring = log.LogRing(int(c.get("logging.ring_buffer_size")))
        log.configure(settings.log_level, ring)

        def build() -> App:
            from contextgraph.app import build_app  # the composition root: what this class defers

            return build_app(settings, ring=ring)

        return cls(settings, c, build, load_snapshot(c))

    @classmethod
    def ready(cls, app: App) -> DeferredApp:
        deferred = cls(app.settings, app.constitution, lambda: app, None)
        deferred._app = app
        deferred._done.set()
        deferred._settled.set()
        return deferred

    def start(self) -> None:
        """Start building in the background; no-op once started."""
        with self._lock:
            if self._thread is not None or self._done.is_set():
                return
            self._thread = threading.Thread(target=self._run, name="contextgraph-app", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            with start_up_heap():
                app = self._build()
        except BaseException as exc:  # reported to every request that needs the App, and logged once here
            _log.error("the server could not build its App", exc_info=True)
            with self._lock:
                self._failure = exc
                self._done.set()
            self._settled.set()
            return
        with self._lock:
            self._app = app
            self._done.set()
            callbacks, self._when_built = self._when_built, []
            closed = self._closed
        try:
            if closed:  # the server stopped while this was being built: nobody used it, nothing is to start
                app.close()
                return
            for callback in callbacks:
                callback(app)
        finally:
            self._settled.set()

    def when_built(self, callback: Callable[[App], None]) -> None:
        """Call `callback(app)` once the App is built: now if it is, else in the building thread."""
        with self._lock:
            app = self._app
            if app is None:
                self._when_built.append(callback)
                return
        callback(app)

    def built(self) -> App | None:
        return self._app

    async def get(self) -> App:
        """The App, built now (off the event loop) if nobody started it yet."""
        if not self._done.is_set():
            self.start()
            await anyio.to_thread.run_sync(self._done.wait, abandon_on_cancel=True)
        if self._app is None:
            raise AppNotBuilt("the server could not start its services; its log on stderr says why") \
                from self._failure
        return self._app

    async def listed_tools(self) -> list[ListedTool]:
        """What tools/list answers: the snapshot until the App is built (nothing can have activated a tool before
        that), the live registry after, or when no snapshot fits this constitution and profile."""
        listed = None if self._app is not None or self._snapshot is None else \
            self._snapshot.listed(self.settings.profile)
        return listed if listed is not None else live_listing((await self.get()).registry)

    def close(self) -> None:
        """Close the App if it was built. One still being built was used by no request (each waits until it is
        built): it is not waited for, and building it opens nothing (the store and the model open on first use),
        so the process may end while it runs; if it finishes first it closes itself without loading the model."""
        with self._lock:
            self._closed = True
            app = self._app
        if app is not None:
            self._settled.wait()  # what the callbacks start (the model load) is started before it is closed
            app.close()
