"""A pool worker's side of `serve --workers N`: the connections the front process accepted arrive here.

The front (transports/worker_pool.py) accepts each connection and sends its file descriptor over a Unix
SOCK_SEQPACKET socket, one message per connection whose one byte says which listener took it (`t` TCP, `h`
HTTP). The worker serves it exactly as if it had accepted it itself: the socket is the client's own, so the
peer address (which the HTTP session owner check and the logs use) is the client's, and the TCP transport and
uvicorn see an ordinary connection. The inbox closing means the front is gone: the worker stops.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from functools import partial
from typing import Any

import anyio
from anyio.abc import SocketStream, TaskGroup

from contextgraph.log import get_logger

_log = get_logger("server")
TCP, HTTP = b"t", b"h"


def uvicorn_handoff(server: Any) -> Callable[[socket.socket], Any]:
    """Hand an accepted socket to a started uvicorn Server, as its own listener would (uvicorn.Server.startup
    builds the same protocol factory): the server counts it among its connections and drains it on exit."""
    config = server.config

    async def hand(sock: socket.socket) -> None:
        # the lifespan (session manager, SSE) must run before a request arrives; uvicorn offers no event for it
        while not server.started:  # noqa: ASYNC110
            await anyio.sleep(0.01)
        factory = partial(config.http_protocol_class, config=config, server_state=server.server_state,
                          app_state=server.lifespan.state)
        await asyncio.get_running_loop().connect_accepted_socket(factory, sock)

    return hand


async def receive(inbox: socket.socket, handlers: dict[bytes, Callable[[socket.socket], Any]],
                  tg: TaskGroup) -> None:
    """Serve every connection the front sends until it closes the inbox."""
    inbox.setblocking(False)
    while True:
        await anyio.wait_readable(inbox)
        try:
            kind, fds, _flags, _address = socket.recv_fds(inbox, 16, 1)
        except BlockingIOError:
            continue
        if not kind and not fds:  # the front closed its end: the pool is stopping
            _log.info("the front process closed the inbox; stopping")
            return
        for fd in fds:
            sock = socket.socket(fileno=fd)
            handler = handlers.get(kind)
            if handler is None:  # a listener this worker does not serve: never expected
                sock.close()
                continue
            tg.start_soon(_serve_one, handler, sock)


async def _serve_one(handler: Callable[[socket.socket], Any], sock: socket.socket) -> None:
    try:
        await handler(sock)
    except Exception:  # one connection's failure never stops the inbox
        _log.exception("a handed-over connection failed")
        sock.close()


def tcp_handoff(handle: Callable[[SocketStream], Any]) -> Callable[[socket.socket], Any]:
    async def hand(sock: socket.socket) -> None:
        await handle(await SocketStream.from_socket(sock))

    return hand
