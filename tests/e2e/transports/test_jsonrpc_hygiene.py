"""Issue 12 item 5, on the wire: a request whose id is an object, array, float or bool is answered -32600 with
id null on every transport (it was read as a notification and never answered); stdio lines are capped at
the same `transport.max_message_bytes` as TCP lines and HTTP bodies; a request sent before `initialize`
is told so instead of "Invalid request parameters"."""

import json
import os
import subprocess
import sys
from pathlib import Path

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

from contextgraph.constitution import constitution

pytestmark = pytest.mark.anyio
SCRIPT = Path(sys.executable).parent / "contextgraph"
BAD_IDS = [{"a": 1}, [1], 1.5, True]


def _invalid_request(answer: dict) -> bool:
    return answer["id"] is None and answer["error"]["code"] == -32600 and "id" in answer["error"]["message"]


def _stdio(lines: list, home: Path, timeout: float = 120) -> list[dict]:
    """Pipe the lines into `contextgraph serve`, close stdin, return the answers in order."""
    data = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    done = subprocess.run([str(SCRIPT), "serve"], input=data, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "CONTEXTGRAPH_HOME": str(home), "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines()]


async def test_bad_request_ids_are_answered_over_tcp(net_app):
    async with serving(net_app, ("tcp",)) as where, RawLines.connect(*where.tcp) as wire:
        await wire.send(request(1, "initialize", INIT))
        await wire.receive()
        await wire.send(INITIALIZED)
        for bad in BAD_IDS:
            await wire.send({"jsonrpc": "2.0", "id": bad, "method": "tools/call",
                             "params": {"name": "tool_active", "arguments": {}}})
            assert _invalid_request(await wire.receive()), bad
        await wire.send(tool_call(2, "tool_active"))
        assert (await wire.receive())["id"] == 2  # the connection is still usable


async def test_bad_request_ids_are_answered_over_http(net_app):
    async with serving(net_app, ("http",)) as where, httpx2.AsyncClient(base_url=http_base(where), timeout=10) as http:
        session = await open_http_session(http)
        discover = {**ACCEPT, "mcp-protocol-version": "2026-07-28"}
        for headers in (session, discover):
            for bad in BAD_IDS:
                answer = await http.post("/mcp", headers=headers, json={"jsonrpc": "2.0", "id": bad, "method": "ping"})
                assert answer.status_code == 400 and _invalid_request(answer.json()), (headers, bad)
        # legacy SSE: the POST itself carries the error (the stream would have no id to answer)
        async with http.stream("GET", "/sse") as stream:
            async for line in stream.aiter_lines():
                if line.startswith("data:") and "session_id=" in line:
                    endpoint = line.removeprefix("data:").strip()
                    break
            answer = await http.post(endpoint, headers=ACCEPT, json={"jsonrpc": "2.0", "id": [7], "method": "ping"})
            assert answer.status_code == 400 and _invalid_request(answer.json())


async def test_a_request_before_initialize_is_told_to_initialize(net_app):
    async with serving(net_app, ("tcp",)) as where, RawLines.connect(*where.tcp) as wire:
        await wire.send(tool_call(1, "tool_active"))
        refused = (await wire.receive())["error"]
        assert refused["code"] == -32600 and refused["message"].startswith("Not initialized")
        assert "initialize" in refused["message"] and "Invalid request parameters" not in refused["message"]
        assert "_cognitive_pulse" in refused["data"]  # a tools/call error, like every other
        await wire.send(request(2, "no/such_method"))
        assert (await wire.receive())["error"]["code"] == -32601  # unknown methods keep their own code
        await wire.send(request(3, "ping"))
        assert (await wire.receive())["result"] == {}  # ping is allowed before the handshake
        await wire.send(request(4, "initialize", INIT))
        await wire.receive()
        await wire.send(INITIALIZED)
        await wire.send(tool_call(5, "tool_active"))
        assert "result" in await wire.receive()


def test_stdio_caps_a_line_like_tcp_and_checks_ids(tmp_path):
    limit = int(constitution().get("transport.max_message_bytes"))
    huge = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"pad": "x" * limit}})
    answers = _stdio([
        request(0, "initialize", INIT), INITIALIZED,
        huge,
        {"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"},
        request(3, "ping"),
    ], tmp_path)
    too_large = next(a for a in answers
                     if a.get("error", {}).get("code") == -32600 and "max_bytes" in a["error"]["data"])
    assert too_large["id"] is None and too_large["error"]["data"]["max_bytes"] == limit
    assert not any(a.get("id") == 2 for a in answers)  # the oversized ping was never parsed
    assert any(_invalid_request(a) for a in answers)
    assert any(a.get("id") == 3 and a.get("result") == {} for a in answers)  # and the wire stayed usable
