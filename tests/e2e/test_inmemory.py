"""End to end through the official `mcp` SDK client, in memory, in both protocol eras: the 2025 handshake
('legacy') and the 2026-07-28 discover mode."""

import anyio
import mcp.types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from tool_errors import refusal

from contextgraph.app import build_app
from contextgraph.server import PULSE_META_KEY, build_server
from contextgraph.tools.registry import Alias, Registry
from contextgraph.tools.spec import Args, ToolSpec

pytestmark = pytest.mark.anyio
MODES = ["legacy", "2026-07-28"]
PULSE_FIELDS = {"entropy", "coherence", "learning_score", "quadrant", "suggested_action"}


@pytest.fixture
def server(app):
    return build_server(app)


@pytest.mark.parametrize("mode", MODES)
async def test_list_and_call_carry_the_pulse(server, mode):
    async with Client(server, mode=mode) as client:
        tools = await client.list_tools()
        assert {t.name for t in tools.tools} >= {"tool_find", "tool_call", "temporary_scratchpad"}
        result = await client.call_tool("tool_find", {"query": "scratch notes"})
        assert result.is_error is False
        assert result.structured_content["results"][0]["name"] == "temporary_scratchpad"
        assert set(result.structured_content["_cognitive_pulse"]) == PULSE_FIELDS
        assert result.meta[PULSE_META_KEY] == result.structured_content["_cognitive_pulse"]
        assert '"_cognitive_pulse"' in result.content[0].text


@pytest.mark.parametrize("mode", MODES)
async def test_errors_are_jsonrpc_errors_with_code_hint_and_pulse(server, mode):
    async with Client(server, mode=mode) as client:
        with pytest.raises(MCPError) as info:
            await client.call_tool("no_such_tool", {})
        assert info.value.code == -32004 and "Unknown tool: no_such_tool" in info.value.message
        assert "tool_find" in info.value.data["hint"]
        assert set(info.value.data["_cognitive_pulse"]) == PULSE_FIELDS
        refused = await refusal(client, "get_system_logs", {"level": "loud"})  # a tool result here (D17)
        assert refused.code == -32602 and refused.data["field"] == "level"
        assert refused.data["allowed"] == ["error", "warn", "info", "debug"]


@pytest.mark.parametrize("mode", MODES)
async def test_scratchpad_is_per_connection(server, mode):
    async with Client(server, mode=mode) as first:
        await first.call_tool("temporary_scratchpad", {"action": "write", "key": "k", "value": "v"})
        read = await first.call_tool("temporary_scratchpad", {"action": "read"})
        assert read.structured_content["entries"] == {"k": "v"}
    if mode == "legacy":  # a new handshake connection is a new session
        async with Client(server, mode=mode) as second:
            read = await second.call_tool("temporary_scratchpad", {"action": "read"})
            assert read.structured_content["entries"] == {}


def _aliased_app(settings):
    async def goals(ctx, args):
        return {"goals": []}

    specs = [ToolSpec("discover_sub_goals", "autonomous", "Discover sub-goals from memory clusters.", Args, goals)]
    from contextgraph.constitution import constitution

    c = constitution()
    registry = Registry(specs, [Alias("discover_goals", "discover_sub_goals")], retired={},
                        categories=c["categories"], active_categories=None, name_pattern=c["tool_name_pattern"],
                        discovery_settings=c["discovery"])
    return build_app(settings, registry=registry)


@pytest.mark.parametrize("mode", MODES)
async def test_aliases_in_tools_list_and_callable(settings, mode):
    server = build_server(_aliased_app(settings))
    async with Client(server, mode=mode) as client:
        (tool,) = (await client.list_tools()).tools
        assert tool.meta == {"aliases": ["discover_goals"]}
        assert "discover_goals" in tool.description
        result = await client.call_tool("discover_goals", {})
        assert result.structured_content["goals"] == []


async def test_tool_load_notifies_a_handshake_client(tmp_path, make_settings):
    app = build_app(make_settings(tmp_path, CONTEXTGRAPH_PROFILE="core"))
    changed = anyio.Event()

    async def on_message(message):
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with Client(build_server(app), mode="legacy", message_handler=on_message) as client:
        assert client.server_capabilities.tools.list_changed is True
        names = {t.name for t in (await client.list_tools()).tools}
        assert "get_system_logs" not in names
        await client.call_tool("tool_load", {"names": ["get_system_logs"]})
        with anyio.fail_after(5):
            await changed.wait()
        names = {t.name for t in (await client.list_tools()).tools}
        assert "get_system_logs" in names


async def test_tool_load_notifies_a_discover_mode_listener(tmp_path, make_settings):
    app = build_app(make_settings(tmp_path, CONTEXTGRAPH_PROFILE="core"))
    async with Client(build_server(app), mode="2026-07-28") as client:
        async with client.listen(tools_list_changed=True) as subscription:
            await client.call_tool("tool_load", {"names": ["get_system_instructions"]})
            with anyio.fail_after(5):
                async for _event in subscription:
                    break
        names = {t.name for t in (await client.list_tools(cache_mode="bypass")).tools}
        assert "get_system_instructions" in names


async def test_raw_wire_has_top_level_aliases_and_pulse(settings):
    """The SDK client drops unknown members, so read the server's raw messages over memory streams."""
    from mcp.shared.memory import create_client_server_memory_streams
    from mcp.shared.message import SessionMessage

    server = build_server(_aliased_app(settings))

    async def send(stream, payload):
        await stream.send(SessionMessage(types.jsonrpc_message_adapter.validate_python(payload)))

    async def receive(stream):
        with anyio.fail_after(10):
            message = await stream.receive()
        return message.message.model_dump(by_alias=True, exclude_unset=True, mode="json")

    async with create_client_server_memory_streams() as ((client_read, client_write), (server_read, server_write)):
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.run, server_read, server_write, server.create_initialization_options())
            await send(client_write, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
            assert (await receive(client_read))["result"]["protocolVersion"] == "2024-11-05"
            await send(client_write, {"jsonrpc": "2.0", "method": "notifications/initialized"})
            await send(client_write, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
            (tool,) = (await receive(client_read))["result"]["tools"]
            assert tool["aliases"] == ["discover_goals"] and tool["_meta"]["aliases"] == ["discover_goals"]
            await send(client_write, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                      "params": {"name": "discover_goals", "arguments": {}}})
            result = (await receive(client_read))["result"]
            assert set(result["_cognitive_pulse"]) == PULSE_FIELDS
            tg.cancel_scope.cancel()
