"""Spawns the installed console script, `contextgraph serve`, and talks to it over stdio: raw JSON lines as a
script or hook would send them, and the SDK's stdio client in both protocol eras."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from contextgraph.constitution import constitution
from contextgraph.tools.catalog import build_registry

pytestmark = pytest.mark.anyio
SCRIPT = Path(sys.executable).parent / "contextgraph"
PULSE_FIELDS = {"entropy", "coherence", "learning_score", "quadrant", "suggested_action"}


def env(home: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "CONTEXTGRAPH_HOME": str(home), "HF_HUB_OFFLINE": "1", **extra}


def exchange(lines: list[str], home: Path, timeout: float = 60) -> tuple[dict, str]:
    """Pipe the lines into a fresh server, close stdin, return {id: response} and stderr."""
    assert SCRIPT.exists(), f"console script not installed at {SCRIPT}"
    proc = subprocess.run([str(SCRIPT), "serve"], input="\n".join(lines) + "\n", capture_output=True, text=True,
                          env=env(home), timeout=timeout)
    assert proc.returncode == 0, proc.stderr
    responses = [json.loads(line) for line in proc.stdout.splitlines()]  # stdout holds protocol lines only
    return {r.get("id"): r for r in responses}, proc.stderr


def request(id_, method, params=None):
    msg = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        msg["params"] = params
    return json.dumps(msg)


def handshake(version="2024-11-05"):
    return [
        request(0, "initialize", {"protocolVersion": version, "capabilities": {},
                                  "clientInfo": {"name": "pytest", "version": "1"}}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ]


def call(id_, name, arguments):
    return request(id_, "tools/call", {"name": name, "arguments": arguments})


def test_raw_json_lines_over_stdio(tmp_path):
    responses, stderr = exchange([
        *handshake("2024-11-05"),
        request(1, "tools/list"),
        call(2, "tool_find", {"query": "find tools", "limit": 2}),
        call(3, "no_such_tool", {}),
        call(4, "tool_find", {"limit": 1000}),
        "this is not json",
        call(5, "gwt/compute_delta_sc", {}),
        call(6, "tool_call", {"name": "temporary_scratchpad", "arguments": {"action": "read"}}),
    ], tmp_path)
    assert responses[0]["result"]["protocolVersion"] == "2024-11-05"
    assert responses[0]["result"]["capabilities"]["tools"]["listChanged"] is True

    tools = responses[1]["result"]["tools"]
    assert {t["name"] for t in tools} >= {"tool_find", "tool_describe", "tool_load", "tool_active", "tool_call"}
    # the server middleware adds `aliases` at the top level of a listed tool that has them (SPEC §4)
    by_name = {t["name"]: t for t in tools}
    assert by_name["compute_delta_sc"]["aliases"] == ["gwt/compute_delta_sc"]
    assert by_name["get_neuromodulation_state"]["aliases"] == ["get_neuromodulation"]
    aliased: dict[str, list[str]] = {}  # the constitution's aliases whose target is registered
    for alias in constitution()["tool_aliases"]:
        if alias["target"] in by_name:
            aliased.setdefault(alias["target"], []).append(alias["alias"])
    assert {name: t["aliases"] for name, t in by_name.items() if "aliases" in t} == aliased

    ok = responses[2]["result"]
    assert set(ok["_cognitive_pulse"]) == PULSE_FIELDS  # the seeds' contract: top level of result
    assert ok["_meta"]["contextgraph/pulse"] == ok["_cognitive_pulse"] == ok["structuredContent"]["_cognitive_pulse"]
    assert json.loads(ok["content"][0]["text"])["results"][0]["name"] == "tool_find"

    unknown = responses[3]["error"]
    assert unknown["code"] == -32004 and unknown["message"].startswith("Unknown tool: no_such_tool")
    assert set(unknown["data"]["_cognitive_pulse"]) == PULSE_FIELDS

    invalid = responses[4]["error"]
    assert invalid["code"] == -32602 and invalid["data"]["field"] == "query"
    assert "Traceback" not in json.dumps(invalid)

    assert responses[None]["error"]["code"] == -32700  # the line that was not JSON

    alias = responses[5]["error"]  # the alias resolves; its target validates (seed 003 AC-03)
    assert alias["code"] == -32602 and alias["data"]["field"] == "vertex_id"

    assert responses[6]["result"]["structuredContent"]["tool"] == "temporary_scratchpad"

    logs = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    calls = [entry for entry in logs if entry.get("event") == "tool call"]
    assert len(calls) == 5 and {c["outcome"] for c in calls} == {"ok", "error"}


def test_every_request_is_answered_when_stdin_closes_at_once(tmp_path):
    lines = [*handshake("2025-06-18")] + [call(i, "tool_active", {}) for i in range(1, 21)]
    responses, _ = exchange(lines, tmp_path)
    assert set(responses) == set(range(21))


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_sdk_stdio_client(tmp_path, mode):
    params = StdioServerParameters(command=str(SCRIPT), args=["serve", "--profile", "core"], env=env(tmp_path))
    async with Client(params, mode=mode) as client:
        assert client.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
        names = {t.name for t in (await client.list_tools()).tools}
        assert "tool_find" in names and "get_system_logs" not in names  # the core profile
        result = await client.call_tool("tool_call", {"name": "get_system_logs", "arguments": {"limit": 5}})
        assert result.structured_content["tool"] == "get_system_logs"
        assert set(result.meta["contextgraph/pulse"]) == PULSE_FIELDS


def run_cli(*args: str, home: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, env=env(home), timeout=60)


def test_cli_help_tools_and_doctor(tmp_path):
    for args in (["--help"], ["serve", "--help"], ["tools", "--help"], ["doctor", "--help"]):
        out = run_cli(*args, home=tmp_path)
        assert out.returncode == 0 and "usage: contextgraph" in out.stdout
    tools = run_cli("tools", home=tmp_path)
    assert tools.returncode == 0
    registered = len(build_registry(constitution(), "all").specs)
    assert "tool_find" in tools.stdout and "discovery" in tools.stdout and f"{registered} tools" in tools.stdout
    doctor = run_cli("doctor", home=tmp_path)
    assert doctor.returncode == 0, doctor.stdout
    assert "default model: all-MiniLM-L6-v2" in doctor.stdout and "data directory" in doctor.stdout
    bad = subprocess.run([str(SCRIPT), "tools"], capture_output=True, text=True, timeout=60,
                         env=env(tmp_path, CONTEXTGRAPH_PROFILE="everything"))
    assert bad.returncode == 2 and "unknown tool profile" in bad.stderr


def test_doctor_reports_an_unwritable_data_dir(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    out = run_cli("doctor", "--home", str(blocker), home=tmp_path)
    assert out.returncode == 1
    assert "MISSING" in out.stdout and "not a directory" in out.stdout and "fix:" in out.stdout
