"""Curation and navigation tools end to end through the `mcp` SDK client, on real LMDB, real indexes and the real
ONNX transformer (seed 001 TC-CUR and TC-NAV rows)."""

import time

import pytest
from engine_waits import e8_settled
from tool_errors import refusal

from contextgraph.storage.base import Edge

pytestmark = pytest.mark.anyio
WHY = "curating the project memory"
DEPLOY = "The deploy failed because the database migration timed out after 30 seconds."
DEPLOY2 = "The deploy failed since the database migration hit its 30 second timeout."
OTHER = "Kuramoto oscillators synchronise once the coupling exceeds a critical value."


async def call(client, name, args):
    return (await client.call_tool(name, args)).structured_content


async def store(client, content, **extra):
    return (await call(client, "store_memory", {"content": content, "rationale": WHY, **extra}))["id"]


async def error(client, name, args):
    return await refusal(client, name, args)


async def search_ids(client, query):
    return [r["id"] for r in (await call(client, "search_graph", {"query": query, "top_k": 10}))["results"]]


async def test_forget_restore_round_trip(client, app):
    a = await store(client, DEPLOY)
    b = await store(client, OTHER, link_to=[a])
    await e8_settled(app)  # a's E8 takes in its new neighbour b in the background
    before = app.services.storage.store.graph_read(lambda g: (g.get(a), g.fingerprint_blob(g.get(a).seq),
                                                            sorted(map(repr, g.edges(a)))))
    assert a in await search_ids(client, "why did the deploy fail")
    out = await call(client, "forget_concept", {"node_id": a, "reason": "obsolete", "rationale": WHY})
    assert out["soft_deleted"] and len(out["reversal_hash"]) == 64
    assert app.services.cognition.memory_count == app.services.storage.store.count()  # the pulse counts what is left
    # gone from search, the graph and every tool
    assert a not in await search_ids(client, "why did the deploy fail")
    assert (await call(client, "get_neighborhood", {"node_id": b, "min_weight": 0}))["count"] == 0
    assert (await error(client, "get_neighborhood", {"node_id": a})).code == -32012
    assert (await error(client, "hydrate_citation", {"citation_tag": f"[node_{a}]"})).code == -32012
    assert (await error(client, "annotate_node", {"node_id": a, "annotations": {"tags": ["x"]}})).code == -32012
    assert a not in [m["id"] for m in (await call(client, "get_recent_context", {}))["memories"]]
    # TC-CUR-004 again: already tombstoned
    again = await error(client, "forget_concept", {"node_id": a, "reason": "obsolete", "rationale": WHY})
    assert again.code == -32014
    found = await call(client, "search_tombstones", {"query": "deploy migration"})
    assert [t["id"] for t in found["tombstones"]] == [a]
    assert found["tombstones"][0]["reversal_hash"] == out["reversal_hash"]
    restored = await call(client, "restore_from_hash", {"reversal_hash": out["reversal_hash"]})
    assert restored["restored"] == [a]
    after = app.services.storage.store.graph_read(lambda g: (g.get(a), g.fingerprint_blob(g.get(a).seq),
                                                           sorted(map(repr, g.edges(a)))))
    assert after[1] == before[1] and after[2] == before[2]  # identical embeddings and edges
    assert after[0].content == before[0].content and after[0].session_position == before[0].session_position
    assert a in await search_ids(client, "why did the deploy fail")
    assert (await call(client, "search_tombstones", {}))["count"] == 0
    events = [e["event"] for e in (await call(client, "get_node_lineage", {"node_id": a}))["events"]]
    assert events == ["created", "forgotten", "restored"]
    assert (await error(client, "restore_from_hash", {"reversal_hash": out["reversal_hash"]})).code == -32012


async def test_hard_delete_rules_and_expired_window(client, app):
    a = await store(client, DEPLOY)
    bad = await error(client, "forget_concept", {"node_id": a, "reason": "obsolete", "soft_delete": False,
                                                  "rationale": WHY})
    assert bad.code == -32602  # TC-CUR-005
    missing = await error(client, "forget_concept", {"node_id": a, "reason": "obsolete"})
    assert missing.code == -32009
    out = await call(client, "forget_concept", {"node_id": a, "reason": "obsolete", "rationale": WHY})
    real = app.services.clock.fn
    app.services.clock.fn = lambda: real() + 31 * 86400
    try:
        expired = await error(client, "restore_from_hash", {"reversal_hash": out["reversal_hash"]})
        assert expired.code == -32011 and expired.data["deleted_at"] == out["deleted_at"]  # TC-CUR-007
        assert (await call(client, "search_tombstones", {}))["count"] == 0  # outside the window
    finally:
        app.services.clock.fn = real
    b = await store(client, OTHER)
    hard = await call(client, "forget_concept", {"node_id": b, "reason": "user_requested", "soft_delete": False,
                                                 "rationale": WHY})
    assert hard["reversal_hash"] is None
    assert b not in await search_ids(client, "coupled oscillators")
    assert (await call(client, "get_node_lineage", {"node_id": b}))["status"] == "deleted"


async def test_tombstones_are_purged_once_their_window_has_passed(client, app):
    """Forgetting is undoable for 30 days, then final: the exact record and fingerprint kept for the undo go."""
    a = await store(client, DEPLOY)
    b = await store(client, OTHER)
    out = await call(client, "forget_concept", {"node_id": a, "reason": "obsolete", "rationale": WHY})
    store_ = app.services.storage.store
    assert store_.graph_read(lambda g: g.get_tombstone(a)) is not None
    real = app.services.clock.fn
    app.services.clock.fn = lambda: real() + 31 * 86400
    try:
        await call(client, "annotate_node", {"node_id": b, "annotations": {"tags": ["later"]}})  # any curation
        assert store_.graph_read(lambda g: g.get_tombstone(a)) is None  # record, fingerprint and edges gone
        late = await error(client, "restore_from_hash", {"reversal_hash": out["reversal_hash"]})
        assert late.code == -32011 and late.data["deleted_at"] == out["deleted_at"]  # still says why
    finally:
        app.services.clock.fn = real
    assert (await call(client, "get_node_lineage", {"node_id": a}))["events"]  # the history (no content) stays


def content_spaces(app, node_id: str) -> dict:
    """Every space of a stored fingerprint but E8, which follows the memory's edges (services.e8_refresh)."""
    store_ = app.services.storage.store
    (fp,) = store_.fingerprints([store_.get(node_id).seq])
    return {s: (v.indices.tobytes(), v.values.tobytes()) if hasattr(v, "indices") else v.tobytes()
            for s, v in fp.items() if s != 8}


async def test_annotate_and_boost(client, app):
    a = await store(client, DEPLOY)
    b = await store(client, DEPLOY2)
    before = content_spaces(app, a)
    out = await call(client, "annotate_node", {"node_id": a, "annotations": {
        "tags": ["ops"], "domain": "Code", "confidence": 0.8, "notes": "seen twice", "related_concepts": [b, "ci"]}})
    assert out["tags"] == ["ops"] and out["annotations"]["domain"] == "Code" and out["linked"] == [b]
    assert content_spaces(app, a) == before  # TC-CUR-008: annotating re-embeds nothing (E8 follows the new edge)
    bad = await error(client, "annotate_node", {"node_id": a, "annotations": {"domain": "Cooking"}})
    assert bad.code == -32602
    up = await call(client, "boost_importance", {"node_id": a, "delta": 0.2, "rationale": WHY})  # TC-CUR-009
    assert up["importance"] == pytest.approx(0.7)
    down = await call(client, "boost_importance", {"node_id": a, "delta": -0.5, "rationale": WHY})
    assert down["importance"] == pytest.approx(0.2)
    assert (await call(client, "boost_importance", {"node_id": a, "delta": -0.5, "rationale": WHY}))["importance"] == 0
    beyond = await error(client, "boost_importance", {"node_id": a, "delta": 0.6, "rationale": WHY})
    assert beyond.code == -32602 and beyond.data["max"] == 0.5  # TC-CUR-010 (SPEC D1: -32602)
    assert (await error(client, "boost_importance", {"node_id": a, "delta": 0.1})).code == -32009
    lone = await store(client, OTHER, importance=0.8)
    cancer = await error(client, "boost_importance", {"node_id": lone, "delta": 0.2, "rationale": WHY})
    assert cancer.code == -32015 and cancer.data["neighbour_entropy"] > 0.8
    events = [e["event"] for e in (await call(client, "get_node_lineage", {"node_id": a}))["events"]]
    assert events == ["created", "annotated"] + ["importance_changed"] * 3


async def test_merge_and_restore(client, app):
    a = await store(client, DEPLOY, tags=["ops"])
    b = await store(client, DEPLOY2, importance=0.9)
    c = await store(client, OTHER, link_to=[a])
    assert (await error(client, "merge_concepts", {"source_node_ids": [a, b], "target_name": "deploy"})).code == -32009
    for one in ([a[:8]], [a]):  # issue 38.6: one id (a short prefix or a whole id): the list's rule is what is said
        single = await error(client, "merge_concepts", {"source_node_ids": one, "target_name": "x", "rationale": WHY})
        assert single.code == -32602 and single.data["field"] == "source_node_ids" and single.data["min_items"] == 2
        assert "'source_node_ids': List should have at least 2 items" in single.message
    incompatible = await error(client, "merge_concepts", {"source_node_ids": [a, c], "target_name": "x",
                                                          "rationale": WHY})
    assert incompatible.code == -32010  # TC-CUR-003
    linked = await call(client, "merge_concepts", {"source_node_ids": [a, c], "target_name": "x", "rationale": WHY,
                                                   "force_merge": True})
    assert linked["merged"] is False and linked["linked"]
    await call(client, "restore_from_hash", {"reversal_hash": linked["reversal_hash"]})
    merged = await call(client, "merge_concepts", {"source_node_ids": [a, b], "target_name": "deploy timeout",
                                                   "rationale": WHY})  # TC-CUR-001, summarize by default
    m = merged["merged_id"]
    assert merged["merged"] and "extractive" in merged["summary_method"] and "30 seconds" in merged["content"]
    assert app.services.cognition.memory_count == app.services.storage.store.count()  # two sources became one
    ids = await search_ids(client, "why did the deploy fail")
    assert m in ids and a not in ids and b not in ids
    hood = await call(client, "get_neighborhood", {"node_id": m, "min_weight": 0, "edge_types": ["Relational"]})
    assert [n["id"] for n in hood["neighbors"]] == [c]  # inherited from a
    detail = await call(client, "hydrate_citation", {"citation_tag": f"[node_{m[:12]}]"})
    assert detail["node_id"] == m and detail["importance"] == 0.9
    await call(client, "restore_from_hash", {"reversal_hash": merged["reversal_hash"]})
    ids = await search_ids(client, "why did the deploy fail")
    assert m not in ids and {a, b} <= set(ids)
    hood = await call(client, "get_neighborhood", {"node_id": a, "min_weight": 0, "edge_types": ["Relational"]})
    assert [n["id"] for n in hood["neighbors"]] == [c]
    keep = await call(client, "merge_concepts", {"source_node_ids": [a, b], "target_name": "d", "rationale": WHY,
                                                 "merge_strategy": "keep_highest"})
    assert keep["content"] == DEPLOY2
    assert app.services.storage.store.check() == []


async def test_navigation(client, app):
    x = await store(client, "The login endpoint started issuing JWT tokens.", session_id="s1")
    y = await store(client, "JWT verification runs in the request middleware.", session_id="s1")
    z = await store(client, "The middleware enforces rate limiting per user.", session_id="s1")
    w = await store(client, OTHER, session_id="s2")
    hood = await call(client, "get_neighborhood", {"node_id": y, "min_weight": 0, "edge_types": ["Temporal"]})
    assert {n["id"] for n in hood["neighbors"]} == {x, z}  # TC-NAV-001
    deep = await call(client, "get_neighborhood", {"node_id": x, "depth": 3, "min_weight": 0,
                                                   "edge_types": ["Temporal"]})
    assert [(n["id"], n["depth"]) for n in deep["neighbors"]] == [(y, 1), (z, 2)]  # TC-NAV-002
    assert (await error(client, "get_neighborhood", {"node_id": x, "depth": 4})).code == -32602

    def causal(*pairs):
        store_ = app.services.storage.store
        store_.graph_write(lambda g: [g.put_edge(Edge(s, t, "Causal", weight=0.8, created_at=time.time()))
                                      for s, t in pairs])

    causal((x, y), (y, z))
    path = await call(client, "find_causal_path", {"source_id": x, "target_id": z})
    assert path["found"] and path["path"] == [x, y, z] and not path["cycle_detected"]  # TC-NAV-003
    assert "→" in path["chain"] and path["hops"][0]["edge_type"] == "Causal"
    back = await call(client, "find_causal_path", {"source_id": z, "target_id": x, "direction": "backward"})
    assert back["path"] == [z, y, x]
    none = await call(client, "find_causal_path", {"source_id": x, "target_id": w})
    assert none["found"] is False and none["path"] == [] and none["hops"] == []  # TC-NAV-004
    causal((z, x))
    cyc = await call(client, "find_causal_path", {"source_id": x, "target_id": w})
    assert cyc["cycle_detected"] and cyc["cycle"] == [x, y, z, x]  # TC-NAV-005
    recent = await call(client, "get_recent_context", {"limit": 10})
    assert [m["id"] for m in recent["memories"]] == [w, z, y, x]
    own = await store(client, DEPLOY)  # no session_id: the connection's session
    mine = await call(client, "get_recent_context", {"session_only": True})
    assert [m["id"] for m in mine["memories"]] == [own]  # TC-NAV-007
    since = await call(client, "get_recent_context", {"since": "2100-01-01T00:00:00Z"})
    assert since["count"] == 0
    assert (await error(client, "hydrate_citation", {"citation_tag": "node_abc"})).code == -32012
    assert (await error(client, "hydrate_citation", {"citation_tag": "[node_ffffffffff]"})).code == -32012
    assert (await error(client, "get_node_lineage", {"node_id": "0" * 32})).code == -32012


async def test_causal_edges_are_made_on_store(client, app):
    rain = await store(client, "Heavy rain leads to flooded basements.")
    mould = await store(client, "Flooded basements cause mould on the walls.")
    asthma = await store(client, "Mould on the walls triggers asthma attacks.")
    lone = await store(client, OTHER)
    edges = app.services.storage.store.graph_read(lambda g: [e for n in (rain, mould, asthma, lone)
                                                          for e in g.edges_out(n) if e.type == "Causal"])
    pairs = {(e.source, e.target): e for e in edges}
    assert set(pairs) == {(rain, mould), (mould, asthma)}  # cause → effect, nothing for the unrelated memory
    for e in pairs.values():
        assert 0.65 <= e.weight <= 1 and 0.3 <= e.confidence <= 1 and e.direction == "forward"
    path = await call(client, "find_causal_path", {"source_id": rain, "target_id": asthma})
    assert path["found"] and path["path"] == [rain, mould, asthma] and not path["cycle_detected"]
    assert not (await call(client, "find_causal_path", {"source_id": asthma, "target_id": rain}))["found"]
    assert not (await call(client, "find_causal_path", {"source_id": rain, "target_id": lone}))["found"]
    # a restatement of rain → flooding (effect first this time) matches rain both ways: no edge between them,
    # but its effect is mould's cause
    same = await store(client, "Flooded basements are caused by heavy rain.")
    causal = app.services.storage.store.graph_read(lambda g: [e for e in g.edges(same) if e.type == "Causal"])
    assert {(e.source, e.target) for e in causal} == {(same, mould)}


HIERARCHY = {
    "animal": "Animals such as dogs, cats and horses are living creatures.",
    "dog": "Dogs are loyal pets that bark.",
    "puppy": "A puppy is a young dog.",
    "cat": "Cats are independent pets that purr.",
    "kitten": "A kitten is a young cat.",
    "horse": "Horses are large animals people ride.",
}


async def test_entailment_query(client):
    ids = {name: await store(client, text) for name, text in HIERARCHY.items()}
    deploy = await store(client, DEPLOY)
    names = {v: k for k, v in ids.items()}

    async def query(name, **extra):
        return await call(client, "entailment_query", {"node_id": ids[name], **extra})

    puppy = await query("puppy", direction="ancestors")  # TC-NAV-006
    assert "descendants" not in puppy
    up = [names.get(a["id"], a["id"]) for a in puppy["ancestors"]]
    assert "animal" in up and "puppy" not in up and deploy not in up
    animal = await query("animal")
    down = [names.get(d["id"], d["id"]) for d in animal["descendants"]]
    assert {"dog", "puppy", "cat", "kitten", "horse"} <= set(down) and deploy not in down
    assert animal["ancestors"] == [] and animal["node"]["half_aperture_deg"] > 60
    assert all(0 <= d["confidence"] <= 1 for d in animal["descendants"])
    # the general memory sits nearest the origin, so no specific one contains it
    for name in ("dog", "puppy", "kitten"):
        assert ids["animal"] not in [d["id"] for d in (await query(name, direction="descendants"))["descendants"]]
    assert len((await query("animal", max_results=2))["descendants"]) == 2
    assert (await query("animal", min_confidence=1.0))["descendants"] == []
    assert (await query("animal", embedding_space="E5"))["embedding_space"] == "E5"
    missing = await error(client, "entailment_query", {"node_id": "0" * 32})
    assert missing.code == -32012
    assert (await error(client, "entailment_query", {"node_id": ids["dog"], "direction": "up"})).code == -32602


async def test_a_store_opened_after_the_window_purges_what_expired(client, app, settings):
    """A server that never curates again still lets go: opening the store purges expired tombstones."""
    from contextgraph.app import build_app

    a = await store(client, DEPLOY)
    await call(client, "forget_concept", {"node_id": a, "reason": "obsolete", "rationale": WHY})
    st = app.services.storage.store
    doc, blob = st.graph_read(lambda g: g.get_tombstone(a))
    st.graph_write(lambda g: g.put_tombstone(a, {**doc, "deleted_at": doc["deleted_at"] - 31 * 86400}, blob))
    app.close()
    again = build_app(settings)
    try:
        again.services.storage.open()
        assert again.services.storage.store.graph_read(lambda g: g.get_tombstone(a)) is None
    finally:
        again.close()
