"""The cognitive engine over a real store (LMDB and indexes in a temp dir, the real embedding pipeline): what
memory operations do to the engine's state, and that no status tool answers with a canned value."""

import json

import pytest

pytestmark = pytest.mark.anyio
RATIONALE = "worth keeping for the project"
TOPIC = [
    "The deploy failed because the database migration timed out after 30 seconds.",
    "Database migrations that run longer than the deploy timeout make the release fail.",
    "We now run long database migrations before the deploy so the release does not time out.",
    "The migration timeout during deploys is 30 seconds; raise it for big tables.",
    "Big table migrations lock writes, so the deploy waits and then times out.",
    "A failed migration leaves the deploy half done; roll back the schema first.",
]
NOVEL = [
    "Sourdough needs a starter fed with flour and water every day.",
    "The violin's E string snapped during the rehearsal of the second movement.",
    "Tide pools at low water hold anemones, hermit crabs and small sculpins.",
]


async def inject(call, content):
    return (await call("inject_context", {"content": content, "rationale": RATIONALE, "related_k": 0})).payload


async def test_a_novel_memory_raises_entropy(call, app):
    for text in TOPIC:
        await inject(call, text)
    await app.services.memory.settled()
    before = app.services.cognition.pulse()["entropy"]
    utl = (await inject(call, NOVEL[0]))["utl"]
    assert utl["entropy"] > before  # this operation was more surprising than the running average
    await app.services.memory.settled()  # the engine hears of it after the answer (D24)
    assert app.services.cognition.pulse()["entropy"] > before
    assert utl["delta_s"]["semantic"] > 0.5


async def test_near_duplicates_raise_coherence(call, app):
    for text in TOPIC[:3] + NOVEL:
        await inject(call, text)
    await app.services.memory.settled()  # the engine hears of each after its answer (D24)
    before = app.services.cognition.pulse()["coherence"]
    for text in TOPIC[:3]:  # each stored again, nearly verbatim
        await inject(call, text.replace("The ", "the ", 1))
    await app.services.memory.settled()
    after = app.services.cognition.pulse()["coherence"]
    assert after > before


async def test_full_utl_in_inject_context(call):
    for text in TOPIC:
        await inject(call, text)
    utl = (await inject(call, TOPIC[0] + " We raised it to 120 seconds."))["utl"]
    assert set(utl["delta_s"]) == set(utl["delta_c"]) == set(utl["methods"])
    assert len(utl["methods"]) == 13
    components = utl["components"]
    assert 0.0 <= components["cluster_fit"] <= 1.0 and components["connectivity"] > 0.0
    assert utl["johariQuadrant"] in {"Open", "Blind", "Hidden", "Unknown"}
    # below the Gaussian fit's minimum sample the E1 method falls back to kNN, and says so
    assert utl["methods"]["semantic"].startswith("knn") and "Gaussian fit needs" in utl["methods"]["semantic"]


# get_kuramoto_sync moves with the clock alone; that an operation moves it is tested with a frozen clock in
# tests/unit/test_cognition_engine.py and test_kuramoto.py (nudge).
STATUS_TOOLS = [
    ("utl_status", {}),
    ("get_memetic_status", {}),
    ("get_consciousness_state", {}),
    ("get_workspace_status", {}),
    ("get_ego_state", {}),
]


def _without_clock(payload):
    """The payload minus what moves with the clock alone (timers, lazily integrated phases)."""
    drop = {"_cognitive_pulse", "empty_for_seconds", "seconds_in_workspace", "broadcast_remaining_ms",
            "is_broadcasting", "now"}
    if isinstance(payload, dict):
        return {k: _without_clock(v) for k, v in payload.items() if k not in drop}
    if isinstance(payload, list):
        return [_without_clock(v) for v in payload]
    return payload


@pytest.mark.parametrize("name,arguments", STATUS_TOOLS)
async def test_every_status_tool_follows_the_store(call, name, arguments):
    for text in TOPIC[:2]:
        await inject(call, text)
    before = _without_clock((await call(name, arguments)).payload)
    await call("inject_context", {"content": NOVEL[1], "rationale": RATIONALE, "related_k": 2})
    after = _without_clock((await call(name, arguments)).payload)
    assert json.dumps(after, sort_keys=True) != json.dumps(before, sort_keys=True)


USES = ["ContextGraph uses LMDB for storage.", "The indexer uses hnswlib for vectors.",
        "The web app uses Postgres for accounts.", "The CLI uses argparse for flags."]


async def test_e11_scores_relation_triples_by_transe_once_the_relation_is_known(call, app):
    first = (await inject(call, USES[0]))["utl"]["methods"]["entity"]
    assert first.startswith("empty store")
    for text in USES[1:3]:
        await inject(call, text)
    utl = (await inject(call, USES[3]))["utl"]
    assert utl["methods"]["entity"].startswith("transe") and "uses (3 triples)" in utl["methods"]["entity"]
    no_triple = (await inject(call, NOVEL[0]))["utl"]["methods"]["entity"]
    assert no_triple.startswith("knn") and "no relation triple" in no_triple
    store = app.services.storage.store
    assert sorted(t[3] for t in store.live_triples()) == ["LMDB", "Postgres", "argparse", "hnswlib"]
    # a forgotten memory's triples stop counting, and come back with it
    memory_id = store.live_triples()[0][0]
    translations = app.services.storage.delta_sc.translations
    assert translations.get(store).counts["uses"] == 4
    forgotten = (await call("forget_concept", {"node_id": memory_id, "reason": "obsolete",
                                             "rationale": RATIONALE})).payload
    assert len(store.live_triples()) == 3
    assert translations.get(store).counts["uses"] == 3  # the fitted model forgets with it
    await call("restore_from_hash", {"reversal_hash": forgotten["reversal_hash"]})
    assert len(store.live_triples()) == 4
    # a merge's text states its own triples; its sources' stop counting while they are merged
    a = (await inject(call, "The billing CLI uses argparse for its flags."))["id"]
    b = (await inject(call, "The billing CLI uses argparse for flags."))["id"]
    merged = (await call("merge_concepts", {"source_node_ids": [a, b], "target_name": "billing CLI",
                                            "merge_strategy": "keep_highest", "rationale": RATIONALE})).payload
    assert merged["merged"] is True
    owners = {t[0] for t in store.live_triples()}
    assert merged["merged_id"] in owners and not {a, b} & owners
