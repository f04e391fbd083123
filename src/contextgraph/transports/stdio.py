"""stdio: newline-delimited JSON-RPC on stdin/stdout (stdout carries only protocol bytes; logs go to stderr).

The same session loop as every TCP connection (relay.serve_lines: drain on EOF, -32700/-32600 answers,
envelope checks) over the process's own descriptors. Not the SDK's stdio_server, for two reasons:

* it reads stdin in a worker thread blocked in readline, which no cancellation can interrupt: Ctrl-C never
  stopped the server and SIGTERM had to kill it, unsaved. Here stdin is read only when the
  event loop reports it readable, so the CLI's signal handler cancels the read at once and the App closes.
* it buffers a line of any length (a 50 MB line was parsed); here a line is capped by
  `transport.max_message_bytes`, the limit TCP lines and HTTP bodies already have.

Like the SDK, while serving fd 0 reads /dev/null and fd 1 writes to stderr, so a library or child process
that prints cannot corrupt the protocol stream; the wire is served from private duplicates.
"""

from __future__ import annotations

import contextlib
import os
import select
from collections.abc import Iterator
from typing import TYPE_CHECKING

import anyio
import anyio.lowlevel
from anyio.abc import ByteReceiveStream

from contextgraph.deferred_app import DeferredApp
from contextgraph.server import build_server
from contextgraph.transports.relay import serve_lines
from contextgraph.transports.wire import read_lines

if TYPE_CHECKING:
    from contextgraph.app import App

_PIPE_BUF = getattr(select, "PIPE_BUF", 512)  # a write this small to a writable pipe never blocks (POSIX)


def _pollable(fd: int) -> bool:
    """Whether the event loop can watch fd (pipes, sockets, terminals: yes; regular files, /dev/null: no)."""
    poller = select.epoll() if hasattr(select, "epoll") else None
    if poller is None:
        return True
    try:
        poller.register(fd, select.EPOLLIN)
    except OSError:
        return False
    finally:
        poller.close()
    return True


class FdReader(ByteReceiveStream):
    """Reads a descriptor without a blocking thread: waits for readability, then reads what is there. A
    descriptor the loop cannot watch (a regular file) never blocks for long, so it is read directly."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._watch = _pollable(fd)

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self._watch:
            await anyio.wait_readable(self.fd)
        else:
            await anyio.lowlevel.checkpoint()
        data = os.read(self.fd, max_bytes)
        if not data:
            raise anyio.EndOfStream
        return data

    async def aclose(self) -> None:
        pass


class FdWriter:
    """Writes a descriptor in chunks of at most PIPE_BUF once it is writable, so a client that stops reading
    stalls only this task, never a thread that shutdown would have to wait for."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._watch = _pollable(fd)

    async def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            if self._watch:
                await anyio.wait_writable(self.fd)
            view = view[os.write(self.fd, view[:_PIPE_BUF]):]


@contextlib.contextmanager
def claimed_stdio() -> Iterator[tuple[int, int]]:
    """(wire_in, wire_out): private duplicates of fd 0 and 1, while fd 0 reads /dev/null and fd 1 writes to
    stderr; both restored on exit."""
    wire_in, wire_out = os.dup(0), os.dup(1)  # non-inheritable (PEP 446): children never get the wire
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            os.dup2(null, 0)
        finally:
            os.close(null)
        os.dup2(2, 1)
        yield wire_in, wire_out
    finally:
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)
        os.close(wire_in)
        os.close(wire_out)


async def serve_stdio(app: App | DeferredApp) -> None:
    """Serve until stdin ends (after the drain) or the caller is cancelled (a signal); closes the App either
    way, shielded, so the indexes and the engine state are saved. `contextgraph serve` hands it a DeferredApp:
    the handshake is answered before the App is built (deferred_app.py)."""
    server = build_server(app)
    c = app.constitution
    try:
        with claimed_stdio() as (wire_in, wire_out):
            await serve_lines(server, read_lines(FdReader(wire_in), int(c.get("transport.max_message_bytes"))),
                              FdWriter(wire_out).send, drain_seconds=float(c.get("transport.stdio_drain_seconds")),
                              constitution=c)
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(app.close)  # saves the indexes; the store is already durable
