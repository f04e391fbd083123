"""SPEC D17 through the `mcp` SDK client: in sessions at 2025-11-25 or later a tool call's argument and domain
errors are tool results with `isError: true` whose text and structuredContent carry the code, registry name,
message, hint, field, allowed values and the pulse (what Claude Code hands its model); older sessions keep
JSON-RPC errors; unknown tools stay JSON-RPC errors in every era; the message always carries the hint."""

import json

import mcp.client.session
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from contextgraph.server import PULSE_META_KEY, build_server

pytestmark = pytest.mark.anyio
PULSE_FIELDS = {"entropy", "coherence", "learning_score", "quadrant", "suggested_action"}
NEW_ERAS = ["legacy", "2026-07-28"]  # the SDK's handshake mode negotiates 2025-11-25


@pytest.fixture
def server(app):
    return build_server(app)


def body_of(result):
    assert result.is_error is True
    body = result.structured_content
    assert json.loads(result.content[0].text) == body  # the text says the same, for hosts that show only text
    assert set(body["_cognitive_pulse"]) == PULSE_FIELDS
    assert result.meta[PULSE_META_KEY] == body["_cognitive_pulse"]
    return body


@pytest.mark.parametrize("mode", NEW_ERAS)
async def test_argument_errors_are_tool_results_the_model_reads(server, mode):
    async with Client(server, mode=mode) as client:
        assert client.protocol_version >= "2025-11-25"
        body = body_of(await client.call_tool("get_system_logs", {"level": "loud"}))
        assert (body["code"], body["name"], body["field"]) == (-32602, "INVALID_PARAMS", "level")
        assert body["allowed"] == ["error", "warn", "info", "debug"]
        assert body["hint"] and body["hint"] in body["message"]  # the message carries the hint
        assert "'error', 'warn', 'info', 'debug'" in body["message"]


@pytest.mark.parametrize("mode", NEW_ERAS)
async def test_domain_errors_and_missing_rationale_are_tool_results(server, mode):
    async with Client(server, mode=mode) as client:
        missing = body_of(await client.call_tool("store_memory", {"content": "no reason given"}))
        assert (missing["code"], missing["name"], missing["field"]) == (-32009, "MISSING_RATIONALE", "rationale")
        assert "Hint: Add a `rationale`" in missing["message"]
        node = body_of(await client.call_tool("get_node_lineage", {"node_id": "0" * 32}))
        assert (node["code"], node["name"]) == (-32012, "NODE_NOT_FOUND")
        # through tool_call too: the nested tool's refusal is the result
        nested = body_of(await client.call_tool("tool_call", {"name": "get_system_logs",
                                                              "arguments": {"level": "loud"}}))
        assert nested["code"] == -32602 and nested["field"] == "level"
        # and a refused call is followed by a working one: nothing about the session broke
        assert (await client.call_tool("tool_active", {})).is_error is False


@pytest.mark.parametrize("mode", NEW_ERAS)
async def test_unknown_tool_stays_a_protocol_error_with_suggestions_in_the_message(server, mode):
    async with Client(server, mode=mode) as client:
        with pytest.raises(MCPError) as info:
            await client.call_tool("tool_fnd", {})
        error = info.value.error
        assert error.code == -32004 and "tool_find" in error.data["suggestions"]
        assert "Did you mean: tool_find" in error.message and "Call tool_find" in error.message
        assert set(error.data["_cognitive_pulse"]) == PULSE_FIELDS


async def test_sessions_before_2025_11_25_keep_jsonrpc_errors_with_the_hint_in_the_message(server, monkeypatch):
    monkeypatch.setattr(mcp.client.session, "LATEST_HANDSHAKE_VERSION", "2025-06-18")
    async with Client(server, mode="legacy") as client:
        assert client.protocol_version == "2025-06-18"
        with pytest.raises(MCPError) as info:
            await client.call_tool("get_system_logs", {"level": "loud"})
        error = info.value.error
        assert error.code == -32602 and error.data["field"] == "level" and error.data["error"] == "INVALID_PARAMS"
        assert error.data["hint"] in error.message
        assert set(error.data["_cognitive_pulse"]) == PULSE_FIELDS
        with pytest.raises(MCPError) as info:
            await client.call_tool("store_memory", {"content": "no reason given"})
        assert info.value.error.code == -32009 and "Hint:" in info.value.error.message
