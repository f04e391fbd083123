"""The dispatcher's order of checks, its error mapping and its log line, on a registry made for the test."""

import pytest
from pydantic import Field
from structlog.testing import capture_logs

from contextgraph.app import build_app
from contextgraph.constitution import constitution
from contextgraph.errors import NodeNotFound
from contextgraph.tools.dispatch import PULSE_KEY, ToolCallFailed
from contextgraph.tools.registry import Alias, Registry
from contextgraph.tools.spec import Args, ToolSpec

pytestmark = pytest.mark.anyio
C = constitution()


class StoreArgs(Args):
    content: str = Field(min_length=1)
    rationale: str = Field(min_length=10, max_length=1000)


async def store(ctx, args):
    return {"stored": args.content}


async def crash(ctx, args):
    raise RuntimeError("secret internals /home/user/db.lmdb")


async def missing(ctx, args):
    raise NodeNotFound("Node n1 does not exist.", node_id="n1")


@pytest.fixture
def app(settings):
    specs = [
        ToolSpec("store_memory", "core", "Store.", StoreArgs, store),
        ToolSpec("boom", "diagnostic", "Crashes.", Args, crash),
        ToolSpec("lookup", "navigation", "Not found.", Args, missing),
        ToolSpec("discover_sub_goals", "autonomous", "Goals.", Args, lambda ctx, a: _ok()),
    ]
    registry = Registry(specs, [Alias("discover_goals", "discover_sub_goals")], retired={},
                        categories=C["categories"], active_categories=None, name_pattern=C["tool_name_pattern"],
                        discovery_settings=C["discovery"])
    return build_app(settings, registry=registry)


async def _ok():
    return {"ok": True}


async def run(app, name, arguments=None):
    return await app.dispatcher.call(name, arguments, app.tool_context(), request_id=7)


async def failure(app, name, arguments=None) -> ToolCallFailed:
    with pytest.raises(ToolCallFailed) as info:
        await run(app, name, arguments)
    return info.value


async def test_success_carries_the_pulse(app):
    outcome = await run(app, "store_memory", {"content": "x", "rationale": "because it matters"})
    assert outcome.payload["stored"] == "x"
    assert set(outcome.payload[PULSE_KEY]) == {"entropy", "coherence", "learning_score", "quadrant", "suggested_action"}
    assert outcome.tool == "store_memory" and outcome.alias is None


@pytest.mark.parametrize("arguments", [{"content": "x"}, {"content": "x", "rationale": None},
                                       {"content": "x", "rationale": "   "}])
async def test_missing_rationale_is_32009_not_32602(app, arguments):
    f = await failure(app, "store_memory", arguments)
    assert f.code == -32009
    assert f.data["field"] == "rationale" and f.data["error"] == "MISSING_RATIONALE"
    assert PULSE_KEY in f.data


async def test_short_rationale_is_an_invalid_param_with_its_bound(app):
    f = await failure(app, "store_memory", {"content": "x", "rationale": "short"})
    assert f.code == -32602 and f.data["min_length"] == 10


async def test_rationale_rule_runs_before_validation(app):
    f = await failure(app, "store_memory", {})  # content missing too: the rationale is reported first
    assert f.code == -32009


async def test_unknown_tool(app):
    f = await failure(app, "discover_goal")
    assert f.code == -32004
    assert f.message.startswith("Unknown tool: discover_goal.")
    assert "tool_find" in f.message
    assert "discover_sub_goals" in f.data["suggestions"]


async def test_alias_resolves_and_is_logged_at_debug(app):
    with capture_logs() as logs:
        outcome = await run(app, "discover_goals")
    assert outcome.tool == "discover_sub_goals" and outcome.alias == "discover_goals"
    debug = [e for e in logs if e["log_level"] == "debug"]
    assert debug and debug[0]["alias"] == "discover_goals" and debug[0]["canonical"] == "discover_sub_goals"
    with capture_logs() as logs:
        await run(app, "discover_sub_goals")
    assert not [e for e in logs if e["log_level"] == "debug"]


async def test_one_log_line_per_call_with_tool_alias_latency_outcome(app):
    with capture_logs() as logs:
        await run(app, "discover_goals")
        await failure(app, "nope")
    lines = [e for e in logs if e["event"] == "tool call"]
    assert len(lines) == 2
    assert lines[0]["tool"] == "discover_sub_goals" and lines[0]["alias"] == "discover_goals"
    assert lines[0]["outcome"] == "ok" and lines[0]["latency_ms"] >= 0
    assert lines[1]["outcome"] == "error" and lines[1]["code"] == -32004


async def test_crash_becomes_32603_without_traceback(app):
    f = await failure(app, "boom")
    assert f.code == -32603
    assert f.data["request_id"] == 7 and len(f.data["error_id"]) == 12
    assert "Traceback" not in f.message and "secret internals" not in f.message
    assert "secret internals" not in repr(f.data)
    logged = app.services.log_ring.query("error", 10)
    assert logged and logged[-1]["error_id"] == f.data["error_id"]
    assert "RuntimeError" in logged[-1]["error"]  # the ring keeps the type, the traceback went to stderr only


async def test_service_errors_map_to_their_registry_code(app):
    f = await failure(app, "lookup")
    assert f.code == -32012 and f.data["node_id"] == "n1"
    assert f.data["hint"] == C.error("NODE_NOT_FOUND").hint


@pytest.mark.parametrize(("name", "arguments"), [(None, {}), (3, {}), ("store_memory", [1, 2]),
                                                 ("store_memory", "text")])
async def test_malformed_calls_are_invalid_params(app, name, arguments):
    f = await failure(app, name, arguments)
    assert f.code == -32602
