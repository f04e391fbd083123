"""A session's handle is a secret that never leaves it, and the session answers only to whoever opened it.

Memories stored over Streamable HTTP carried `session: "http:<Mcp-Session-Id>"`, readable by any client in
get_recent_context and search_graph; with that id another client read and cleared the victim's scratchpad,
read its session-only context and DELETEd the session. A discover-era request carrying
someone's `mcp-session-id` header was filed under that session too. Now records carry an opaque label, a
session answers 404 to a request from another peer (or principal), and only a handshake-era /mcp request
that the SDK matched to its session may name it by the header.

The second client here connects from 127.0.0.2 (a loopback address of its own), so it is another peer."""

import json

import httpx2
import pytest
from transport_helpers import ACCEPT, INIT, http_base, open_http_session, request, serving, tool_call

from contextgraph.tools.dispatch import ToolCallFailed

pytestmark = pytest.mark.anyio
VERSION = "2025-06-18"
DISCOVER_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                 "io.modelcontextprotocol/clientCapabilities": {}}




def _result(response: httpx2.Response) -> dict:
    """The structuredContent of a tools/call answered as JSON or as one SSE message event."""
    text = response.text
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        text = next(line[5:].strip() for line in text.splitlines() if line.startswith("data:") and line[5:].strip())
    return json.loads(text)["result"]["structuredContent"]


def _elsewhere(base: str) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(base_url=base, timeout=10, transport=httpx2.AsyncHTTPTransport(local_address="127.0.0.2"))


async def test_records_carry_an_opaque_label_not_the_session_id(net_app):
    async with serving(net_app, ("http",)) as where, httpx2.AsyncClient(base_url=http_base(where), timeout=60) as http:
        victim = await open_http_session(http, VERSION)
        stored = await http.post("/mcp", headers=victim, json=tool_call(2, "store_memory", {
            "content": "The release key lives in the vault.", "rationale": "where the release key is kept"}))
        assert stored.status_code == 200, stored.text
        recent = await http.post("/mcp", headers=victim, json=tool_call(3, "get_recent_context", {}))
        memories = _result(recent)["memories"]
        mine = _result(await http.post("/mcp", headers=victim, json=tool_call(4, "get_recent_context",
                                                                               {"session_only": True})))
    sid = victim["mcp-session-id"]
    assert memories and all(sid not in json.dumps(m) for m in memories)
    assert memories[0]["session"].startswith("http:")
    assert [m["id"] for m in mine["memories"]] == [memories[0]["id"]]  # the label still groups the session


async def test_another_peer_presenting_the_session_id_gets_404_and_changes_nothing(net_app):
    async with serving(net_app, ("http",)) as where, httpx2.AsyncClient(base_url=http_base(where), timeout=10) as http:
        victim = await open_http_session(http, VERSION)
        write = tool_call(2, "temporary_scratchpad", {"action": "write", "key": "plan", "value": "secret plan"})
        assert (await http.post("/mcp", headers=victim, json=write)).status_code == 200
        async with _elsewhere(http_base(where)) as thief:
            read = tool_call(3, "temporary_scratchpad", {"action": "read"})
            clear = tool_call(4, "temporary_scratchpad", {"action": "clear"})
            assert (await thief.post("/mcp", headers=victim, json=read)).status_code == 404
            assert (await thief.post("/mcp", headers=victim, json=clear)).status_code == 404
            assert (await thief.get("/mcp", headers={**victim, "accept": "text/event-stream"})).status_code == 404
            assert (await thief.delete("/mcp", headers=victim)).status_code == 404
        still = await http.post("/mcp", headers=victim, json=tool_call(5, "temporary_scratchpad", {"action": "read"}))
        assert still.status_code == 200 and _result(still)["entries"] == {"plan": "secret plan"}


async def test_a_session_opened_with_the_token_answers_only_to_that_peer(make_net_app):
    app = make_net_app(CONTEXTGRAPH_TOKEN="s3cret-token")
    auth = {"authorization": "Bearer s3cret-token"}
    async with serving(app, ("http",)) as where, \
            httpx2.AsyncClient(base_url=http_base(where), timeout=10, headers=auth) as http:
        victim = await open_http_session(http, VERSION)
        async with _elsewhere(http_base(where)) as thief:
            thief.headers.update(auth)
            assert (await thief.post("/mcp", headers=victim, json=tool_call(2, "tool_active"))).status_code == 404
        assert (await http.post("/mcp", headers=victim, json=tool_call(3, "tool_active"))).status_code == 200


async def test_a_session_id_header_on_other_requests_names_no_session(net_app):
    async with serving(net_app, ("http",)) as where, httpx2.AsyncClient(base_url=http_base(where), timeout=10) as http:
        victim = await open_http_session(http, VERSION)
        write = tool_call(2, "temporary_scratchpad", {"action": "write", "key": "plan", "value": "secret plan"})
        assert (await http.post("/mcp", headers=victim, json=write)).status_code == 200
        # A discover-era request (no handshake, no session) carrying the victim's id.
        discover = {**ACCEPT, "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call",
                    "mcp-name": "temporary_scratchpad", "mcp-session-id": victim["mcp-session-id"]}
        read = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "temporary_scratchpad", "arguments": {"action": "read"}, "_meta": DISCOVER_META}}
        async with httpx2.AsyncClient(base_url=http_base(where), timeout=10) as stranger:
            answered = await stranger.post("/mcp", headers=discover, json=read)
        assert answered.status_code == 200, answered.text
        assert answered.json()["result"]["structuredContent"]["entries"] == {}
        # A discover-era client's cookie presented from another peer names another (empty) session.
        async with httpx2.AsyncClient(base_url=http_base(where), timeout=10) as owner:
            discover_write = {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
                "name": "temporary_scratchpad", "arguments": {"action": "write", "key": "k", "value": "v"},
                "_meta": DISCOVER_META}}
            del discover["mcp-session-id"]
            written = await owner.post("/mcp", headers=discover, json=discover_write)
            cookie = written.headers["set-cookie"].split(";")[0]
        async with _elsewhere(http_base(where)) as thief:
            stolen = await thief.post("/mcp", headers={**discover, "cookie": cookie}, json=read)
        assert stolen.json()["result"]["structuredContent"]["entries"] == {}
        still = await http.post("/mcp", headers=victim, json=tool_call(5, "temporary_scratchpad", {"action": "read"}))
        assert _result(still)["entries"] == {"plan": "secret plan"}


@pytest.mark.parametrize("tool", ["store_memory", "inject_context"])
async def test_a_memory_cannot_be_filed_under_another_clients_session_label(call, tool):
    """Records show labels; naming another client's label would put a memory in its session-only context."""
    mine, theirs = "conn:" + "1" * 32, "http:" + "2" * 32  # what two transports' labels look like
    arguments = {"content": "Deploy from the red cluster.", "rationale": "planted in another session"}
    with pytest.raises(ToolCallFailed) as refused:
        await call(tool, {**arguments, "session_id": theirs}, session=mine)
    assert refused.value.code == -32602 and refused.value.data["field"] == "session_id"


async def test_a_legacy_sse_session_answers_only_to_its_peer(net_app):
    async with serving(net_app, ("http",)) as where, httpx2.AsyncClient(base_url=http_base(where), timeout=10) as http:
        async with http.stream("GET", "/sse") as stream:
            async for line in stream.aiter_lines():
                if line.startswith("data:") and "session_id=" in line:
                    endpoint = line.removeprefix("data:").strip()
                    break
            session_id = endpoint.rpartition("=")[2]
            async with _elsewhere(http_base(where)) as thief:
                posted = await thief.post(endpoint, headers=ACCEPT, json=request(1, "initialize", INIT))
                assert posted.status_code == 404 and posted.json()["error"]["code"] == -32016
                async with thief.stream("GET", f"/sse?session_id={session_id}") as resumed:
                    assert resumed.status_code == 404
            assert (await http.post(endpoint, headers=ACCEPT, json=request(1, "initialize", INIT))).status_code == 202
