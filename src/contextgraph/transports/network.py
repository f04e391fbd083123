"""`serve --transport tcp|http|all`: binds the listeners, serves until cancelled, then shuts down in order
(SSE streams ended, uvicorn drained for at most `transport.http_shutdown_seconds`, the store closed).

One App and one Server for every listener, so every connection of every transport shares the engine, the
store, the registry's active set and the subscription bus that carries tools/list_changed.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import SocketAttribute, TaskStatus

from contextgraph.app import App
from contextgraph.log import get_logger
from contextgraph.server import build_server
from contextgraph.transports import session_tag, worker_inbox
from contextgraph.transports.binding import bind, hostport
from contextgraph.transports.security import check_bind
from contextgraph.transports.tcp import TcpServer

_log = get_logger("server")


@dataclass
class Listening:
    """Where the server listens: `tcp` and `http` as (host, port) when served."""

    tcp: tuple[str, int] | None = None
    http: tuple[str, int] | None = None
    parts: dict = field(default_factory=dict)  # the TcpServer and HttpService, for health and tests

    def describe(self) -> str:
        out = []
        if self.tcp:
            out.append(f"tcp://{hostport(*self.tcp)}")
        if self.http:
            base = f"http://{hostport(*self.http)}"
            out.append(f"{base}/mcp (Streamable HTTP), {base}/sse (legacy SSE), {base}/health, {base}/dashboard")
        return "; ".join(out)


def transports_of(name: str) -> tuple[str, ...]:
    return ("tcp", "http") if name == "all" else (name,)


async def serve_network(app: App, kinds: tuple[str, ...], *, inbox: socket.socket | None = None,
                        task_status: TaskStatus[Listening] = anyio.TASK_STATUS_IGNORED) -> None:
    """Serve the given transports ("tcp", "http") until cancelled; reports a Listening when bound. With an
    `inbox` this process is a worker of a pool: it binds nothing and serves the connections the front process
    hands it (transports/worker_inbox.py)."""
    settings = app.settings
    check_bind(settings)
    server = build_server(app)
    listening = Listening()
    handlers: dict[bytes, Callable[[socket.socket], Any]] = {}
    try:
        async with anyio.create_task_group() as tg:
            tcp = None
            if "tcp" in kinds:
                tcp = TcpServer(app, server)
                listening.parts["tcp"] = tcp
                if inbox is None:
                    listener = await anyio.create_tcp_listener(local_host=settings.host, local_port=settings.port)
                    listening.tcp = (settings.host, listener.extra(SocketAttribute.local_port))
                    await tg.start(tcp.serve, listener)
                else:
                    handlers[worker_inbox.TCP] = worker_inbox.tcp_handoff(tcp.handle)
            if "http" in kinds:
                import uvicorn

                from contextgraph.transports.http import HttpService  # starlette/uvicorn only when served
                from contextgraph.transports.http_protocol import head_timed_h11

                sock = bind(settings.host, settings.http_port) if inbox is None else None
                if sock is not None:
                    listening.http = (settings.host, sock.getsockname()[1])
                http_service = HttpService(
                    app, server, extra_health=(lambda: {"tcp_connections": tcp.connections}) if tcp else None)
                listening.parts["http"] = http_service
                c = app.constitution
                config = uvicorn.Config(
                    http_service.asgi, log_config=None, log_level="warning", access_log=False, lifespan="on",
                    ws="none", server_header=False, http=head_timed_h11(float(c.get("transport.http_head_seconds"))),
                    h11_max_incomplete_event_size=int(c.get("transport.http_max_head_bytes")),
                    timeout_keep_alive=int(c.get("transport.http_keep_alive_seconds")),
                    timeout_graceful_shutdown=int(c.get("transport.http_shutdown_seconds")))
                uvicorn_server = _uvicorn_server(config)
                tg.start_soon(_run_uvicorn, uvicorn_server, sock, http_service)
                if inbox is not None:
                    handlers[worker_inbox.HTTP] = worker_inbox.uvicorn_handoff(uvicorn_server)
            if inbox is None:
                _log.info("listening", endpoints=listening.describe())
            else:
                _log.info("worker ready", worker=session_tag.worker())
            task_status.started(listening)
            if inbox is None:
                await anyio.sleep_forever()
            else:
                await worker_inbox.receive(inbox, handlers, tg)  # until the front closes it
            tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(app.close)  # saves the indexes; the store is already durable
        if inbox is None:
            _log.info("stopped", endpoints=listening.describe())
        else:
            _log.info("worker stopped", worker=session_tag.worker())


def _uvicorn_server(config):
    """uvicorn.Server without its own signal handlers: the CLI handles signals for every transport alike."""
    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self):
            yield

    return Server(config)


async def _run_uvicorn(server, sock: socket.socket | None, service) -> None:
    """Run uvicorn shielded from cancellation; when the caller is cancelled, end the SSE streams, ask uvicorn
    to exit (it drains open requests for at most timeout_graceful_shutdown) and wait for it."""
    done = anyio.Event()

    async def serve() -> None:
        with anyio.CancelScope(shield=True):
            try:
                await server.serve(sockets=[] if sock is None else [sock])  # none: a worker, handed connections
            finally:
                if sock is not None:
                    sock.close()
                done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(serve)
        try:
            await done.wait()
        finally:
            service.sse.close_all()
            service.dashboard.close_all()  # live dashboard streams end too, or they would hold the drain
            server.should_exit = True
