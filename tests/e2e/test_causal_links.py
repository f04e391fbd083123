"""Explicit causal links between stored memories end to end through the `mcp` SDK client
(docs/storage.md#explicit-causal-links): a four-note incident whose later notes name the earlier ones as causes
("because", "led to", a note opening with "So") becomes one Causal chain that find_causal_path walks."""

import pytest

pytestmark = pytest.mark.anyio
WHY = "recording the incident"
INCIDENT = (
    "The migration timed out after 30 s.",
    "The deploy failed because the migration timed out.",
    "The failed deploy led to a rollback.",
    "So the on-call raised the timeout.",
)


async def call(client, name, args):
    return (await client.call_tool(name, args)).structured_content


async def store(client, content, session):
    args = {"content": content, "rationale": WHY, "session_id": session}
    return (await call(client, "store_memory", args))["id"]


def causal_edges(app, ids):
    return app.services.storage.store.graph_read(
        lambda g: {(e.source, e.target): e for n in ids for e in g.edges_out(n) if e.type == "Causal"})


async def test_the_incident_becomes_one_causal_chain(client, app):
    ids = [await store(client, note, "incident") for note in INCIDENT]
    edges = causal_edges(app, ids)
    assert set(edges) == {(ids[0], ids[1]), (ids[1], ids[2]), (ids[2], ids[3])}  # cause → effect, no other
    assert edges[(ids[0], ids[1])].provenance == "cue: because"  # the link's evidence
    assert edges[(ids[2], ids[3])].provenance == "cue: so"
    assert all(0 < e.confidence <= 1 and e.direction == "forward" for e in edges.values())
    path = await call(client, "find_causal_path", {"source_id": ids[0], "target_id": ids[3]})
    assert path["found"] and path["path"] == ids
    assert not (await call(client, "find_causal_path", {"source_id": ids[3], "target_id": ids[0]}))["found"]


async def test_a_negated_link_makes_no_edge(client, app):
    cause = await store(client, "The migration timed out after 30 s.", "negated")
    denial = await store(client, "The deploy did not fail because the migration timed out.", "negated")
    hedge = await store(client, "So the on-call might raise the timeout.", "negated")
    assert causal_edges(app, [cause, denial, hedge]) == {}
