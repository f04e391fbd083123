"""uvicorn's h11 protocol with a deadline on each request's head.

uvicorn bounds how long a kept-alive connection may sit idle (`timeout_keep_alive`), but it cancels that
timer on the first byte of a request and starts none on a new connection, so a client that sends half a
request line or half its headers (or connects and sends nothing) holds the connection, and its buffers,
until it goes away: a few hundred such clients hold the port. Here a connection waiting for a request's head
has `head_seconds` to complete it, counted from the connection's start or from the first byte after the
previous response; then it is answered 408 and closed. The body has its own deadline in http_envelope.
"""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.h11_impl import H11Protocol

_TIMED_OUT = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
              b"content-length: 48\r\n\r\nThe request's line and headers came too slowly.\n")


def head_timed_h11(head_seconds: float) -> type[H11Protocol]:
    """The protocol class to hand uvicorn.Config(http=...)."""

    class HeadTimedH11(H11Protocol):
        _head_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self._awaiting_head():
                if self._head_timer is None:  # the first byte of the next request starts its clock
                    self._arm()
            else:
                self._disarm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _awaiting_head(self) -> bool:
            return self.cycle is None or self.cycle.response_complete

        def _arm(self) -> None:
            self._disarm()
            self._head_timer = self.loop.call_later(head_seconds, self._expired)

        def _disarm(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _expired(self) -> None:
            self._head_timer = None
            if self._awaiting_head() and not self.transport.is_closing():
                self.transport.write(_TIMED_OUT)
                self.transport.close()

    return HeadTimedH11
