"""`serve --transport tcp|http|all`: binds the listeners, serves until cancelled, then shuts down in order
(SSE streams ended, uvicorn drained for at most `transport.http_shutdown_seconds`, the store closed).

One App and one Server for every listener, so every connection of every transport shares the engine, the
store, the registry's active set and the subscription bus that carries tools/list_changed.
"""

from __future__ import annotations

import contextlib
import socket
from dataclasses import dataclass, field

import anyio
from anyio.abc import SocketAttribute, TaskStatus

from contextgraph.app import App
from contextgraph.log import get_logger
from contextgraph.server import build_server
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
            out.append(f"tcp://{_hostport(*self.tcp)}")
        if self.http:
            base = f"http://{_hostport(*self.http)}"
            out.append(f"{base}/mcp (Streamable HTTP), {base}/sse (legacy SSE), {base}/health, {base}/dashboard")
        return "; ".join(out)


def _hostport(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def transports_of(name: str) -> tuple[str, ...]:
    return ("tcp", "http") if name == "all" else (name,)


def _bind(host: str, port: int) -> socket.socket:
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                         flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


async def serve_network(app: App, kinds: tuple[str, ...], *,
                        task_status: TaskStatus[Listening] = anyio.TASK_STATUS_IGNORED) -> None:
    """Serve the given transports ("tcp", "http") until cancelled; reports a Listening when bound."""
    settings = app.settings
    check_bind(settings)
    server = build_server(app)
    listening = Listening()
    try:
        async with anyio.create_task_group() as tg:
            tcp = None
            if "tcp" in kinds:
                listener = await anyio.create_tcp_listener(local_host=settings.host, local_port=settings.port)
                listening.tcp = (settings.host, listener.extra(SocketAttribute.local_port))
                tcp = TcpServer(app, server)
                listening.parts["tcp"] = tcp
                await tg.start(tcp.serve, listener)
            if "http" in kinds:
                import uvicorn

                from contextgraph.transports.http import HttpService  # starlette/uvicorn only when served
                from contextgraph.transports.http_protocol import head_timed_h11

                sock = _bind(settings.host, settings.http_port)
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
                tg.start_soon(_run_uvicorn, _uvicorn_server(config), sock, http_service)
            _log.info("listening", endpoints=listening.describe())
            task_status.started(listening)
            await anyio.sleep_forever()
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(app.close)  # saves the indexes; the store is already durable
        _log.info("stopped", endpoints=listening.describe())


def _uvicorn_server(config):
    """uvicorn.Server without its own signal handlers: the CLI handles signals for every transport alike."""
    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self):
            yield

    return Server(config)


async def _run_uvicorn(server, sock: socket.socket, service) -> None:
    """Run uvicorn shielded from cancellation; when the caller is cancelled, end the SSE streams, ask uvicorn
    to exit (it drains open requests for at most timeout_graceful_shutdown) and wait for it."""
    done = anyio.Event()

    async def serve() -> None:
        with anyio.CancelScope(shield=True):
            try:
                await server.serve(sockets=[sock])
            finally:
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
