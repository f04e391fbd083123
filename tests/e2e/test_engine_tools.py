"""The cognitive engine's second half end to end through the `mcp` SDK client: compute_delta_sc (and its alias,
and seed 003's error cases), get_memetic_status, get_workspace_status, trigger_workspace_broadcast,
get_ego_state, epistemic_action — live values that follow the store, and the engine state surviving a restart."""

import math
import uuid
from contextlib import asynccontextmanager

import pytest
from engine_waits import e8_settled
from mcp import Client
from tool_errors import refusal

from contextgraph.app import build_app
from contextgraph.server import build_server
from contextgraph.services.feedback.vertex_update import fingerprint_to_json

pytestmark = pytest.mark.anyio
RATIONALE = "worth keeping for the project"
RELATED = [
    "The deploy failed because the database migration timed out after 30 seconds.",
    "Database migrations that run longer than the deploy timeout make the release fail.",
    "We now run long database migrations before the deploy so the release does not time out.",
    "The migration timeout during deploys is 30 seconds; raise it for big tables.",
    "Big table migrations lock writes, so the deploy waits and then times out.",
    "Adding an index concurrently avoids locking the table during a migration.",
    "The release pipeline runs migrations, then restarts the web workers.",
    "A failed migration leaves the deploy half done; roll back the schema first.",
    "Migration scripts live in db/migrate and run in timestamp order during deploy.",
    "Before each release, check which migrations touch large tables and run them early.",
]
UNRELATED = "Sourdough needs a starter fed with flour and water every day."


async def tool(client, name, arguments=None):
    return (await client.call_tool(name, arguments or {})).structured_content


async def inject(client, content, related_k=3):
    return await tool(client, "inject_context", {"content": content, "rationale": RATIONALE,
                                                 "related_k": related_k})


async def error_of(client, name, arguments):
    return await refusal(client, name, arguments)


def stored_fingerprint(app, memory_id):
    store = app.services.storage.store
    return store.fingerprints([store.get(memory_id).seq])[0]


# -- compute_delta_sc ---------------------------------------------------------------------------------------
async def test_compute_delta_sc_scores_an_update_from_the_store(client):
    ids = [(await inject(client, text, 0))["id"] for text in RELATED[:5]]
    related = await tool(client, "compute_delta_sc", {
        "vertex_id": ids[0], "new_content": "The deploy failed because the schema migration ran past 30 seconds."})
    unrelated = await tool(client, "compute_delta_sc", {"vertex_id": ids[0], "new_content": UNRELATED})
    for out in (related, unrelated):
        assert len(out["delta_s"]) == len(out["delta_c"]) == 13
        assert all(0.0 <= v <= 1.0 for v in out["delta_s"] + out["delta_c"])
        assert set(out["methods"]) == {f"E{i}" for i in range(1, 14)}
        assert out["methods"]["E5"].startswith("asymmetric_knn") and out["methods"]["E9"].startswith("hamming")
        assert out["methods"]["E12"].startswith("maxsim") and out["methods"]["E13"].startswith("jaccard")
        assert out["johari"]["quadrant"] in {"Open", "Blind", "Hidden", "Unknown"}
        assert len(out["johari"]["per_space"]) == 13
        assert out["sources"] == {"new": "new_content (embedded)", "old": "the stored fingerprint"}
    # the stored version's own content is among its neighbours' topic: an unrelated rewrite is more novel
    assert unrelated["aggregate"]["delta_s"] > related["aggregate"]["delta_s"]
    assert unrelated["change"]["delta_s"] > related["change"]["delta_s"]


async def test_compute_delta_sc_takes_fingerprints_and_the_alias(client, app):
    ids = [(await inject(client, text, 0))["id"] for text in RELATED[:4]]
    await e8_settled(app)
    same = fingerprint_to_json(stored_fingerprint(app, ids[1]))
    out = await tool(client, "gwt/compute_delta_sc", {"vertex_id": ids[1], "new_fingerprint": same,
                                                      "include_diagnostics": True})
    # the new version is the stored one: nothing changes
    assert out["change"]["delta_s"] == 0.0 and out["change"]["delta_c"] == 0.0
    assert out["sources"]["new"] == "new_fingerprint"
    diag = out["diagnostics"]
    assert len(diag["per_space"]) == 13 and all(d["neighbours"] == 3 for d in diag["per_space"])
    assert diag["edge_weights"], "the vertex's Semantic/Temporal edges are its graph context"
    # a hyphenated UUID names the same vertex
    hyphenated = str(uuid.UUID(ids[1]))
    again = await tool(client, "compute_delta_sc", {"vertex_id": hyphenated, "new_fingerprint": same})
    assert again["vertex_id"] == ids[1] and again["delta_s"] == out["delta_s"]


async def test_compute_delta_sc_errors_follow_seed_003(client, app):
    ids = [(await inject(client, text, 0))["id"] for text in RELATED[:3]]
    bad_uuid = await error_of(client, "compute_delta_sc", {"vertex_id": "not-a-uuid", "new_content": "x y z"})
    assert bad_uuid.code == -32602 and bad_uuid.data["field"] == "vertex_id"

    partial = fingerprint_to_json(stored_fingerprint(app, ids[0]))
    del partial["E5"], partial["E12"]
    incomplete = await error_of(client, "compute_delta_sc", {"vertex_id": ids[0], "new_fingerprint": partial})
    assert incomplete.code == -32602 and incomplete.data["missing"] == ["E5", "E12"]
    assert "ARCH-05" in incomplete.message

    wrong = fingerprint_to_json(stored_fingerprint(app, ids[0]))
    wrong["E1"] = wrong["E1"][:100]
    mismatch = await error_of(client, "compute_delta_sc", {"vertex_id": ids[0], "new_fingerprint": wrong})
    assert mismatch.code == -32602 and mismatch.data["field"] == "new_fingerprint"

    both = await error_of(client, "compute_delta_sc", {"vertex_id": ids[0], "new_content": "a b c",
                                                       "new_fingerprint": partial})
    assert both.code == -32602 and "exactly one" in both.message

    unknown = await error_of(client, "compute_delta_sc", {"vertex_id": uuid.uuid4().hex, "new_content": "a b c"})
    assert unknown.code == -32012


# -- memetic status -----------------------------------------------------------------------------------------
async def test_memetic_status_follows_the_store_and_finds_curation_tasks(client):
    empty = await tool(client, "get_memetic_status")
    assert empty["fingerprintCount"] == 0 and empty["phase"] == "infancy"
    assert set(empty["layers"]) == {"perception", "memory", "reasoning", "meta", "action"}
    lone = (await inject(client, UNRELATED, 0))["id"]
    first = await tool(client, "get_memetic_status")
    assert first["fingerprintCount"] == 1 and first["curation_tasks"]["orphans"] == [lone]
    a = (await inject(client, RELATED[0], 0))["id"]
    b = (await inject(client, RELATED[0], 0))["id"]  # the same text again: a near-duplicate
    status = await tool(client, "get_memetic_status")
    assert status["fingerprintCount"] == 3
    pairs = [set(d["memories"]) for d in status["curation_tasks"]["duplicates"]]
    assert {a, b} in pairs
    assert any(s.startswith("merge_concepts") for s in status["curation_tasks"]["suggested"])
    assert status["utl"]["entropy"] != empty["utl"]["entropy"]
    assert status["utl"]["suggestedAction"] == status["_cognitive_pulse"]["suggested_action"]


# -- workspace ----------------------------------------------------------------------------------------------
async def test_operations_compete_for_the_workspace(client):
    ids = [(await inject(client, text, 0))["id"] for text in RELATED[:6]]
    before = await tool(client, "get_workspace_status")
    await tool(client, "search_graph", {"query": RELATED[2], "top_k": 5})
    after = await tool(client, "get_workspace_status")
    assert after["counts"]["competitions"] == before["counts"]["competitions"] + 1
    assert len(after["candidates"]) == 5
    for c in after["candidates"]:
        assert 0.0 <= c["r"] <= 1.0
        assert c["eligible"] == (c["r"] >= after["coherence_threshold"] and c["agrees"])
        assert c["agrees"] == (c["psi"] < math.pi / 2)
    # the memory whose text is the query stands near the top in most spaces: bound on the agreeing side
    exact = next(c for c in after["candidates"] if c["memory_id"] == ids[2])
    assert exact["agrees"]
    eligible = [c for c in after["candidates"] if c["eligible"]]
    if eligible:  # the strongest eligible candidate holds the workspace, and its entry was recorded
        assert after["active_memory"]["memory_id"] == max(eligible, key=lambda c: c["score"])["memory_id"]
        assert any(e["kind"] == "enter" for e in after["recent_events"])


async def test_the_memory_that_answers_agrees_most_and_an_unrelated_one_least(client):
    """Binding is agreement with the context (issue 11.6): each space's similarity to the query as a percentile of
    the query's similarities to a sample of the store, phases θ = π(1 − a). The memory that is the query binds on
    the agreeing side closest to 0 (smallest ψ), an unrelated one that a small store still returns farthest (and
    never agrees), and the workspace's winner is one of the related memories, ranked above the unrelated one.
    Which related one wins moves with the engine's clock (their r_m differ by ~0.02) and search ranks three of them
    within 0.05 of each other, so no rank among them is asserted. (r_m alone measures how much the spaces concur,
    on either side: an unrelated memory every space rejects concurs too.)"""
    ids = [(await inject(client, text, 0))["id"] for text in RELATED[:6]]
    unrelated = (await inject(client, UNRELATED, 0))["id"]
    found = await tool(client, "search_graph", {"query": RELATED[2], "top_k": 7})
    status = await tool(client, "get_workspace_status")
    psi = {c["memory_id"]: c["psi"] for c in status["candidates"]}
    assert psi[ids[2]] == min(psi.values())
    if unrelated in psi:
        assert psi[unrelated] == max(psi.values())
        assert not next(c for c in status["candidates"] if c["memory_id"] == unrelated)["agrees"]
    if status["active_memory"] is not None:
        winner = status["active_memory"]["memory_id"]
        ranked = [m["id"] for m in found["results"]]
        assert winner in ids and winner in ranked
        if unrelated in ranked:
            assert ranked.index(winner) < ranked.index(unrelated)


async def test_broadcast_measures_refuses_and_forces(client):
    ids = [(await inject(client, text, 0))["id"] for text in RELATED[:5]]
    missing = await error_of(client, "trigger_workspace_broadcast", {"memory_id": uuid.uuid4().hex})
    assert missing.code == -32012

    lone = (await inject(client, UNRELATED, 0))["id"]
    await tool(client, "search_graph", {"query": RELATED[0], "top_k": 5})
    refused = await tool(client, "trigger_workspace_broadcast", {"memory_id": lone})
    # the bread memory stands low in most spaces for a migration query: refused, with the reason
    assert refused["broadcast"] is False and "force" in refused["reason"]
    assert refused["r"] < refused["threshold"] or "does not fit the current context" in refused["reason"]
    assert len(refused["agreements"]) == 13 and sum(refused["agreements"].values()) < 13 / 2

    forced = await tool(client, "trigger_workspace_broadcast", {"memory_id": ids[3], "force": True,
                                                                "importance": 0.9, "alignment": 0.7})
    assert forced["broadcast"] is True and forced["memory_id"] == ids[3]
    status = await tool(client, "get_workspace_status")
    assert status["active_memory"]["memory_id"] == ids[3]
    assert status["active_memory"]["importance"] == 0.9 and status["active_memory"]["alignment"] == 0.7
    assert any(e["kind"] == "enter" and e["memory_id"] == ids[3] for e in status["recent_events"])


async def test_broadcast_without_a_context_explains_itself(client):
    memory_id = (await tool(client, "store_memory", {"content": RELATED[0], "rationale": RATIONALE}))["id"]
    refused = await tool(client, "trigger_workspace_broadcast", {"memory_id": memory_id})
    assert refused["broadcast"] is False and refused["r"] is None and "no context" in refused["reason"]
    forced = await tool(client, "trigger_workspace_broadcast", {"memory_id": memory_id, "force": True})
    assert forced["broadcast"] is True and forced["forced"] is True


# -- ego, consciousness -------------------------------------------------------------------------------------
async def test_ego_state_moves_with_each_operation(client):
    start = await tool(client, "get_ego_state")
    assert start["trajectory_length"] == 0 and len(start["purpose_vector"]) == 13
    for text in RELATED[:3]:
        await inject(client, text, 0)
    ego = await tool(client, "get_ego_state")
    assert ego["trajectory_length"] == 3 and ego["actions_compared"] == 3
    assert ego["purpose_vector"] != start["purpose_vector"]
    assert 0.0 <= ego["identity_continuity"] <= 1.0
    assert ego["identity_status"] in {"Healthy", "Stable", "Warning", "Critical"}
    consciousness = await tool(client, "get_consciousness_state")
    assert consciousness["identity"]["continuity"] == ego["identity_continuity"]
    assert 0.0 < consciousness["meta_score"] < 1.0 and "workspace" in consciousness


# -- epistemic action ---------------------------------------------------------------------------------------
async def test_epistemic_action_asks_the_generic_question_in_a_small_store(client):
    await inject(client, RELATED[0], 0)
    out = await tool(client, "epistemic_action", {"force": True})
    assert out["action_type"] == "ask_user" and out["focal_nodes"] == []
    assert "domain" in out["question"] and 0.0 <= out["expected_entropy_reduction"] <= 1.0


async def test_epistemic_action_focuses_on_the_least_coherent_memories(client):
    ids = {(await inject(client, text, 0))["id"]: text for text in RELATED}
    lone = (await inject(client, UNRELATED, 0))["id"]
    out = await tool(client, "epistemic_action", {"force": True})
    assert out["action_type"] == "ask_user" and len(out["focal_nodes"]) == 3
    assert out["focal_nodes"][0] == lone  # the bread memory coheres with nothing here
    assert out["focal_coherence"] == sorted(out["focal_coherence"])
    assert "Sourdough" in out["question"] and set(out["focal_nodes"][1:]) <= set(ids)
    assert 0.0 < out["expected_entropy_reduction"] <= 1.0
    unforced = await tool(client, "epistemic_action")
    assert unforced["action_type"] in {"ask_user", "none"}
    if unforced["action_type"] == "none":
        assert "force" in unforced["reason"]


# -- persistence --------------------------------------------------------------------------------------------
@asynccontextmanager
async def process(settings):
    """One server process on the data directory: an app, a client session, and a clean close at the end."""
    app = build_app(settings)
    try:
        async with Client(build_server(app), mode="legacy") as client:
            yield app, client
    finally:
        app.close()


async def test_engine_state_survives_a_restart(make_settings, tmp_path):
    settings = make_settings(tmp_path / "home")
    async with process(settings) as (_, client):
        for text in RELATED[:3]:
            await inject(client, text, 0)
        await tool(client, "adjust_coupling", {"new_K": 7.5})
        utl = await tool(client, "utl_status")
        ego = await tool(client, "get_ego_state")

    async with process(settings) as (second, client):
        second.services.storage.open()  # loads the engine document; nothing has advanced the network yet
        saved = second.services.storage.store.get_document("cognitive_engine")["cognition"]["network"]
        loaded = second.services.cognition.network.to_doc()
        assert (loaded["phases"], loaded["coupling"]) == (saved["phases"], saved["coupling"])
        again = await tool(client, "utl_status")
        assert again["operations"] == 3 and again["entropy"] == utl["entropy"]
        assert again["per_space"] == utl["per_space"]
        restored = await tool(client, "get_ego_state")
        assert restored["trajectory_length"] == 3
        assert restored["purpose_vector"] == ego["purpose_vector"]
        assert (await tool(client, "get_kuramoto_sync"))["coupling"] == 7.5


async def test_compute_delta_sc_refuses_odd_fingerprint_values(client, app):
    ids = [(await inject(client, text, 0))["id"] for text in RELATED[:3]]
    good = fingerprint_to_json(stored_fingerprint(app, ids[0]))
    bad_inputs = [
        {**{k: v for k, v in good.items() if k != "E1"}, "E²": good["E1"]},        # a digit that is not 0-9
        {**good, "E9": [2**70] + good["E9"][1:]},                                  # beyond a byte
        {**good, "E9": [1.7] + good["E9"][1:]},                                    # not a whole number
        {**good, "E13": {"indices": [2**40], "values": [1.0]}},                    # beyond int32
        {**good, "E13": {"indices": [1.9, 2.2], "values": [1.0, 1.0]}},            # fractional indices
        {**good, "E1": "not a vector"},
    ]
    for fingerprint in bad_inputs:
        error = await error_of(client, "compute_delta_sc", {"vertex_id": ids[0], "new_fingerprint": fingerprint})
        assert error.code == -32602, (error.code, error.message)
        assert error.data["field"] == "new_fingerprint"


async def test_status_tools_load_the_saved_engine_before_answering(make_settings, tmp_path):
    """A fresh process's first call may be a GWT tool: it must see (and change) the saved state, not a blank one."""
    settings = make_settings(tmp_path / "home")
    async with process(settings) as (_, client):
        for text in RELATED[:3]:
            await inject(client, text, 0)
    async with process(settings) as (_, client):
        assert (await tool(client, "get_ego_state"))["trajectory_length"] == 3
        assert (await tool(client, "adjust_coupling", {"new_K": 6.5}))["new_K"] == 6.5
        assert (await tool(client, "get_kuramoto_sync"))["coupling"] == 6.5
    async with process(settings) as (_, client):
        assert (await tool(client, "get_kuramoto_sync"))["coupling"] == 6.5
        await tool(client, "search_graph", {"query": RELATED[0], "top_k": 3})
        competitions = (await tool(client, "get_workspace_status"))["counts"]["competitions"]
    async with process(settings) as (_, client):
        # a search-only session's workspace changes were saved on close
        assert (await tool(client, "get_workspace_status"))["counts"]["competitions"] == competitions
