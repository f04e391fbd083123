"""SPEC D16 end to end: search_graph and every curation operation move the pulse, with the UTL of what they
touched (services.operation_pulse), through the real MCP client, LMDB store and transformer."""

import pytest
from engine_waits import e8_settled, settled_pulse

pytestmark = pytest.mark.anyio
WHY = "keeping the project memory honest"
MEMORIES = [
    "The deploy failed because the database migration timed out after 30 seconds.",
    "Run pytest -x to stop at the first failing test.",
    "Kuramoto oscillators synchronise once the coupling exceeds a critical value.",
    "The team prefers squash merges so that main keeps one commit per feature.",
    "Our staging cluster runs PostgreSQL 16 with two read replicas.",
]
DUPLICATE = "The deploy failed since the database migration hit its 30 second timeout."
UNRELATED = "Sourdough bread needs a ripe starter, a long cold proof and a very hot oven."


async def call(client, name, args):
    return (await client.call_tool(name, args)).structured_content


def signal(pulse: dict) -> tuple:
    return pulse["entropy"], pulse["coherence"], pulse["learning_score"]


async def stored(client) -> tuple[list[str], dict]:
    ids, pulse = [], {}
    for text in MEMORIES:
        out = await call(client, "store_memory", {"content": text, "rationale": WHY})
        ids.append(out["id"])
        pulse = out["_cognitive_pulse"]
    return ids, pulse


async def test_search_graph_moves_the_pulse_with_the_querys_novelty(client, app):
    # each search's own pulse may lag it (its cognitive work follows the answer, D24): compare settled pulses
    await stored(client)
    before = await settled_pulse(app)
    await e8_settled(app)  # the auto edges' E8 refresh would otherwise move ΔC between the searches
    await call(client, "search_graph", {"query": MEMORIES[2], "top_k": 3})
    familiar = await settled_pulse(app)
    # a query the store already holds word for word is not novel: entropy falls
    assert familiar["entropy"] < before["entropy"]
    await call(client, "search_graph", {"query": MEMORIES[2], "top_k": 3})
    again = await settled_pulse(app)
    assert again["entropy"] < familiar["entropy"]
    familiar_c = app.services.cognition.coherence_history[-1]  # this search's own ΔC, before the average
    await call(client, "search_graph", {"query": UNRELATED, "top_k": 3})
    novel = await settled_pulse(app)
    # a query about nothing stored is novel and its neighbourhood incoherent: entropy rises, and its ΔC is
    # below the familiar query's. (The pulse's coherence is a running average still rising from the stores'
    # lower ΔC at this point, so whether it dips depends on that lag; it was a coin flip: 0.4288 vs 0.4256.)
    assert novel["entropy"] > again["entropy"]
    novel_c = app.services.cognition.coherence_history[-1]
    assert novel_c < familiar_c - 0.05, (novel_c, familiar_c)
    # and it pulls the average: coherence moves less (or falls) than the familiar search moved it
    rise = again["coherence"] - familiar["coherence"]
    assert novel["coherence"] - again["coherence"] < rise


async def test_every_curation_operation_moves_the_pulse(client):
    ids, pulse = await stored(client)
    dup = await call(client, "store_memory", {"content": DUPLICATE, "rationale": WHY})
    pulse = dup["_cognitive_pulse"]
    merged = await call(client, "merge_concepts", {"source_node_ids": [ids[0], dup["id"]], "target_name": "deploy",
                                                   "merge_strategy": "keep_highest", "rationale": WHY})
    assert merged["merged"]
    # the merged memory restates what the store holds twice: scored before the merge it is not novel
    assert merged["_cognitive_pulse"]["entropy"] < pulse["entropy"]
    pulse = merged["_cognitive_pulse"]
    steps = [
        ("annotate_node", {"node_id": ids[1], "annotations": {"tags": ["testing"], "related_concepts": [ids[3]]}}),
        ("boost_importance", {"node_id": ids[1], "delta": 0.3, "rationale": WHY}),
        ("forget_concept", {"node_id": ids[4], "reason": "obsolete", "rationale": WHY}),
    ]
    for name, args in steps:
        out = await call(client, name, args)
        assert signal(out["_cognitive_pulse"]) != signal(pulse), name
        pulse = out["_cognitive_pulse"]
    forgotten = out["reversal_hash"]
    for h in (forgotten, merged["reversal_hash"]):  # a forget and an un-merge brought back
        out = await call(client, "restore_from_hash", {"reversal_hash": h})
        assert out["restored"]
        assert signal(out["_cognitive_pulse"]) != signal(pulse)
        pulse = out["_cognitive_pulse"]
