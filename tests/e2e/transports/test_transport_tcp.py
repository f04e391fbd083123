"""TCP: the SDK client in both protocol eras over a small newline-delimited TCP transport, and raw sockets for
malformed lines, the size limit, half-close draining and the token."""

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from transport_helpers import (
    INIT,
    INITIALIZED,
    PULSE_FIELDS,
    RawLines,
    list_changed_watch,
    request,
    serving,
    tcp_transport,
    tool_call,
)

from contextgraph.config import SettingsError
from contextgraph.transports.security import check_bind

pytestmark = pytest.mark.anyio
MODES = ["legacy", "2026-07-28"]


@pytest.mark.parametrize("mode", MODES)
async def test_sdk_client_over_tcp(net_app, mode):
    async with serving(net_app, ("tcp",)) as where:
        async with Client(tcp_transport(*where.tcp), mode=mode) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"tool_find", "store_memory", "search_graph"} <= names
            result = await client.call_tool("tool_find", {"query": "scratch notes"})
            assert result.structured_content["results"][0]["name"] == "temporary_scratchpad"
            assert set(result.structured_content["_cognitive_pulse"]) == PULSE_FIELDS
            with pytest.raises(MCPError) as info:
                await client.call_tool("no_such_tool", {})
            assert info.value.code == -32004 and set(info.value.data["_cognitive_pulse"]) == PULSE_FIELDS


async def test_tool_load_notifies_over_tcp_in_both_eras(make_net_app):
    app = make_net_app(CONTEXTGRAPH_PROFILE="core")
    changed, on_message = list_changed_watch()

    async with serving(app, ("tcp",)) as where:
        async with Client(tcp_transport(*where.tcp), mode="legacy", message_handler=on_message) as client:
            await client.call_tool("tool_load", {"names": ["get_system_logs"]})
            with anyio.fail_after(5):
                await changed.wait()
            assert "get_system_logs" in {t.name for t in (await client.list_tools()).tools}
        async with Client(tcp_transport(*where.tcp), mode="2026-07-28") as client:
            async with client.listen(tools_list_changed=True) as subscription:
                await client.call_tool("tool_load", {"names": ["get_system_instructions"]})
                with anyio.fail_after(5):
                    async for _event in subscription:
                        break


async def test_malformed_lines_and_oversized_lines_keep_the_connection(net_app):
    limit = net_app.constitution.get("transport.tcp_max_line_bytes")
    async with serving(net_app, ("tcp",)) as where, RawLines.connect(*where.tcp) as wire:
        await wire.send(request(1, "initialize", INIT))
        assert (await wire.receive())["result"]["protocolVersion"] == "2024-11-05"
        await wire.send(INITIALIZED)
        await wire.send("this is not json")
        parse_error = await wire.receive()
        assert parse_error["id"] is None and parse_error["error"]["code"] == -32700
        await wire.send('{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "tool_find", '
                        '"arguments": {"query": "' + "x" * limit + '"}}}')
        too_large = await wire.receive()
        assert too_large["error"]["code"] == -32600 and too_large["error"]["data"]["max_bytes"] == limit
        await wire.send(tool_call(2, "tool_active"))
        answer = await wire.receive()
        assert answer["id"] == 2 and set(answer["result"]["_cognitive_pulse"]) == PULSE_FIELDS


async def test_half_close_still_gets_every_answer(net_app):
    async with serving(net_app, ("tcp",)) as where, RawLines.connect(*where.tcp) as wire:
        await wire.send(request(1, "initialize", INIT))
        await wire.send(INITIALIZED)
        for i in range(2, 7):
            await wire.send(tool_call(i, "tool_find", {"query": f"tools {i}"}))
        await wire.stream.send_eof()
        answers = {}
        while (message := await wire.receive()) is not None:
            answers[message["id"]] = message
        assert set(answers) == {1, 2, 3, 4, 5, 6}


async def test_token_is_required_on_every_connection(make_net_app):
    app = make_net_app(CONTEXTGRAPH_TOKEN="s3cret-token")
    async with serving(app, ("tcp",)) as where:
        async with RawLines.connect(*where.tcp) as wire:  # no auth line: refused and closed
            await wire.send(request(1, "initialize", INIT))
            refused = await wire.receive()
            assert refused["error"]["code"] == -32600 and "Unauthorized" in refused["error"]["message"]
            assert await wire.receive() is None
        async with RawLines.connect(*where.tcp) as wire:  # a wrong token: the same
            await wire.send({"auth": "wrong"})
            assert "Unauthorized" in (await wire.receive())["error"]["message"]
        async with Client(tcp_transport(*where.tcp, token="s3cret-token"), mode="legacy") as client:
            assert (await client.call_tool("tool_active", {})).structured_content["count"] > 0


def test_a_non_loopback_bind_needs_a_token(make_settings, tmp_path):
    with pytest.raises(SettingsError, match="needs a bearer token"):
        check_bind(make_settings(tmp_path, CONTEXTGRAPH_HOST="0.0.0.0"))
    check_bind(make_settings(tmp_path, CONTEXTGRAPH_HOST="0.0.0.0", CONTEXTGRAPH_TOKEN="t"))
    for loopback in ("127.0.0.1", "localhost", "::1"):
        check_bind(make_settings(tmp_path, CONTEXTGRAPH_HOST=loopback))
