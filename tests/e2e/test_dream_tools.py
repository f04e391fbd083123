"""Dream, neuromodulation and steering tools end to end through the `mcp` SDK client, on a real store with the
real embedders (issue 16): every tool and the get_neuromodulation alias, their payload shapes, and the
refusals (bad phase, modulator or value → -32602 listing what is allowed; acetylcholine → -32017; a busy
system or a second dream → -32008)."""

import asyncio

import pytest
from tool_errors import refusal

pytestmark = pytest.mark.anyio
WHY = "recording how the deploy pipeline behaves"
MEMORIES = ["The deploy failed because the database migration timed out after thirty seconds.",
            "Database migrations time out when the lock table grows large.",
            "The cat sleeps on the warm windowsill every afternoon.",
            "Rollbacks restore the previous container image within two minutes."]


async def call(client, name, args=None):
    result = await client.call_tool(name, args or {})
    assert not result.is_error, result.structured_content
    return result.structured_content


async def test_neuromodulation_tools_and_alias(client):
    state = await call(client, "get_neuromodulation_state")
    names = ("dopamine", "serotonin", "noradrenaline", "acetylcholine")
    assert all(name in state for name in names) and state["at_baseline"] is True
    for name, m in ((n, state[n]) for n in names):
        assert m["min"] <= m["level"] <= m["max"] and m["min"] <= m["baseline"] <= m["max"], name
    assert state["dopamine"]["min"] == 1.0 and state["dopamine"]["max"] == 5.0
    assert state["acetylcholine"]["adjustable"] is False and "_cognitive_pulse" in state
    alias = await call(client, "get_neuromodulation")
    assert all(alias[name]["level"] == state[name]["level"] for name in names)
    up = await call(client, "adjust_neuromodulator", {"modulator": "noradrenaline", "delta": 5.0})
    assert up["new"] == 2.0 and up["clamped"] and up["bounds"]["max"] == 2.0
    assert (await call(client, "get_neuromodulation_state"))["noradrenaline"]["level"] > 1.9


async def test_neuromodulation_refusals(client):
    ach = await refusal(client, "adjust_neuromodulator", {"modulator": "acetylcholine", "delta": 0.0005})
    assert ach.code == -32017 and "read-only" in ach.message
    bad = await refusal(client, "adjust_neuromodulator", {"modulator": "oxytocin", "delta": 0.1})
    assert bad.code == -32602 and "dopamine" in bad.message and bad.data.get("field") == "modulator"
    assert set(bad.data.get("allowed", [])) >= {"dopamine", "serotonin", "noradrenaline"}
    big = await refusal(client, "adjust_neuromodulator", {"modulator": "dopamine", "delta": 50})
    assert big.code == -32602 and big.data.get("field") == "delta"
    missing = await refusal(client, "adjust_neuromodulator", {"modulator": "dopamine"})
    assert missing.code == -32602


async def test_dream_tools(client, app):
    ids = [(await call(client, "store_memory", {"content": m, "rationale": WHY}))["id"] for m in MEMORIES]
    status = await call(client, "get_dream_status")
    assert status["state"] == "Awake" and status["phase_progress"] == 0.0 and status["last_report"] is None
    busy = await refusal(client, "trigger_dream", {})  # four stores just now
    assert busy.code == -32008 and "force" in busy.message
    bad = await refusal(client, "trigger_dream", {"phase": "deep"})
    assert bad.code == -32602 and set(bad.data.get("allowed", [])) == {"nrem", "rem", "full"}
    app.services.dream.nrem_seconds = 30.0
    started = await call(client, "trigger_dream", {"phase": "nrem", "force": True})
    assert started["started"] and started["state"] == "NREM" and started["forced"]
    again = await refusal(client, "trigger_dream", {"force": True})
    assert again.code == -32008
    for _ in range(100):  # let the first replay batch commit
        if (await call(client, "get_dream_status"))["current"]["transactions"]:
            break
        await asyncio.sleep(0.05)
    during = await call(client, "get_dream_status")
    assert during["state"] == "NREM" and 0.0 <= during["phase_progress"] <= 1.0  # status reads do not wake it
    stopped = await call(client, "abort_dream")
    assert stopped["aborted"] and stopped["state"] == "Awake" and stopped["wake_latency_ms"] >= 0
    assert stopped["partial_report"]["transactions"] >= 1
    after = await call(client, "get_dream_status")
    assert after["state"] == "Awake" and after["last_report"]["dream_id"] == started["dream_id"]
    memetic = await call(client, "get_memetic_status")
    assert memetic["utl"]["consolidationPhase"].startswith("Awake")
    shortcuts = await call(client, "get_amortized_shortcuts", {"limit": 5})
    assert shortcuts["shortcuts"] == [] and shortcuts["criteria"]["min_traversals"] == 5
    out_of_range = await refusal(client, "get_amortized_shortcuts", {"limit": 0})
    assert out_of_range.code == -32602
    assert (await call(client, "abort_dream"))["aborted"] is False
    assert ids


async def test_steering_feedback(client):
    empty = await call(client, "get_steering_feedback")
    assert empty["reward"] is None and empty["history"] == []
    await call(client, "store_memory", {"content": MEMORIES[0], "rationale": WHY})
    # the same content from another session: a duplicate (in the same session it would be a retry, deduplicated)
    await call(client, "store_memory", {"content": MEMORIES[0], "rationale": WHY, "session_id": "another"})
    feedback = await call(client, "get_steering_feedback")
    assert -1.0 <= feedback["reward"] <= 1.0 and set(feedback["components"]) == {"gardener", "curator", "assessor"}
    assert "near_duplicate" in feedback["penalties"] and feedback["would_raise_it"]
    assert len(feedback["history"]) == 2 and feedback["history"][0]["reward"] > feedback["reward"]
