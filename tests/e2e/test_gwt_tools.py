"""The cognitive-engine tools end to end through the `mcp` SDK client: utl_status, get_kuramoto_sync,
adjust_coupling, get_consciousness_state, get_johari_classification — live values, error cases, and status
that follows the store (no canned numbers)."""

import math

import anyio
import pytest
from tool_errors import refusal

pytestmark = pytest.mark.anyio
RATIONALE = "worth keeping for the project"
RELATED = [
    "The deploy failed because the database migration timed out after 30 seconds.",
    "Database migrations that run longer than the deploy timeout make the release fail.",
    "We now run long database migrations before the deploy so the release does not time out.",
    "The migration timeout during deploys is 30 seconds; raise it for big tables.",
]
UNRELATED = "Sourdough needs a starter fed with flour and water every day."


async def tool(client, name, arguments=None):
    return (await client.call_tool(name, arguments or {})).structured_content


async def inject(client, content):
    return await tool(client, "inject_context", {"content": content, "rationale": RATIONALE, "related_k": 0})


async def test_kuramoto_sync_reports_a_live_network(client):
    out = await tool(client, "get_kuramoto_sync")
    assert len(out["phases"]) == 13 and len(out["natural_freqs"]) == 13
    assert 0.0 <= out["r"] <= 1.0 and 0.0 <= out["psi"] < 2 * math.pi
    assert out["coupling"] == 1.0 and out["coupling_bounds"] == {"min": 0.0, "max": 10.0}  # D13's default
    assert sum(out["natural_freqs"]) / 13 == pytest.approx(1.0, rel=1e-5)  # ω = f/mean(f) rad/s (D13)
    await anyio.sleep(0.05)
    again = await tool(client, "get_kuramoto_sync", {"session_id": "s"})
    assert again["phases"] == out["phases"]  # the agent's clock (D23): nothing moves between operations
    assert "_cognitive_pulse" in again
    await tool(client, "store_memory", {"content": "The release train leaves every second Tuesday.",
                                        "rationale": "a memory operation drives the oscillators"})
    moved = await tool(client, "get_kuramoto_sync")
    assert moved["phases"] != out["phases"] and moved["steps_integrated"] >= 1


async def test_adjust_coupling_predicts_and_applies(client):
    high = await tool(client, "adjust_coupling", {"new_K": 10})
    assert high["old_K"] == 1.0 and high["new_K"] == 10.0 and 0.0 <= high["predicted_r"] <= 1.0
    low = await tool(client, "adjust_coupling", {"new_K": 0})
    assert low["old_K"] == 10.0 and low["new_K"] == 0.0
    assert high["predicted_r"] > low["predicted_r"]
    assert (await tool(client, "get_kuramoto_sync"))["coupling"] == 0.0
    for bad in (10.5, -0.1):
        info = await refusal(client, "adjust_coupling", {"new_K": bad})
        assert info.code == -32602 and info.data["field"] == "new_K"
        assert info.data.get("min") == 0.0 or info.data.get("max") == 10.0
    info = await refusal(client, "adjust_coupling", {})
    assert info.code == -32602
    assert (await tool(client, "get_kuramoto_sync"))["coupling"] == 0.0  # refused calls changed nothing


async def test_consciousness_state_starts_dormant_and_wakes_with_memories(client):
    empty = await tool(client, "get_consciousness_state")
    assert empty["D"] == 0.0 and empty["C"] == 0.0 and empty["state"] == "DORMANT"
    assert empty["meta_samples"] == 0 and empty["meta_accuracy"] == 0.5
    assert set(empty["sources"]) == {"I", "R", "D"}
    for text in RELATED:
        await inject(client, text)
    live = await tool(client, "get_consciousness_state", {"session_id": "x"})
    assert live["D"] > 0.5 and live["C"] > 0.0 and live["meta_samples"] == len(RELATED)
    assert live["C"] == pytest.approx(live["I"] * live["R"] * live["D"], abs=1e-5)
    assert live["state"] in {"DORMANT", "FRAGMENTED", "EMERGING", "CONSCIOUS", "HYPERSYNC"}


async def test_utl_status_follows_the_store(client):
    empty = await tool(client, "utl_status")
    assert empty["memory_count"] == 0 and empty["lifecycle"] == {"stage": "infancy", "lambda_s": 0.7,
                                                                  "lambda_c": 0.3}
    assert (empty["entropy"], empty["coherence"], empty["johari_quadrant"]) == (1.0, 0.0, "Blind")
    for text in RELATED:
        await inject(client, text)
    related = await tool(client, "utl_status")
    assert related["memory_count"] == len(RELATED) and related["operations"] == len(RELATED)
    assert related["entropy"] < empty["entropy"] and related["coherence"] > empty["coherence"]
    assert len(related["per_space"]) == 13 and 0.0 <= related["learning_score"] <= 1.0
    await inject(client, UNRELATED)
    novel = await tool(client, "utl_status")
    assert novel["entropy"] > related["entropy"]  # one unrelated memory raises entropy
    assert novel["memory_count"] == len(RELATED) + 1
    await client.call_tool("store_memory", {"content": "A plain store.", "rationale": RATIONALE})
    assert (await tool(client, "utl_status"))["memory_count"] == len(RELATED) + 2


async def test_status_tools_change_when_the_store_changes(client):
    names = ["utl_status", "get_consciousness_state"]
    before = {n: await tool(client, n) for n in names}
    for text in RELATED[:2]:
        await inject(client, text)
    after = {n: await tool(client, n) for n in names}
    for n in names:
        strip = lambda d: {k: v for k, v in d.items() if k != "_cognitive_pulse"}  # noqa: E731
        assert strip(before[n]) != strip(after[n]), n
    assert after["utl_status"]["entropy"] != before["utl_status"]["entropy"]
    assert after["get_consciousness_state"]["D"] != before["get_consciousness_state"]["D"]


async def test_johari_classification_of_a_memory(client):
    ids = [(await inject(client, text))["id"] for text in RELATED]
    lone = (await inject(client, UNRELATED))["id"]
    out = await tool(client, "get_johari_classification", {"memory_id": ids[0]})
    assert len(out["quadrants"]) == 13 and len(out["confidences"]) == 13
    assert set(out["quadrants"]) <= {"Open", "Blind", "Hidden", "Unknown"}
    assert all(0.0 <= c <= 1.0 for c in out["confidences"])
    assert out["neighbours"] == 4 and out["suggested_action"]
    assert all(line.startswith(out["quadrants"][0] + " in E1 but ") for line in out["insights"])
    row = out["per_space"][0]
    assert row["space"] == "E1" and 0.0 <= row["delta_s"] <= 1.0 and 0.0 <= row["cluster_fit"] <= 1.0
    other = await tool(client, "get_johari_classification", {"memory_id": lone})
    # the unrelated memory is more novel against its neighbours than a member of the related group
    assert other["per_space"][0]["delta_s"] > out["per_space"][0]["delta_s"]
    info = await refusal(client, "get_johari_classification", {"memory_id": "0" * 32})
    assert info.code == -32012
    info = await refusal(client, "get_johari_classification", {"memory_id": "not-an-id"})
    assert info.code == -32602


async def test_johari_of_the_only_memory_is_finite(client):
    only = (await inject(client, UNRELATED))["id"]
    out = await tool(client, "get_johari_classification", {"memory_id": only})
    assert out["neighbours"] == 0 and out["quadrants"] == ["Blind"] * 13 and out["insights"] == []
