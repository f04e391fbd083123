"""Streamable HTTP at /mcp: the SDK client in both protocol eras, list_changed, progress, replay after a dropped
stream (Last-Event-ID) and its isolation between sessions; and the guards in front of every HTTP endpoint:
Host/Origin, the bearer token, the body limit; /health."""

import anyio
import httpx2
import mcp.types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from transport_helpers import (
    ACCEPT,
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
MODES = ["legacy", "2026-07-28"]
VERSION = "2025-11-25"  # the first handshake version with priming events (resumable streams)


@pytest.mark.parametrize("mode", MODES)
async def test_sdk_client_over_streamable_http(net_app, mode):
    async with serving(net_app, ("http",)) as where:
        async with Client(http_base(where) + "/mcp", mode=mode) as client:
            assert "search_graph" in {t.name for t in (await client.list_tools()).tools}
            result = await client.call_tool("tool_find", {"query": "scratch notes"})
            assert set(result.structured_content["_cognitive_pulse"]) == PULSE_FIELDS
            refused = await client.call_tool("get_system_logs", {"level": "loud"})  # SPEC D17: a tool result
            assert refused.is_error and refused.structured_content["code"] == -32602
            assert refused.structured_content["field"] == "level"


async def test_tool_load_notifies_over_http_in_both_eras(make_net_app):
    app = make_net_app(CONTEXTGRAPH_PROFILE="core")
    changed, on_message = list_changed_watch()

    async with serving(app, ("http",)) as where:
        url = http_base(where) + "/mcp"
        async with Client(url, mode="legacy", message_handler=on_message) as client:
            assert client.server_capabilities.tools.list_changed is True
            await client.call_tool("tool_load", {"names": ["get_system_logs"]})
            with anyio.fail_after(5):
                await changed.wait()
        async with Client(url, mode="2026-07-28") as client:
            async with client.listen(tools_list_changed=True) as subscription:
                await client.call_tool("tool_load", {"names": ["get_system_instructions"]})
                with anyio.fail_after(5):
                    async for _event in subscription:
                        break
            assert "get_system_instructions" in {t.name for t in (await client.list_tools(cache_mode="bypass")).tools}


async def test_search_graph_reports_progress(net_app):
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value, total, message):
        progress.append((value, total, message))

    async with serving(net_app, ("http",)) as where:
        async with Client(http_base(where) + "/mcp", mode="legacy") as client:
            result = await client.call_tool("search_graph", {"query": "anything at all"},
                                            progress_callback=on_progress)
    assert result.structured_content["count"] == 0
    assert progress[-1][0] == progress[-1][1] == 2 and progress[-1][2].startswith("done: 0 results")
    assert [p[0] for p in progress] == sorted(p[0] for p in progress)
    assert any("retrieving" in (p[2] or "") for p in progress)


async def _open_session(client: httpx2.AsyncClient) -> dict[str, str]:
    opened = await client.post("/mcp", headers=ACCEPT, json=request(1, "initialize", {**INIT,
                                                                                      "protocolVersion": VERSION}))
    assert opened.status_code == 200
    headers = {**ACCEPT, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": VERSION}
    assert (await client.post("/mcp", headers=headers, json=INITIALIZED)).status_code == 202
    return headers


async def test_replay_after_a_dropped_stream(make_net_app):
    app = make_net_app(CONTEXTGRAPH_PROFILE="core")

    async def load(http, session, id_, name):
        async with http.stream("POST", "/mcp", headers=session, json=tool_call(id_, "tool_load",
                                                                                {"names": [name]})) as call:
            _, answer = await SseEvents(call).next_message()
            assert answer["id"] == id_ and answer["result"]["structuredContent"]["notified"] is True

    async with serving(app, ("http",)) as where, httpx2.AsyncClient(base_url=http_base(where), timeout=10) as http:
        session = await _open_session(http)
        get = {**session, "accept": "text/event-stream"}
        # The standalone stream carries list_changed; read one, note its event id, then drop the stream.
        async with http.stream("GET", "/mcp", headers=get) as stream:
            events = SseEvents(stream)
            await load(http, session, 2, "get_system_logs")
            seen, notification = await events.next_message()
            assert notification["method"] == "notifications/tools/list_changed" and seen
        # While no stream is attached, another tool_load sends list_changed again: the client misses it.
        await load(http, session, 3, "get_system_instructions")
        # Reconnecting with Last-Event-ID replays what was missed.
        async with http.stream("GET", "/mcp", headers={**get, "last-event-id": seen}) as stream:
            replayed_id, missed = await SseEvents(stream).next_message()
            assert missed["method"] == "notifications/tools/list_changed" and replayed_id != seen
        # A call's stream dropped right after its priming event: the answer is replayed after that event.
        async with http.stream("POST", "/mcp", headers=session, json=tool_call(4, "tool_active")) as call:
            _, primed, data = await SseEvents(call).next()
            assert primed and data == ""
        async with http.stream("GET", "/mcp", headers={**get, "last-event-id": primed}) as stream:
            _, replayed = await SseEvents(stream).next_message()
            assert replayed["id"] == 4 and replayed["result"]["structuredContent"]["count"] > 0


async def test_replay_never_crosses_sessions(net_app):
    async with serving(net_app, ("http",)) as where, httpx2.AsyncClient(base_url=http_base(where), timeout=10) as http:
        first, second = await _open_session(http), await _open_session(http)
        async with http.stream("POST", "/mcp", headers=first, json=tool_call(2, "tool_find", {"query": "a"})) as call:
            _, primed, _ = await SseEvents(call).next()
        async with http.stream("POST", "/mcp", headers=second, json=tool_call(2, "tool_find", {"query": "b"})) as c:
            await SseEvents(c).next_message()
        async with http.stream("GET", "/mcp", headers={**first, "accept": "text/event-stream",
                                                       "last-event-id": primed}) as stream:
            _, replayed = await SseEvents(stream).next_message()
            assert replayed["result"]["structuredContent"]["query"] == "a"
        # The other session cannot replay the first one's events.
        replay = await http.get("/mcp", headers={**second, "accept": "text/event-stream", "last-event-id": primed})
        assert b'"query": "a"' not in replay.content and b'"query":"a"' not in replay.content


async def test_host_origin_token_and_size_guards(make_net_app):
    app = make_net_app(CONTEXTGRAPH_TOKEN="s3cret-token")
    limit = app.constitution.get("transport.max_message_bytes")
    auth = {"authorization": "Bearer s3cret-token"}
    async with serving(app, ("http",)) as where, httpx2.AsyncClient(base_url=http_base(where), timeout=10) as http:
        for method, path in [("GET", "/health"), ("POST", "/mcp"), ("GET", "/sse"), ("POST", "/messages/")]:
            refused = await http.request(method, path, headers=ACCEPT, json=request(1, "initialize", INIT))
            assert refused.status_code == 401, path
            assert "status" not in refused.text
            _assert_oauth_refusal(refused, "invalid_request")  # no token at all
            wrong = await http.request(method, path, headers={**ACCEPT, "authorization": "Bearer nope"})
            assert wrong.status_code == 401, path
            _assert_oauth_refusal(wrong, "invalid_token")  # a token, not this server's
            basic = await http.request(method, path, headers={**ACCEPT, "authorization": "Basic czNjcmV0"})
            _assert_oauth_refusal(basic, "invalid_request")  # no bearer token
        health = await http.get("/health", headers=auth)
        assert health.status_code == 200 and health.json()["status"] == "ok"
        assert (await http.get("/health", headers={**auth, "host": "evil.example"})).status_code == 421
        evil = {**ACCEPT, **auth, "origin": "http://evil.example"}
        assert (await http.post("/mcp", headers=evil, json=request(1, "initialize", INIT))).status_code == 403
        local = {**ACCEPT, **auth, "origin": f"http://localhost:{where.http[1]}"}
        assert (await http.post("/mcp", headers=local, json=request(1, "initialize", INIT))).status_code == 200
        big = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "' + b"x" * limit + b'"}}'
        assert (await http.post("/mcp", headers={**ACCEPT, **auth}, content=big)).status_code == 413
        assert (await http.post("/messages/?session_id=x", headers={**ACCEPT, **auth}, content=big)).status_code == 413
        async with httpx2.AsyncClient(headers=auth) as with_token:  # the SDK client, carrying the token
            async with Client(streamable_http_client(http_base(where) + "/mcp", http_client=with_token),
                              mode="legacy") as client:
                assert (await client.call_tool("tool_active", {})).structured_content["count"] > 0


def _assert_oauth_refusal(refused, error: str) -> None:
    """Issue 38.2: a 401 is what RFC 6750 says, which MCP clients parse as an OAuth error response (Claude Code
    logged a ZodError for the JSON-RPC error body that was there before): `error` and `error_description`
    strings, and the same in the WWW-Authenticate challenge."""
    assert refused.status_code == 401
    assert refused.headers["content-type"].startswith("application/json")
    body = refused.json()
    assert set(body) == {"error", "error_description"} and body["error"] == error
    assert isinstance(body["error_description"], str) and "Authorization: Bearer" in body["error_description"]
    assert "not OAuth" in body["error_description"]  # says a static token is expected
    challenge = refused.headers["www-authenticate"]
    assert challenge.startswith('Bearer realm="contextgraph", ')
    assert f'error="{error}"' in challenge and 'error_description="' in challenge
    description = challenge.split('error_description="', 1)[1]
    assert description.endswith('"') and '"' not in description[:-1] and "\\" not in description


@pytest.mark.filterwarnings("ignore:The logging capability is deprecated")  # the client's setLevel
async def test_logging_set_level_then_each_call_is_logged(net_app):
    """Also the conformance suite's logging-set-level scenario (which needs no fixture)."""
    logged: list[types.LoggingMessageNotificationParams] = []

    async def on_log(params):
        logged.append(params)

    async with serving(net_app, ("http",)) as where:
        async with Client(http_base(where) + "/mcp", mode="legacy", logging_callback=on_log) as client:
            assert client.server_capabilities.logging is not None
            await client.call_tool("tool_active", {})
            assert logged == []  # nothing before the client asks for it
            await client.session.set_logging_level("info")
            await client.call_tool("tool_active", {})
            with pytest.raises(MCPError):
                await client.call_tool("no_such_tool", {})
            await client.session.set_logging_level("warning")
            await client.call_tool("tool_active", {})
        assert [(m.level, m.data["tool"], m.data["outcome"]) for m in logged] == [
            ("info", "tool_active", "ok"), ("warning", "no_such_tool", "error")]
        assert logged[1].data["code"] == -32004 and logged[0].logger == "contextgraph"
        logged.clear()  # 2026-07-28: the opt-in is per request (_meta), which the Client stamps from log_level
        async with Client(http_base(where) + "/mcp", mode="2026-07-28", log_level="warning",
                          logging_callback=on_log) as client:
            await client.call_tool("tool_active", {})
            with pytest.raises(MCPError):
                await client.call_tool("no_such_tool", {})
        assert [(m.level, m.data["tool"]) for m in logged] == [("warning", "no_such_tool")]
