"""Legacy HTTP+SSE at /sse + /messages/: the SDK's sse_client, heartbeats, a session that survives a dropped
stream within the grace period (by session id and by Last-Event-ID), and -32016 after it."""

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.sse import sse_client
from mcp.shared.exceptions import MCPError
from transport_helpers import (
    INIT,
    INITIALIZED,
    PULSE_FIELDS,
    SseEvents,
    http_base,
    list_changed_watch,
    request,
    serving,
    tool_call,
)

pytestmark = pytest.mark.anyio


async def test_sdk_sse_client(make_net_app):
    app = make_net_app(CONTEXTGRAPH_PROFILE="core")
    changed, on_message = list_changed_watch()

    async with serving(app, ("http",)) as where:
        async with Client(sse_client(http_base(where) + "/sse"), mode="legacy", message_handler=on_message) as client:
            assert "tool_find" in {t.name for t in (await client.list_tools()).tools}
            result = await client.call_tool("tool_find", {"query": "scratch notes"})
            assert set(result.structured_content["_cognitive_pulse"]) == PULSE_FIELDS
            with pytest.raises(MCPError) as info:
                await client.call_tool("no_such_tool", {})
            assert info.value.code == -32004
            await client.call_tool("tool_load", {"names": ["get_system_logs"]})
            with anyio.fail_after(5):
                await changed.wait()


async def _open(http: httpx2.AsyncClient, events: SseEvents) -> str:
    """Reads the endpoint and first heartbeat, initializes the session; returns the POST endpoint."""
    event, _, endpoint = await events.next()
    assert event == "endpoint" and endpoint.startswith("/messages/?session_id=")
    assert (await events.next())[0] == "heartbeat"  # at once on connect
    assert (await http.post(endpoint, json=request(1, "initialize", INIT))).status_code == 202
    _, opened = await events.next_message()
    assert opened["id"] == 1
    assert (await http.post(endpoint, json=INITIALIZED)).status_code == 202
    return endpoint


async def test_heartbeat_on_connect_and_every_interval(net_app):  # interval 0.2 s (net_env)
    async with serving(net_app, ("http",)) as where, httpx2.AsyncClient(base_url=http_base(where), timeout=10) as http:
        async with http.stream("GET", "/sse") as stream:
            events = SseEvents(stream)
            assert (await events.next())[0] == "endpoint"
            kinds = [(await events.next(timeout=2))[0] for _ in range(3)]
            assert kinds == ["heartbeat"] * 3


async def test_reconnect_within_grace_keeps_the_session(net_app):
    async with serving(net_app, ("http",)) as where, httpx2.AsyncClient(base_url=http_base(where), timeout=10) as http:
        async with http.stream("GET", "/sse") as stream:
            events = SseEvents(stream)
            endpoint = await _open(http, events)
            await http.post(endpoint, json=tool_call(2, "temporary_scratchpad",
                                                     {"action": "write", "key": "k", "value": "kept"}))
            last_seen, _ = await events.next_message()
        session_id = endpoint.split("session_id=")[1]
        session = where.parts["http"].sse.live[session_id]
        with anyio.fail_after(5):
            while session.attached:  # the server notices the drop
                await anyio.sleep(0.02)
        # The stream is gone; the session is not: calls sent now are answered into its buffer.
        assert (await http.post(endpoint, json=tool_call(3, "temporary_scratchpad", {"action": "read"}))
                ).status_code == 202
        async with http.stream("GET", "/sse", params={"session_id": session_id}) as stream:
            events = SseEvents(stream)
            _, missed = await events.next_message()  # the answer it missed
            assert missed["id"] == 3 and missed["result"]["structuredContent"]["entries"] == {"k": "kept"}
            await http.post(endpoint, json=tool_call(4, "tool_active"))
            _, after = await events.next_message()
            assert after["id"] == 4
        # A plain EventSource reconnect (Last-Event-ID only) resumes after the last event it saw.
        async with http.stream("GET", "/sse", headers={"last-event-id": last_seen}) as stream:
            events = SseEvents(stream)
            assert (await events.next())[2] == endpoint
            replayed = [(await events.next_message())[1]["id"] for _ in range(2)]
            assert replayed == [3, 4]


async def test_after_grace_the_session_is_expired(make_net_app):
    app = make_net_app(CONTEXTGRAPH_SSE_GRACE="0.3")
    async with serving(app, ("http",)) as where, httpx2.AsyncClient(base_url=http_base(where), timeout=10) as http:
        sessions = where.parts["http"].sse
        async with http.stream("GET", "/sse") as stream:
            endpoint = await _open(http, SseEvents(stream))
        session_id = endpoint.split("session_id=")[1]
        with anyio.fail_after(5):
            while session_id not in sessions.expired:  # the grace timer runs out
                await anyio.sleep(0.05)
        expired = await http.post(endpoint, json=tool_call(9, "tool_active"))
        assert expired.status_code == 410
        error = expired.json()
        assert error["id"] == 9 and error["error"]["code"] == -32016
        assert error["error"]["data"]["error"] == "SSE_SESSION_EXPIRED" and "GET /sse" in error["error"]["message"]
        resumed = await http.get("/sse", params={"session_id": session_id})
        assert resumed.status_code == 410 and resumed.json()["error"]["code"] == -32016
        unknown = await http.post("/messages/?session_id=feedface", json=tool_call(1, "tool_active"))
        assert unknown.status_code == 404 and unknown.json()["error"]["code"] == -32016


async def test_post_checks(net_app):
    async with serving(net_app, ("http",)) as where, httpx2.AsyncClient(base_url=http_base(where), timeout=10) as http:
        async with http.stream("GET", "/sse") as stream:
            endpoint = await _open(http, SseEvents(stream))
            bad = await http.post(endpoint, content=b"{not json", headers={"content-type": "application/json"})
            assert bad.status_code == 400 and bad.json()["error"]["code"] == -32700
            assert (await http.post(endpoint, content=b"{}", headers={"content-type": "text/plain"})).status_code == 400
            assert (await http.post("/messages/", json=INITIALIZED)).status_code == 400  # no session id
