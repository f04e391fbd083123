"""The process-only tools, each through the real dispatcher and the real registry."""

import pytest

from contextgraph.app import build_app
from contextgraph.tools.dispatch import ToolCallFailed

pytestmark = pytest.mark.anyio


async def fails(call, name, arguments=None) -> ToolCallFailed:
    with pytest.raises(ToolCallFailed) as info:
        await call(name, arguments)
    return info.value


# -- tool_find -----------------------------------------------------------------------------------------------
async def test_tool_find_ranks_and_marks_active(call):
    out = (await call("tool_find", {"query": "activate more tools", "limit": 3})).payload
    assert out["results"][0]["name"] == "tool_load"
    assert out["count"] == len(out["results"]) <= 3
    scores = [r["score"] for r in out["results"]]
    assert scores == sorted(scores, reverse=True)
    assert all(r["active"] is True for r in out["results"])


async def test_tool_find_category_and_no_match(call):
    out = (await call("tool_find", {"query": "logs", "category": "admin"})).payload
    assert out["results"] == [] and "message" in out
    out = (await call("tool_find", {"query": "debug logs"})).payload
    assert out["results"][0]["name"] == "get_system_logs"
    f = await fails(call, "tool_find", {"query": "x", "category": "bogus"})
    assert f.code == -32602 and "core" in f.data["allowed"]


# -- tool_describe -------------------------------------------------------------------------------------------
async def test_tool_describe(call, app):
    out = (await call("tool_describe", {"name": "temporary_scratchpad"})).payload
    assert out["input_schema"]["properties"]["action"]["enum"] == ["write", "read", "clear"]
    assert out["category"] == "admin" and out["active"] is True and out["keywords"]
    f = await fails(call, "tool_describe", {"name": "tool_fnd"})
    assert f.code == -32004 and "tool_find" in f.message and f.data["suggestions"][0] == "tool_find"


# -- tool_load / tool_active ---------------------------------------------------------------------------------
@pytest.fixture
def core_app(tmp_path, make_settings):
    return build_app(make_settings(tmp_path, CONTEXTGRAPH_PROFILE="core"))


async def test_tool_load_is_idempotent_and_notifies_once(core_app):
    sent = []

    async def notify():
        sent.append(1)
        return True

    ctx = core_app.tool_context("s", notify)
    before = (await core_app.dispatcher.call("tool_active", {}, ctx)).payload
    assert "get_system_logs" not in [t["name"] for t in before["tools"]]
    out = (await core_app.dispatcher.call("tool_load", {"names": ["get_system_logs", "tool_find"]}, ctx)).payload
    assert out["loaded"] == ["get_system_logs"] and out["already_active"] == ["tool_find"]
    assert out["notified"] is True and sent == [1]
    assert out["active_count"] == before["count"] + 1
    again = (await core_app.dispatcher.call("tool_load", {"names": ["get_system_logs"]}, ctx)).payload
    assert again["loaded"] == [] and again["notified"] is False and sent == [1]


async def test_tool_load_is_all_or_nothing(core_app):
    with pytest.raises(ToolCallFailed) as info:
        await core_app.dispatcher.call("tool_load", {"names": ["get_system_logs", "no_such_tool"]},
                                       core_app.tool_context())
    assert info.value.code == -32004 and info.value.data["unknown"] == ["no_such_tool"]
    assert "get_system_logs" not in core_app.registry.active


async def test_tool_active_empty_list_has_a_message(app, call):
    app.registry.active.clear()
    out = (await call("tool_active")).payload
    assert out == {**out, "tools": [], "count": 0} and "tool_find" in out["message"]


# -- tool_call -----------------------------------------------------------------------------------------------
async def test_tool_call_runs_inactive_tools_through_the_same_checks(core_app):
    ctx = core_app.tool_context()
    out = (await core_app.dispatcher.call(
        "tool_call", {"name": "get_system_logs", "arguments": {"limit": 1}}, ctx)).payload
    assert out["tool"] == "get_system_logs" and out["result"]["filters"]["limit"] == 1
    assert "_cognitive_pulse" in out
    with pytest.raises(ToolCallFailed) as info:
        await core_app.dispatcher.call("tool_call", {"name": "get_system_logs", "arguments": {"limit": 0}}, ctx)
    assert info.value.code == -32602 and info.value.data["field"] == "limit"
    with pytest.raises(ToolCallFailed) as info:
        await core_app.dispatcher.call("tool_call", {"name": "tool_call", "arguments": {}}, ctx)
    assert info.value.code == -32602
    with pytest.raises(ToolCallFailed) as info:
        await core_app.dispatcher.call("tool_call", {"name": "nope"}, ctx)
    assert info.value.code == -32004


# -- get_system_instructions / get_system_logs ---------------------------------------------------------------
async def test_system_instructions_are_about_300_tokens(call):
    out = (await call("get_system_instructions")).payload
    approx_tokens = out["words"] * 4 / 3
    assert 200 <= approx_tokens <= 450
    for concept in ("_cognitive_pulse", "tool_find", "rationale", "30 days", "epistemic_action"):
        assert concept in out["instructions"]


async def test_system_logs_show_calls_and_filter(call):
    await call("tool_active")
    with pytest.raises(ToolCallFailed):
        await call("nope")
    out = (await call("get_system_logs", {"level": "info", "component": "dispatch", "limit": 10})).payload
    tools = [e["tool"] for e in out["entries"]]
    assert tools[-2:] == ["tool_active", "nope"]
    assert all(e["component"] == "dispatch" for e in out["entries"])
    out = (await call("get_system_logs", {"level": "error"})).payload
    assert out["entries"] == []
    f = await fails(call, "get_system_logs", {"level": "verbose"})
    assert f.data["allowed"] == ["error", "warn", "info", "debug"]


# -- temporary_scratchpad ------------------------------------------------------------------------------------
async def test_scratchpad_round_trip_and_isolation(app, call):
    await call("temporary_scratchpad", {"action": "write", "key": "plan", "value": "step 1"})
    out = (await call("temporary_scratchpad", {"action": "read"})).payload
    assert out["entries"] == {"plan": "step 1"} and out["count"] == 1
    other = (await call("temporary_scratchpad", {"action": "read"}, session="other")).payload
    assert other["entries"] == {}
    out = (await call("temporary_scratchpad", {"action": "clear", "key": "plan"})).payload
    assert out["removed"] == 1
    assert not (app.settings.home / "scratchpad").exists() and not app.settings.home.exists()  # never persisted


async def test_scratchpad_argument_errors(call):
    f = await fails(call, "temporary_scratchpad", {"action": "write", "key": "k"})
    assert f.code == -32602 and f.data["field"] == "value"
    f = await fails(call, "temporary_scratchpad", {"action": "read", "value": "v"})
    assert f.data["field"] == "value"
    f = await fails(call, "temporary_scratchpad", {"action": "erase"})
    assert f.data["allowed"] == ["write", "read", "clear"]
