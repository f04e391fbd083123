"""Streamable HTTP session identity and lifetime (issue 12 items 2 and 7).

Item 2: discover-mode (2026-07-28) clients have no HTTP session, and all of them shared one session key:
two independent clients read each other's temporary_scratchpad and get_recent_context(session_only) mixed
them. Each client now has its own identity (a cookie the SDK client keeps).

Item 7: sessions that clients leave open (no DELETE) piled up for the SDK's 30 minutes. They are reaped after
`http_session_idle_seconds` (CONTEXTGRAPH_HTTP_SESSION_IDLE) and at most `http_max_sessions`
(CONTEXTGRAPH_HTTP_MAX_SESSIONS) are open: a new session evicts the one idle the longest."""

import anyio
import httpx2
import pytest
from mcp import Client
from transport_helpers import ACCEPT, http_base, open_http_session, serving, tool_call

pytestmark = pytest.mark.anyio
VERSION = "2025-06-18"


async def _scratch(client: Client, action: str, **arguments) -> dict:
    return (await client.call_tool("temporary_scratchpad", {"action": action, **arguments})).structured_content


async def test_two_discover_mode_clients_do_not_share_a_session(net_app):
    async with serving(net_app, ("http",)) as where:
        url = http_base(where) + "/mcp"
        async with Client(url, mode="2026-07-28") as alice, Client(url, mode="2026-07-28") as bob:
            assert alice.protocol_version == bob.protocol_version == "2026-07-28"
            for round_ in range(3):  # interleaved, as two agents on one server would be
                await _scratch(alice, "write", key="plan", value=f"alice {round_}")
                await _scratch(bob, "write", key="plan", value=f"bob {round_}")
                assert (await _scratch(alice, "read"))["entries"] == {"plan": f"alice {round_}"}
                assert (await _scratch(bob, "read"))["entries"] == {"plan": f"bob {round_}"}

            stored = await alice.call_tool("store_memory", {"content": "Alice deploys from the blue cluster.",
                                                            "rationale": "her deployment routine"})
            memory = stored.structured_content["id"]
            mine = await alice.call_tool("get_recent_context", {"session_only": True})
            theirs = await bob.call_tool("get_recent_context", {"session_only": True})
            everyone = await bob.call_tool("get_recent_context", {})
        assert [m["id"] for m in mine.structured_content["memories"]] == [memory]
        assert theirs.structured_content["count"] == 0
        assert memory in [m["id"] for m in everyone.structured_content["memories"]]


async def test_a_discover_mode_request_without_the_cookie_is_a_client_of_its_own(net_app):
    discover = {**ACCEPT, "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call",
                "mcp-name": "temporary_scratchpad"}
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    write = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "temporary_scratchpad", "arguments": {"action": "write", "key": "k", "value": "v"}, "_meta": meta}}
    read = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "temporary_scratchpad", "arguments": {"action": "read"}, "_meta": meta}}
    async with serving(net_app, ("http",)) as where:
        async with httpx2.AsyncClient(base_url=http_base(where), timeout=10) as keeps_cookies:
            written = await keeps_cookies.post("/mcp", headers=discover, json=write)
            assert written.status_code == 200, written.text
            cookie = written.headers["set-cookie"]
            assert cookie.startswith("contextgraph_client=") and "HttpOnly" in cookie and "SameSite=Strict" in cookie
            again = await keeps_cookies.post("/mcp", headers=discover, json=read)
            assert again.json()["result"]["structuredContent"]["entries"] == {"k": "v"}
            assert "set-cookie" not in again.headers  # the identity it presented is kept
        async with httpx2.AsyncClient(base_url=http_base(where), timeout=10) as stranger:
            alone = await stranger.post("/mcp", headers=discover, json=read)
            assert alone.json()["result"]["structuredContent"]["entries"] == {}




async def _open_count(http: httpx2.AsyncClient) -> int:
    return (await http.get("/health")).json()["sessions"]["streamable_http"]


async def test_sessions_are_bounded_and_the_longest_idle_makes_room(make_net_app):
    app = make_net_app(CONTEXTGRAPH_HTTP_MAX_SESSIONS="3")
    async with serving(app, ("http",)) as where, httpx2.AsyncClient(base_url=http_base(where), timeout=10) as http:
        first, second, third = [await open_http_session(http, VERSION) for _ in range(3)]
        await http.post("/mcp", headers=first, json=tool_call(2, "tool_active"))  # first is now the most recent
        assert await _open_count(http) == 3
        fourth = await open_http_session(http, VERSION)
        assert await _open_count(http) == 3
        assert (await http.post("/mcp", headers=second, json=tool_call(3, "tool_active"))).status_code == 404
        for alive in (first, third, fourth):
            assert (await http.post("/mcp", headers=alive, json=tool_call(4, "tool_active"))).status_code == 200


async def test_idle_sessions_are_reaped(make_net_app):
    app = make_net_app(CONTEXTGRAPH_HTTP_SESSION_IDLE="0.5")
    async with serving(app, ("http",)) as where, httpx2.AsyncClient(base_url=http_base(where), timeout=10) as http:
        sessions = [await open_http_session(http, VERSION) for _ in range(3)]
        with anyio.fail_after(30):  # generous: the idle time is half a second
            # polled: the reaping happens inside the SDK, with no event to await
            while await _open_count(http):
                await anyio.sleep(0.1)
        assert (await http.post("/mcp", headers=sessions[0], json=tool_call(2, "tool_active"))).status_code == 404
