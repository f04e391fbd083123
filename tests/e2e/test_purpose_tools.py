"""The teleological and autonomous tools (issue 15) end to end through the `mcp` SDK client, on real LMDB, real
indexes and the real ONNX transformer: a store of three themes of different sizes plus noise and planted
near-duplicates, the north star that emerges from it, stage 4, sub-goals, consolidation with undo, drift and its
correction, profiles, synergy, fusion, teleological search, both aliases, and the refusals."""

from __future__ import annotations

import anyio
import pytest
from tool_errors import refusal

pytestmark = pytest.mark.anyio
WHY = "purpose tools end-to-end test"

DEPLOY = [f"The Kubernetes {part} failed {how} because the {cause}." for part, how, cause in [
    ("deployment", "to roll out", "container exceeded its memory limit"),
    ("pod autoscaler", "to scale", "metrics server was unreachable"),
    ("ingress controller", "after the upgrade", "TLS certificate secret was missing"),
    ("readiness probe", "repeatedly", "service answered slowly under load"),
    ("node pool", "during the drain", "pod disruption budget blocked eviction"),
    ("Helm release", "to install", "chart values referenced a missing image tag"),
    ("CronJob", "every night", "persistent volume claim was not bound"),
    ("etcd quorum", "briefly", "leader election timed out on a slow disk"),
    ("service mesh sidecar", "to start", "init container could not fetch its config"),
    ("cluster upgrade", "halfway", "kubelet version skew was too large"),
    ("pod", "with CrashLoopBackOff", "liveness probe hit the wrong port"),
    ("namespace quota", "to admit pods", "resource requests exceeded the limit range"),
    ("image pull", "on every node", "registry credentials had expired"),
    ("StatefulSet", "to reschedule", "volume was attached to the old node"),
]]
COOKING = [f"The {dish} tastes better when you {tip}." for dish, tip in [
    ("sourdough bread", "let the dough rest overnight in the fridge"),
    ("risotto", "add the warm stock one ladle at a time"),
    ("tomato sauce", "simmer it slowly with a pinch of sugar"),
    ("roast chicken", "dry brine the skin a day ahead"),
    ("pizza dough", "bake it on a preheated stone"),
    ("vegetable curry", "toast the spices in oil first"),
    ("homemade pasta", "knead the dough until it is silky"),
    ("lemon tart", "blind bake the pastry case"),
    ("caramel", "stop stirring once the sugar melts"),
    ("braised short ribs", "sear the meat before the slow braise"),
]]
ASTRONOMY = [f"The {body} {fact}." for body, fact in [
    ("Andromeda galaxy", "is visible to the naked eye from a dark site"),
    ("planet Jupiter", "has a storm larger than the Earth"),
    ("Crab nebula", "is the remnant of a supernova seen in 1054"),
    ("moon Europa", "hides a salty ocean under its ice"),
    ("neutron star", "spins hundreds of times per second"),
    ("comet's tail", "always points away from the sun"),
    ("solar corona", "is hotter than the surface of the sun"),
    ("rings of Saturn", "are made of ice and rock"),
    ("red dwarf star", "burns for trillions of years"),
]]
NOISE = ["Remember to call grandma on Sunday.", "The museum is closed on Mondays.",
         "My bicycle chain squeaks in the rain."]
DUPLICATE = "The Kubernetes deployment failed to roll out as the container exceeded its memory limit."


async def call(client, name, args=None):
    result = await client.call_tool(name, args or {})
    assert not result.is_error, result.structured_content
    return result.structured_content


async def store(client, content):
    return (await call(client, "store_memory", {"content": content, "rationale": WHY}))["id"]


async def fill(client) -> dict[str, list[str]]:
    ids: dict[str, list[str]] = {"deploy": [], "cooking": [], "astronomy": [], "noise": []}
    for topic, texts in (("deploy", DEPLOY), ("cooking", COOKING), ("astronomy", ASTRONOMY), ("noise", NOISE)):
        for text in texts:
            ids[topic].append(await store(client, text))
    ids["duplicate"] = [await store(client, DUPLICATE)]
    return ids


async def test_refusals_before_a_north_star(client):
    for text in DEPLOY[:5]:
        await store(client, text)
    small = await refusal(client, "auto_bootstrap_north_star", {})
    assert small.code == -32110 and "at least 20" in small.message and small.data["memory_count"] == 5
    assert (await refusal(client, "get_alignment_drift", {})).code == -32111
    assert (await refusal(client, "trigger_drift_correction", {})).code == -32112
    assert (await refusal(client, "compute_teleological_vector", {"content": "anything"})).code == -32110
    assert (await refusal(client, "search_teleological", {"query_content": "pods"})).code == -32110
    assert (await refusal(client, "discover_goals", {})).code == -32115  # alias, fewer than 10 memories
    status = await call(client, "get_autonomous_status", {})
    assert status["north_star"] is None and status["stage4"]["active"] is False
    assert status["recommendations"][0]["tool"] == "store_memory"
    # bad input: -32602 naming the field, with the bounds
    bad = await refusal(client, "auto_bootstrap_north_star", {"confidence_threshold": 1.5})
    assert bad.code == -32602 and bad.data["field"] == "confidence_threshold" and bad.data["max"] == 1.0
    bad = await refusal(client, "trigger_consolidation", {"strategy": "random"})
    assert bad.code == -32602 and "similarity" in bad.data["allowed"]
    bad = await refusal(client, "get_alignment_drift", {"timeframe": "2h"})
    assert bad.code == -32602 and bad.data["allowed"] == ["1h", "24h", "7d", "30d"]
    bad = await refusal(client, "manage_teleological_profile", {"action": "create", "name": "x",
                                                                "embedder_weights": [0.5] * 12})
    assert bad.code == -32602 and bad.data["field"] == "embedder_weights"
    bad = await refusal(client, "search_teleological", {"query_content": "x", "max_results": 0})
    assert bad.code == -32602 and bad.data["min"] == 1
    # consolidation with no duplicate pair: a dry run that changes nothing (callable with no arguments)
    dry = await call(client, "consolidate_memories", {})
    assert dry["dry_run"] is True and "merges" not in dry


async def test_north_star_stage4_subgoals_and_consolidation(client, app):
    ids = await fill(client)
    before = await call(client, "search_graph", {"query": "how do I bake bread", "include_breakdown": True})
    assert before["stage4"]["active"] is False
    advice = (await call(client, "get_autonomous_status", {}))["recommendations"][0]
    assert advice["tool"] == "auto_bootstrap_north_star" and "never hides a memory" in advice["why"]

    star = await call(client, "auto_bootstrap_north_star", {})
    assert star["bootstrapped"] and star["confidence"] >= 0.7
    # the star lands on the dominant theme: most of its members are deploy memories
    members = set(star["member_ids"])
    assert len(members & set(ids["deploy"] + ids["duplicate"])) >= 0.8 * len(members)
    assert star["size"] >= 12 and any(t in star["terms"] for t in ("kubernetes", "failed", "pod"))
    assert star["member_alignment"] > star["other_alignment"]

    # stage 4 re-ranks: the minor theme's query keeps its memories; the hard cut only when asked for
    on = await call(client, "search_graph", {"query": "how do I bake bread", "include_breakdown": True})
    off = await call(client, "search_graph", {"query": "how do I bake bread", "include_breakdown": True,
                                              "stage4": False})
    cut = await call(client, "search_graph", {"query": "how do I bake bread", "include_breakdown": True,
                                              "stage4": "filter"})
    assert on["stage4"]["active"] and on["stage4"]["mode"] == "rerank" and on["stage4"]["threshold"] == 0.55
    cooking = set(ids["cooking"])
    assert len(cooking & {r["id"] for r in on["results"]}) >= len(cooking & {r["id"] for r in off["results"]})
    assert cut["stage4"]["dropped"] > 0 and set(cut["stage4"]["dropped_ids"]) & cooking
    assert "stage4_note" in cut and "filtered" in cut["stage4_note"]  # the default answer says what was cut
    assert off["stage4"]["active"] is False and "stage4=false" in off["stage4"]["reason"]
    assert [r["id"] for r in off["results"]] == [r["id"] for r in before["results"]]  # opting out: as before
    deploy_query = await call(client, "search_graph", {"query": "why did the kubernetes pods fail",
                                                       "include_breakdown": True})
    found = [r["id"] for r in deploy_query["results"]]
    assert found and set(found) <= set(ids["deploy"] + ids["duplicate"])  # on-theme results kept

    # purpose vectors are stored with each memory (recomputed after the star) and feed the ego
    record = app.services.storage.store.get(ids["deploy"][0])
    await _wait_recompute(app)
    record = app.services.storage.store.get(ids["deploy"][0])
    assert record.extra["purpose"]["star"] == star["star_id"] and len(record.extra["purpose"]["pv"]) == 13
    new_id = await store(client, "The Kubernetes job failed because its service account lacked permissions.")
    assert app.services.storage.store.get(new_id).extra["purpose"]["alignment"] > 0.55
    ego = await call(client, "get_ego_state", {})
    assert ego["purpose_source"] == "north_star"
    consciousness = await call(client, "get_consciousness_state", {})
    assert consciousness["purpose_source"] == "north_star" and 0.0 < consciousness["D"] <= 1.0
    memetic = await call(client, "get_memetic_status", {})
    assert "S4 (alignment to north star" in memetic["layers"]["reasoning"]["retrieval_stages"]

    # sub-goals recover the themes, each labelled and listing all its members (alias too)
    goals = await call(client, "discover_sub_goals", {"min_confidence": 0.0, "max_goals": 10})
    assert goals["count"] >= 3
    by_size = goals["sub_goals"]
    best = {topic: max(len(set(g["member_ids"]) & set(ids[topic])) / len(ids[topic]) for g in by_size)
            for topic in ("deploy", "cooking", "astronomy")}
    assert all(v >= 0.8 for v in best.values()), best
    assert all(g["label"] and g["size"] == len(g["member_ids"]) and 0 < g["coherence"] <= 1 for g in by_size)
    alias = await call(client, "discover_goals", {"min_confidence": 0.0, "max_goals": 10})
    assert [g["id"] for g in alias["sub_goals"]] == [g["id"] for g in by_size]
    within = await call(client, "discover_sub_goals", {"parent_goal_id": by_size[0]["id"], "min_confidence": 0.0})
    assert set().union(*(g["member_ids"] for g in within["sub_goals"])) <= set(by_size[0]["member_ids"])
    unknown = await refusal(client, "discover_sub_goals", {"parent_goal_id": "goal-nope"})
    assert unknown.code == -32602 and unknown.data["field"] == "parent_goal_id"

    # consolidation: the dry run lists the planted duplicate and changes nothing; execute merges it; undo
    count = app.services.storage.store.count()
    dry = await call(client, "trigger_consolidation", {})
    planted = {ids["deploy"][0], ids["duplicate"][0]}
    assert dry["dry_run"] and any(set(p["ids"]) == planted for p in dry["pairs"])
    assert app.services.storage.store.count() == count
    done = await call(client, "consolidate_memories", {"execute": True, "max_merges": 1, "min_similarity": 0.9})
    (merge,) = done["merges"]
    assert merge["merged"] and set(merge["ids"]) == planted and app.services.storage.store.count() == count - 1
    events = [e["event"] for e in (await call(client, "get_node_lineage", {"node_id": ids["duplicate"][0]}))["events"]]
    assert "merged_into" in events
    undone = await call(client, "restore_from_hash", {"reversal_hash": merge["reversal_hash"]})
    assert set(undone["restored"]) == planted and app.services.storage.store.count() == count

    # pruning candidates: the duplicate is redundant; a fresh memory off the star (the noise, the minor theme) is
    # never a candidate for that alone; nothing changes
    prune = await call(client, "get_pruning_candidates", {"limit": 100, "min_alignment": 0.4})
    reasons = {c["id"]: {r["reason"] for r in c["reasons"]} for c in prune["candidates"]}
    assert any("redundant" in reasons.get(i, set()) for i in planted)
    assert not set(reasons) & set(ids["noise"] + ids["cooking"])
    assert all(r & {"stale", "redundant", "unused"} for r in reasons.values())
    assert app.services.storage.store.count() == count

    status = await call(client, "get_autonomous_status", {"include_metrics": True, "include_history": True})
    assert status["north_star"] == star["star_id"] and status["stage4"]["active"]
    assert status["stage4"]["mode"] == "rerank" and status["stage4"]["goals"] >= 2 and len(star["goals"]) >= 2
    assert status["services"]["consolidation_service"]["last_run"] is not None
    assert {h["operation"] for h in status["history"]} >= {"consolidation", "subgoals", "pruning"}


async def _wait_recompute(app) -> None:
    import anyio

    for _ in range(200):
        if not app.services.purpose.teleology.recompute["running"]:
            return
        await anyio.sleep(0.05)
    raise AssertionError("the purpose-vector recompute did not finish")


async def test_drift_correction_is_dry_run_and_reversible(client, app):
    await fill(client)
    star = await call(client, "auto_bootstrap_north_star", {})
    drift = await call(client, "get_alignment_drift", {"timeframe": "1h", "include_history": True})
    assert drift["star_id"] == star["star_id"] and drift["memories"] >= 30
    assert drift["severity"] in ("none", "low", "medium", "high") and drift["trend"] in ("stable", "improving",
                                                                                             "worsening")
    assert len(drift["windows"]) == 12 and sum(w["count"] for w in drift["windows"]) == drift["memories"]
    assert drift["star_history"][-1]["id"] == star["star_id"]
    # recent work moves to cooking: the drivers are the least aligned recent memories
    for text in COOKING[:6]:
        await store(client, text.replace("tastes better", "turns out best"))
    plan = await call(client, "trigger_drift_correction", {"force": True, "timeframe": "1h"})
    assert plan["dry_run"] and not plan["executed"] and plan["strategy"] in ("reinforce", "rebootstrap")
    assert (await call(client, "get_autonomous_status", {}))["north_star"] == star["star_id"]  # unchanged
    done = await call(client, "trigger_drift_correction", {"force": True, "timeframe": "1h", "execute": True})
    assert done["executed"] and done["star_id"] != star["star_id"] and done["previous_star_id"] == star["star_id"]
    back = await call(client, "trigger_drift_correction", done["undo"]["arguments"])
    assert back["executed"] and back["star_id"] == star["star_id"]
    assert (await call(client, "get_autonomous_status", {}))["north_star"] == star["star_id"]
    bad = await refusal(client, "trigger_drift_correction", {"revert_to": "star-unknown", "execute": True})
    assert bad.code == -32602 and star["star_id"] in bad.data["allowed"]


async def test_teleological_tools(client, app):
    ids = await fill(client)
    # Tucker's third mode is the store model's reference sample; above `sync_below` (8) memories a stale model
    # serves while a background refit runs, and on a busy machine the one serving can still be the 7-memory fit
    # (a core of [3, 4, 7] for ranks [3, 4, 8], seen once in CI). Let the refit that the fill started finish.
    await app.services.storage.settled()
    await anyio.to_thread.run_sync(app.services.storage.delta_sc.wait)
    await call(client, "auto_bootstrap_north_star", {})
    vector = await call(client, "compute_teleological_vector", {
        "content": "The Kubernetes pod was evicted because the node ran out of memory.", "compute_tucker": True,
        "tucker_ranks": [3, 4, 8]})
    assert len(vector["purpose_vector"]) == 13 and len(vector["cross_correlations"]) == 78
    assert set(vector["group_alignments"]) == {"factual", "temporal", "causal", "relational", "qualitative",
                                               "implementation"}
    pv = vector["purpose_vector"]
    assert vector["cross_correlations"]["E1xE5"] == pytest.approx(pv["E1"] * pv["E5"], abs=1e-4)
    tucker = vector["tucker"]
    assert tucker["computed"] and tucker["core_shape"] == [3, 4, 8] and 0.0 <= tucker["relative_error"] < 1.0
    off = await call(client, "compute_teleological_vector", {"content": "The lemon tart needs a crisp pastry."})
    assert vector["alignment"] > off["alignment"]

    created = await call(client, "manage_teleological_profile", {
        "action": "create", "name": "Code work", "task_type": "code_implementation",
        "group_priorities": {"implementation": 1.0, "temporal": 0.0}})
    pid = created["profile"]["id"]
    assert pid == "code-work" and len(created["profile"]["embedder_weights"]) == 13
    dup = await refusal(client, "manage_teleological_profile", {"action": "create", "profile_id": pid, "name": "x"})
    assert dup.code == -32602
    updated = await call(client, "manage_teleological_profile", {"action": "update", "profile_id": pid,
                                                                 "embedder_weights": [1.0] + [0.0] * 12})
    assert updated["profile"]["embedder_weights"][0] == 1.0
    listed = await call(client, "manage_teleological_profile", {"action": "list"})
    assert [p["id"] for p in listed["profiles"]] == [pid]
    zero = await refusal(client, "manage_teleological_profile", {"action": "update", "profile_id": pid,
                                                                 "embedder_weights": [0.0] * 13})
    assert zero.code == -32602 and zero.data["field"] == "embedder_weights"

    fused = await call(client, "fuse_embeddings", {"memory_id": ids["deploy"][0], "fusion_method": "linear",
                                                   "profile_id": pid, "apply_synergy": False})
    assert fused["unused_spaces"] == [f"E{i}" for i in range(2, 14)] and fused["norm"] == pytest.approx(1.0, abs=1e-3)
    assert fused["stored"] and app.services.storage.store.get_document(f"teleology/fused/{ids['deploy'][0]}")
    attention = await call(client, "fuse_embeddings", {"memory_id": ids["deploy"][0], "fusion_method": "attention",
                                                       "store_result": False})
    assert attention["dimension"] > 384 and abs(sum(attention["weights"]) - 1.0) < 1e-3

    feedback = await call(client, "update_synergy_matrix", {
        "query_vector_id": ids["deploy"][0], "result_vector_id": ids["deploy"][1], "feedback": "relevant",
        "learning_rate": 0.5, "update_scope": "all_pairs"})
    assert feedback["pairs_updated"] > 0 and feedback["matrix"][0][0] > 0.5
    assert feedback["matrix"] == [list(row) for row in zip(*feedback["matrix"])]  # symmetric
    missing = await refusal(client, "update_synergy_matrix", {
        "query_vector_id": "0" * 32, "result_vector_id": ids["deploy"][1], "feedback": "relevant"})
    assert missing.code == -32012

    results = await call(client, "search_teleological", {"query_content": "kubernetes pods keep failing",
                                                          "max_results": 10, "min_similarity": 0.0})
    top = [r["id"] for r in results["results"][:5]]
    assert set(top) <= set(ids["deploy"] + ids["duplicate"]) and results["strategy"] == "synergy_weighted"
    assert set(results["results"][0]["breakdown"]) == {"purpose", "correlations", "groups", "semantic"}
    by_id = await call(client, "search_teleological", {"query_vector_id": ids["cooking"][0],
                                                       "strategy": "group_hierarchical", "min_similarity": 0.0})
    assert ids["cooking"][0] not in [r["id"] for r in by_id["results"]]
    both = await refusal(client, "search_teleological", {"query_content": "x", "query_vector_id": ids["cooking"][0]})
    assert both.code == -32602
    deleted = await call(client, "manage_teleological_profile", {"action": "delete", "profile_id": pid})
    assert deleted["deleted"] == pid
    gone = await refusal(client, "manage_teleological_profile", {"action": "read", "profile_id": pid})
    assert gone.code == -32012
