"""Edges of the wires that let something through or said too much.

* A TCP auth line without a string `auth` passed when the token was the text "None" (it was compared as
  `str(None)`).
* The TCP port let an HTTP request in when its request line was lower-case or tab-separated, and then ran
  its body's JSON-RPC lines.
* A Host header `127.0.0.1:PORT@evil.example` passed the Host check (its "port" was never read as one).
* A JSON batch got -32700 (over HTTP -32602 and pydantic's report); a batch is a well-formed JSON value
  that is no request this server takes: -32600, on every transport.
* Parse errors quoted Python ("maximum recursion depth exceeded ...", "sys.set_int_max_str_digits()",
  "validation errors for union[...]"); now they say what is wrong in the client's terms."""

import json

import anyio
import httpx2
import pytest
from transport_helpers import (
    ACCEPT,
    INIT,
    INITIALIZED,
    RawLines,
    http_base,
    open_http_session,
    request,
    serving,
    tool_call,
)

from contextgraph.config import Settings
from contextgraph.transports.security import HostRules
from contextgraph.transports.wire import looks_like_http

pytestmark = pytest.mark.anyio
DEEP = "[" * 100_000 + "]" * 100_000
LONG_NUMBER = '{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"n": ' + "1" * 5000 + "}}"
PYTHON_WORDS = ("recursion", "set_int_max_str_digits", "validation error", "union[", "JSONRPCRequest", "Traceback")


async def test_an_auth_line_without_a_string_token_is_refused(make_net_app):
    app = make_net_app(CONTEXTGRAPH_TOKEN="None")
    async with serving(app, ("tcp",)) as where:
        for first in ({}, {"auth": None}, {"other": 1}):
            async with RawLines.connect(*where.tcp) as wire:
                await wire.send(first)
                await wire.send(request(1, "initialize", INIT))
                refused = await wire.receive()
                assert refused["error"]["code"] == -32600 and "Unauthorized" in refused["error"]["message"], first
                assert await wire.receive() is None  # closed: the initialize never ran
        async with RawLines.connect(*where.tcp) as wire:
            await wire.send({"auth": "None"})
            await wire.send(request(1, "initialize", INIT))
            assert "result" in await wire.receive()


@pytest.mark.parametrize("request_line", [b"post / http/1.1", b"POST\t/\tHTTP/1.1", b"Post  /x  Http/1.0 "])
async def test_every_spelling_of_an_http_request_line_is_refused_on_the_tcp_port(net_app, request_line):
    assert looks_like_http(request_line)
    body = "\n".join(json.dumps(m) for m in [request(1, "initialize", INIT), INITIALIZED,
                                             tool_call(2, "temporary_scratchpad", {"action": "read"})]) + "\n"
    async with serving(net_app, ("tcp",)) as where, await anyio.connect_tcp(*where.tcp) as stream:
        await stream.send(request_line + b"\r\n\r\n" + body.encode())
        answer = b""
        with anyio.fail_after(10):
            while chunk := await _receive(stream):
                answer += chunk
    assert answer.startswith(b"HTTP/1.1 400") and b"jsonrpc" not in answer


async def _receive(stream) -> bytes:
    try:
        return await stream.receive()
    except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionError):
        return b""


async def test_a_host_with_userinfo_or_junk_is_refused(net_app, tmp_path):
    rules = HostRules(Settings.from_env({"CONTEXTGRAPH_HOME": str(tmp_path)}))
    for host in ("127.0.0.1:7879@evil.example", "localhost:80/evil", "127.0.0.1:http", "localhost evil", "[::1]x"):
        assert not rules.host_allowed(host), host
    assert not rules.origin_allowed("http://127.0.0.1:7879@evil.example")
    async with serving(net_app, ("http",)) as where, httpx2.AsyncClient(base_url=http_base(where), timeout=10) as http:
        port = where.http[1]
        refused = await http.get("/health", headers={"host": f"127.0.0.1:{port}@evil.example"})
        assert refused.status_code == 421
        assert (await http.get("/health", headers={"host": f"127.0.0.1:{port}"})).status_code == 200


def _clean(error: dict) -> bool:
    return not any(word.lower() in json.dumps(error).lower() for word in PYTHON_WORDS)


async def test_batches_and_bad_json_over_tcp(net_app):
    async with serving(net_app, ("tcp",)) as where, RawLines.connect(*where.tcp) as wire:
        await wire.send(request(1, "initialize", INIT))
        await wire.receive()
        await wire.send(INITIALIZED)
        await wire.send([request(2, "ping"), request(3, "ping")])
        batch = (await wire.receive())["error"]
        assert batch["code"] == -32600 and "batch" in batch["message"] and _clean(batch)
        await wire.send({"jsonrpc": "2.0", "result": "no id"})
        shapeless = (await wire.receive())["error"]
        assert shapeless["code"] == -32600 and "JSON-RPC 2.0 message" in shapeless["message"] and _clean(shapeless)
        for line, says in ((DEEP, "nested too deeply"), (LONG_NUMBER, "number"), ("{not json", "line 1 column 2"),
                           (b'\xff{"jsonrpc"}', "UTF-8")):
            await wire.send(line)
            error = (await wire.receive())["error"]
            assert error["code"] == -32700 and says in error["message"] and _clean(error), error
        await wire.send(request(4, "ping"))
        assert (await wire.receive())["id"] == 4  # still usable


async def test_batches_and_bad_json_over_http(net_app):
    async with serving(net_app, ("http",)) as where, httpx2.AsyncClient(base_url=http_base(where), timeout=10) as http:
        session = await open_http_session(http)
        discover = {**ACCEPT, "mcp-protocol-version": "2026-07-28"}
        for headers in (session, discover):
            batch = await http.post("/mcp", headers=headers, json=[request(2, "ping")])
            assert batch.status_code == 400 and batch.json()["error"]["code"] == -32600, batch.text
            assert "batch" in batch.json()["error"]["message"] and _clean(batch.json())
            for body, code in ((DEEP, -32700), (LONG_NUMBER, -32700), ('{"jsonrpc": "2.0"}', -32600)):
                answer = await http.post("/mcp", headers=headers, content=body)
                assert answer.status_code == 400 and answer.json()["error"]["code"] == code, answer.text
                assert _clean(answer.json()), answer.text
        async with http.stream("GET", "/sse") as stream:  # legacy SSE: the POST itself carries the error
            async for line in stream.aiter_lines():
                if line.startswith("data:") and "session_id=" in line:
                    endpoint = line.removeprefix("data:").strip()
                    break
            batch = await http.post(endpoint, headers=ACCEPT, json=[request(7, "ping")])
            assert batch.status_code == 400 and batch.json()["error"]["code"] == -32600 and _clean(batch.json())
            deep = await http.post(endpoint, headers=ACCEPT, content=DEEP)
            assert deep.status_code == 400 and deep.json()["error"]["code"] == -32700 and _clean(deep.json())
