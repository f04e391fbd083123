"""What idle or stalled clients can hold, bounded.

Before: each TCP connection could buffer 4 MiB of an unfinished line with no cap on connections; the HTTP
port waited forever for a half-sent request's head or body; legacy SSE sessions were unbounded; and a
hundred Streamable HTTP sessions that only held their GET stream made every new `initialize` a 503.

Small limits are set on the constitution the server reads (restored after each test)."""

from contextlib import asynccontextmanager

import anyio
import httpx2
import pytest
from anyio.abc import SocketAttribute
from transport_helpers import ACCEPT, INIT, INITIALIZED, RawLines, http_base, request, serving

from contextgraph.server import build_server
from contextgraph.transports.tcp import TcpServer

pytestmark = pytest.mark.anyio
VERSION = "2025-06-18"


@pytest.fixture
def limits(net_app, monkeypatch):
    """limits(name=value, ...): set transport.* values of the constitution the test's server reads."""
    def set_limits(**values):
        for name, value in values.items():
            monkeypatch.setitem(net_app.constitution["transport"], name, value)
    return set_limits


@asynccontextmanager
async def tcp_server(app, **caps):
    tcp = TcpServer(app, build_server(app), **caps)
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(SocketAttribute.local_port)
    async with anyio.create_task_group() as tg:
        await tg.start(tcp.serve, listener)
        yield tcp, port
        tg.cancel_scope.cancel()


async def _until_closed(stream) -> bytes:
    """Everything the server sends until it closes the connection."""
    received = b""
    with anyio.fail_after(10):
        while True:
            try:
                received += await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionError):
                return received


async def test_tcp_connections_beyond_the_cap_are_refused_with_a_message(net_app):
    async with tcp_server(net_app, max_connections=3) as (tcp, port):
        stalled = [await anyio.connect_tcp("127.0.0.1", port) for _ in range(3)]
        for stream in stalled:
            await stream.send(b'{"jsonrpc": "2.0", "id": 1, "method": "pi')  # an unfinished line, held
        with anyio.fail_after(10):
            while tcp.connections < 3:
                await anyio.sleep(0.02)
        async with await anyio.connect_tcp("127.0.0.1", port) as extra:
            refused = await _until_closed(extra)
        assert b"Too many connections" in refused and b'"id":null' in refused
        await stalled.pop().aclose()
        with anyio.fail_after(10):
            while tcp.connections > 2:
                await anyio.sleep(0.02)
        async with RawLines.connect("127.0.0.1", port) as wire:  # room again
            await wire.send(request(1, "initialize", INIT))
            assert "result" in await wire.receive()
        for stream in stalled:
            await stream.aclose()


async def test_a_tcp_line_is_bounded_below_the_message_limit(net_app):
    line_limit = int(net_app.constitution.get("transport.tcp_max_line_bytes"))
    assert line_limit < int(net_app.constitution.get("transport.max_message_bytes"))
    async with serving(net_app, ("tcp",)) as where, RawLines.connect(*where.tcp) as wire:
        await wire.send(request(1, "initialize", INIT))
        await wire.receive()
        await wire.send(INITIALIZED)
        pad = b"x" * line_limit
        await wire.send(b'{"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"pad": "' + pad + b'"}}')
        too_long = (await wire.receive())["error"]
        assert too_long["code"] == -32600 and too_long["data"]["max_bytes"] == line_limit
        await wire.send(request(3, "ping"))
        assert (await wire.receive())["id"] == 3


async def test_a_half_sent_http_head_is_answered_408_and_closed(net_app, limits):
    limits(http_head_seconds=0.5)
    async with serving(net_app, ("http",)) as where:
        host, port = where.http
        half = [await anyio.connect_tcp(host, port) for _ in range(5)]
        for stream in half[:4]:
            await stream.send(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl")
        # half[4] sends nothing at all
        answers = [await _until_closed(stream) for stream in half]
        for stream in half:
            await stream.aclose()
        assert all(a.startswith(b"HTTP/1.1 408") for a in answers), answers
        async with httpx2.AsyncClient(base_url=http_base(where), timeout=10) as http:  # whole requests still fine
            assert (await http.get("/health")).status_code == 200


async def test_a_half_sent_http_body_is_answered_408(net_app, limits):
    limits(http_body_seconds=0.5)
    async with serving(net_app, ("http",)) as where:
        host, port = where.http
        async with await anyio.connect_tcp(host, port) as stream:
            await stream.send(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                              b"Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"")
            answer = await _until_closed(stream)
    assert answer.startswith(b"HTTP/1.1 408") and b"Request timeout" in answer


async def test_legacy_sse_sessions_are_bounded(net_app, limits):
    limits(sse_max_sessions=2)
    async with serving(net_app, ("http",)) as where, httpx2.AsyncClient(base_url=http_base(where), timeout=10) as http:
        first = http.stream("GET", "/sse")
        opened = await first.__aenter__()
        assert opened.status_code == 200
        async with http.stream("GET", "/sse") as second:
            assert second.status_code == 200
            async with http.stream("GET", "/sse") as refused:  # a stream, if it were opened: not read to its end
                assert refused.status_code == 503
                assert "Too many legacy SSE sessions" in (await refused.aread()).decode()
            await first.__aexit__(None, None, None)  # its session waits out its grace, detached
            with anyio.fail_after(10):  # the server notices the drop; then the detached session makes room
                while True:
                    async with http.stream("GET", "/sse") as third:
                        if third.status_code == 200:
                            break
                    await anyio.sleep(0.05)
            assert (await http.get("/health")).json()["sessions"]["sse"] <= 2


async def test_held_get_streams_never_make_initialize_fail(make_net_app):
    app = make_net_app(CONTEXTGRAPH_HTTP_MAX_SESSIONS="3")
    initialize = request(1, "initialize", {**INIT, "protocolVersion": VERSION})
    async with serving(app, ("http",)) as where, httpx2.AsyncClient(base_url=http_base(where), timeout=10) as http:
        held = []
        for _ in range(3):
            opened = await http.post("/mcp", headers=ACCEPT, json=initialize)
            session = {**ACCEPT, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": VERSION}
            assert (await http.post("/mcp", headers=session, json=INITIALIZED)).status_code == 202
            stream = http.stream("GET", "/mcp", headers={**session, "accept": "text/event-stream"})
            assert (await stream.__aenter__()).status_code == 200
            held.append(stream)
        try:
            for _ in range(3):  # each new client makes room by closing a session that only holds its stream
                assert (await http.post("/mcp", headers=ACCEPT, json=initialize)).status_code == 200
            assert (await http.get("/health")).json()["sessions"]["streamable_http"] == 3
        finally:
            for stream in held:
                with anyio.move_on_after(5):
                    await stream.__aexit__(None, None, None)
