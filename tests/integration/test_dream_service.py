"""The dream engine on a real LMDB store with the real embedders: NREM strengthens edges, REM links blind spots,
traversed paths become shortcuts, a memory operation or abort_dream wakes it, and get_neighborhood shows what it
made. Phases are seconds long here (the constitution's 3 + 2 minutes are for serving)."""

import asyncio
import dataclasses
import itertools

import pytest

from contextgraph.errors import DreamError
from contextgraph.services.memory.memory_payloads import NewMemory
from contextgraph.storage.base import Edge

pytestmark = pytest.mark.anyio
WHY = "checking what a dream does to a small store"
TEXTS = {
    "deploy": "The deploy failed because the database migration timed out after thirty seconds.",
    "cat": "The cat sleeps on the warm windowsill every afternoon.",
    "migration": "Database migrations time out when the lock table grows large.",
    "lock": "A large lock table makes every deploy slow.",
    "kuramoto": "Kuramoto oscillators synchronise once the coupling exceeds a critical value.",
    "garden": "Tomatoes in the garden need water twice a day in July.",
}  # the cat and the garden are not stored one after the other (no Temporal edge between them)


async def store_all(app):
    ids = {}
    for name, text in TEXTS.items():
        ids[name] = (await app.services.memory.store(NewMemory(text, WHY, session="dream-test"))).record.id
    await app.services.memory.settled()  # the engine hears of each store after its answer (D24)
    return ids


def edges_of(app):
    def read(g):
        out = {}
        for memory_id in [r.id for r in g.recent(100, None, None)]:
            for e in g.edges(memory_id):
                out[(e.source, e.target, e.type)] = e
        return out

    return app.services.storage.store.graph_read(read)


def link(app, *edges):
    app.services.storage.store.graph_write(lambda g: [g.put_edge(e) for e in edges])


async def wait_awake(dream, seconds=60.0):
    for _ in range(int(seconds / 0.05)):
        if not dream.dreaming:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the dream is still {dream.state}")


def short_phases(dream, nrem=1.0, rem=2.0):
    dream.nrem_seconds, dream.rem_seconds = nrem, rem
    dream.walks["walks_per_minute"] = 1200  # a walk every 50 ms
    dream.nrem["cues_per_minute"] = 960  # a batch of 8 every 0.5 s


async def test_a_dream_strengthens_edges_links_blind_spots_and_the_neighbourhood_shows_them(app, call):
    ids = await store_all(app)
    # two unrelated memories (the cat, the garden) that share a causal neighbour: a blind spot
    link(app, Edge(ids["kuramoto"], ids["cat"], "Causal", weight=0.6),
         Edge(ids["kuramoto"], ids["garden"], "Causal", weight=0.6))
    before = edges_of(app)
    dream = app.services.dream
    short_phases(dream)
    started = await dream.trigger("full", force=True)
    assert started["started"] and started["state"] == "NREM"
    await wait_awake(dream)
    report = dream.reports[-1]
    assert report["phases_run"] == ["NREM", "REM"] and not report["aborted"] and report["transactions"] >= 2
    after = edges_of(app)
    stronger = [k for k, e in after.items() if k in before and e.weight > before[k].weight]
    assert report["edges_strengthened"] > 0 and stronger
    made = [e for e in after.values() if e.provenance == "dream"]
    pair = {ids["cat"], ids["garden"]}
    assert any({e.source, e.target} == pair for e in made), report
    for e in made:  # SPEC §10: new edges weight 0.3, confidence 0.5
        assert (e.weight, e.confidence, e.type) == (0.3, 0.5, "Relational")
    neighbours = (await call("get_neighborhood", {"node_id": ids["cat"], "min_weight": 0})).payload["neighbors"]
    dreamt = [n for n in neighbours if n["id"] == ids["garden"]]
    assert dreamt and dreamt[0]["provenance"] == "dream" and dreamt[0]["weight"] == 0.3
    strengthened = after[stronger[0]]
    seen_from = strengthened.source
    view = (await call("get_neighborhood", {"node_id": seen_from, "min_weight": 0})).payload["neighbors"]
    assert any(n["id"] == strengthened.other(seen_from) and n["weight"] == strengthened.weight for n in view)
    status = (await call("get_dream_status")).payload
    assert status["state"] == "Awake" and status["last_report"]["blind_spot_edges_count"] >= 1


async def test_abort_mid_phase_keeps_what_was_committed(app, call):
    await store_all(app)
    before = edges_of(app)
    dream = app.services.dream
    short_phases(dream, nrem=60.0)
    await dream.trigger("nrem", force=True)
    for _ in range(200):  # until the first batch is committed
        if dream.current and dream.current["transactions"]:
            break
        await asyncio.sleep(0.02)
    assert (await call("get_dream_status")).payload["state"] == "NREM"  # a status read does not wake it
    assert dream.dreaming
    out = (await call("abort_dream")).payload
    assert out["aborted"] and out["state"] == "Awake" and out["wake_latency_ms"] >= 0
    partial = out["partial_report"]
    assert partial["aborted"] and partial["woken_by"] == "abort_dream" and partial["transactions"] >= 1
    after = edges_of(app)
    changed = [k for k in before if after[k].weight != before[k].weight]
    assert partial["edges_strengthened"] + partial["edges_weakened"] >= 1 and changed  # the committed batches stay
    assert app.services.storage.store.check() == []  # no half edge
    assert (await call("abort_dream")).payload["aborted"] is False


async def test_a_memory_operation_wakes_the_dream(app, call):
    await store_all(app)
    dream = app.services.dream
    short_phases(dream, nrem=60.0)
    await dream.trigger("nrem", force=True)
    await asyncio.sleep(0.2)
    await call("search_graph", {"query": "why did the deploy fail"})
    await wait_awake(dream, 5.0)
    report = dream.reports[-1]
    assert report["aborted"] and report["woken_by"] == "search_graph call" and "wake_latency_ms" in report


async def test_trigger_refuses_while_busy_or_already_dreaming(app, call):
    for text in list(TEXTS.values())[:3]:  # three memory operations just now: activity is above 0.15
        await call("store_memory", {"content": text, "rationale": WHY})
    dream = app.services.dream
    assert app.services.activity.level() > 0.15 and app.services.activity.in_flight == 0

    with pytest.raises(DreamError) as busy:
        await dream.trigger("full", force=False)
    assert "force=true" in busy.value.message
    short_phases(dream, nrem=30.0)
    await dream.trigger("nrem", force=True)
    with pytest.raises(DreamError):
        await dream.trigger("rem", force=True)
    await dream.abort()


async def test_traversed_paths_become_shortcut_edges(app, call):
    ids = await store_all(app)
    chain = [ids["deploy"], ids["migration"], ids["lock"], ids["kuramoto"]]
    weights = [0.9, 0.8, 0.7]
    link(app, *[Edge(a, b, "Causal", weight=w, confidence=1.0)
                for (a, b), w in zip(itertools.pairwise(chain), weights, strict=True)])
    for _ in range(5):
        found = (await call("find_causal_path", {"source_id": chain[0], "target_id": chain[-1]})).payload
        assert found["path"] == chain
    listed = (await call("get_amortized_shortcuts", {})).payload
    item = next(s for s in listed["shortcuts"] if s["path"] == chain)
    assert item["traversals"] == 5 and item["weight"] == pytest.approx(0.9 * 0.8 * 0.7)
    assert item["confidence"] == pytest.approx(0.7) and not item["applied"]
    dream = app.services.dream
    short_phases(dream, rem=0.5)
    await dream.trigger("rem", force=True)
    await wait_awake(dream)
    edge = app.services.storage.store.graph_read(lambda g: g.get_edge(chain[0], chain[-1], "Causal"))
    assert edge is not None and edge.amortized_shortcut and edge.provenance == "dream_shortcut"
    assert edge.weight == pytest.approx(0.9 * 0.8 * 0.7) and edge.confidence >= 0.7
    again = (await call("get_amortized_shortcuts", {})).payload
    assert next(s for s in again["shortcuts"] if s["path"] == chain)["applied"]


async def test_neuromodulators_and_dream_reports_survive_a_restart(app, make_settings, settings):
    from contextgraph.app import build_app

    await store_all(app)
    app.services.neuromodulation.adjust("serotonin", 0.3)
    dream = app.services.dream
    short_phases(dream, nrem=0.3)
    await dream.trigger("nrem", force=True)
    await wait_awake(dream)
    level = app.services.neuromodulation.level("serotonin")
    report_id = dream.reports[-1]["dream_id"]
    app.close()
    again = build_app(settings)
    try:
        again.services.storage.open()
        assert again.services.neuromodulation.level("serotonin") == pytest.approx(level, abs=1e-3)
        assert again.services.dream.reports[-1]["dream_id"] == report_id
    finally:
        again.close()


async def test_events_move_the_modulators(app, call):
    neuro = app.services.neuromodulation
    await store_all(app)
    history = app.services.steering.history
    assert len(history) == len(TEXTS)  # every store was judged, and each reward moved dopamine
    assert sum(1 for c in neuro.history if c["source"].startswith("steering reward")) == len(TEXTS)
    before = neuro.level("noradrenaline")
    out = (await call("search_graph", {"query": "quantum chromodynamics of gluon plasma", "min_similarity": 0.99}))
    await app.services.memory.settled()  # the empty search is heard after its answer (D24)
    assert out.payload["count"] == 0 and neuro.level("noradrenaline") > before  # an empty search
    ids = [r.id for r in app.services.storage.store.graph_read(lambda g: g.recent(3, None, None))]
    dopamine = neuro.level("dopamine")
    result = app.services.workspace.broadcast(ids[0], 0.9, 0.8, 0.8, force=True)
    enter = [e for e in result["events"] if e["kind"] == "enter"]
    assert enter and "applied" in enter[0]["dopamine"]
    assert neuro.level("dopamine") == pytest.approx(dopamine + 0.2, abs=1e-3)


def test_edge_provenance_defaults_for_old_edges():
    assert Edge("a", "b", "Semantic").provenance == ""
    assert dataclasses.asdict(Edge("a", "b", "Semantic", provenance="dream"))["provenance"] == "dream"


async def test_triggers_start_a_dream_only_when_due(app):
    import time

    await store_all(app)
    dream, activity, cognition = app.services.dream, app.services.activity, app.services.cognition
    short_phases(dream, nrem=0.2, rem=0.2)
    dream.pending_requests.clear()  # six quick stores on a new store may already have asked for one
    cognition.high_entropy_since = time.monotonic() - 301.0  # entropy above 0.7 for 5 minutes
    assert dream.due() is None  # but the store's log grew just now (the stores): not idle
    dream.auto_settings["idle_seconds"] = 0.0  # as if it had stood still long enough
    cognition.high_entropy_since = None
    assert dream.due() is None  # no trigger condition holds
    cognition.high_entropy_since = time.monotonic() - 301.0
    assert dream.due() is not None and "entropy" in dream.due()
    with activity.running("get_dream_status"):  # a request in flight: never
        assert dream.due() is None
    activity.bulk_loads += 1  # a bulk load: never
    assert dream.due() is None
    activity.bulk_loads -= 1
    cognition.high_entropy_since = None
    cognition.request_listeners[-1]({"kind": "dream", "reason": "identity continuity 0.42 below 0.5"})
    assert "identity continuity" in dream.due()
    # the watcher acts on it by itself (auto on, as `serve` has it)
    dream.auto, dream.auto_settings["check_seconds"] = True, 0.05
    cognition.high_entropy_since = time.monotonic() - 301.0
    dream.ensure_monitor()
    for _ in range(100):
        if dream.reports:
            break
        await asyncio.sleep(0.05)
    await dream.until_awake()
    assert dream.reports and "entropy" in dream.reports[-1]["reason"]
    # right after a dream, with nothing new to consolidate and within min_interval: not again
    assert dream.due() is None
    await dream.close()


async def test_idle_trigger_needs_idleness_and_low_activity(app):
    await store_all(app)
    dream, activity = app.services.dream, app.services.activity
    dream.pending_requests.clear()
    activity.operation("store_memory")
    assert dream.due() is None  # just active
    dream.auto_settings["idle_seconds"] = 0.0
    assert activity.level() < 0.15 and "idle" in (dream.due() or "")


async def test_nrem_drains_the_workspace_replay_queue(app, call):
    ids = await store_all(app)
    workspace = app.services.workspace
    workspace.replay_queue.append({"memory_id": ids["deploy"], "r": 0.65, "at": 0.0})  # an exit event queued it
    dream = app.services.dream
    short_phases(dream, nrem=0.3)
    await dream.trigger("nrem", force=True)
    await dream.until_awake()
    assert dream.reports[-1]["replay_queue_drained"] == 1 and not workspace.replay_queue
    status = (await call("get_workspace_status")).payload
    assert status["replay_queue_length"] == 0


async def test_the_pulse_suggests_a_dream_only_when_one_would_do_something(app):
    import time

    await store_all(app)
    dream, cognition = app.services.dream, app.services.cognition
    short_phases(dream, nrem=0.5, rem=0.5)
    cognition.high_entropy_since = time.monotonic() - 301.0  # entropy above its threshold for five minutes
    assert dream.idle_reason() is None and cognition.pulse()["suggested_action"] == "trigger_dream"
    await dream.trigger("full", force=True)
    assert dream.idle_reason() == "a dream is running"
    assert cognition.pulse()["suggested_action"] != "trigger_dream"
    await wait_awake(dream)
    # awake again, but nothing was stored since the dream began: another would find nothing new
    assert dream.idle_reason() == "nothing stored since the last dream"
    assert cognition.pulse()["suggested_action"] != "trigger_dream"
    await app.services.memory.store(NewMemory("Raising the lock timeout let the migration finish.", WHY,
                                              session="dream-test"))
    await app.services.memory.settled()
    cognition.high_entropy_since = time.monotonic() - 301.0
    assert dream.idle_reason() is None and cognition.pulse()["suggested_action"] == "trigger_dream"
    await dream.close()
