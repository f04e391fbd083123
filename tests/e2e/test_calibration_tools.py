"""ATC and Meta-UTL tools end to end through the `mcp` SDK client, on real LMDB and the real ONNX transformer:
outcomes recorded from the real call paths, recalibration, bounds refused with the registry's codes, state that
survives a restart (issue 17)."""

from __future__ import annotations

import numpy as np
import pytest
from mcp import Client
from tool_errors import refusal

from contextgraph.app import build_app
from contextgraph.calibration.maps import calibrated
from contextgraph.server import build_server
from contextgraph.utl.learning import lifecycle

pytestmark = pytest.mark.anyio
WHY = "calibrating the thresholds from use"
NAMES = {"theta_warn", "theta_dup", "theta_kur", "johari"}
TEXTS = [
    "The deploy failed because the database migration timed out after 30 seconds.",
    "The deploy failed since the database migration hit its 30 second timeout.",
    "Kuramoto oscillators synchronise once the coupling exceeds a critical value.",
    "Use pytest fixtures to share a temporary data directory between tests.",
]


async def call(client, name, args=None):
    return (await client.call_tool(name, args or {})).structured_content


async def store(client, content):
    return (await call(client, "store_memory", {"content": content, "rationale": WHY}))["id"]


def synthetic(app, name: str, domain: str, n: int, theta_star: float, t_star: float) -> None:
    """Pairs with a known miscalibration: P(y | s) = sigmoid((logit s − logit θ*)/T* + logit q)."""
    service = app.services.thresholds
    q = service.spec(name).target
    rng = np.random.default_rng(5)
    scores = rng.uniform(0.3, 0.99, n)
    outcomes = rng.random(n) < calibrated(scores, theta_star, t_star, q)
    for s, y in zip(scores, outcomes):
        service.outcomes.add(name, domain, float(s), float(y), service.clock())


async def test_threshold_status_lists_every_threshold_with_bounds(client):
    out = await call(client, "get_threshold_status", {"domain": "Code", "embedder_id": 1})
    assert set(out["thresholds"]) == NAMES
    dup = out["thresholds"]["theta_dup"]
    assert (dup["value"], dup["min"], dup["max"]) == (0.9, 0.8, 0.98)
    assert out["domain"] == "Code" and "theta_dup" in out["embedder"]["thresholds_scoring_it"]
    bad = await refusal(client, "get_threshold_status", {"domain": "Astrology"})
    assert bad.code == -32602 and "General" in bad.message
    assert (await refusal(client, "get_threshold_status", {"embedder_id": 14})).code == -32602
    assert (await refusal(client, "get_calibration_metrics", {"timeframe": "2h"})).code == -32602


async def test_the_agents_judgements_through_the_real_tools_are_the_outcomes(client, app):
    """hydrate_citation's tag (an id prefix) is a 1, update_synergy_matrix's not_relevant a 0, and a result merely
    looked at (its neighbourhood) or found again by another search is no outcome."""
    for text in TEXTS:
        await store(client, text)
    found = (await call(client, "search_graph", {"query": "why did the deploy fail", "top_k": 4}))["results"]
    first, second, third = (r["id"] for r in found[:3])
    await call(client, "search_graph", {"query": "database migration timeout", "top_k": 4})
    await call(client, "get_neighborhood", {"node_id": third})
    thresholds = app.services.thresholds
    assert thresholds.outcomes.count("theta_warn", "General") == 0
    await call(client, "hydrate_citation", {"citation_tag": f"[node_{first[:8]}]"})
    await call(client, "update_synergy_matrix", {"query_vector_id": first, "result_vector_id": second,
                                                 "feedback": "not_relevant"})
    assert sorted(thresholds.outcomes.pairs("theta_warn", "General")[1].tolist()) == [0.0, 1.0]


async def test_outcomes_come_from_searches_uses_and_merges(client, app):
    ids = [await store(client, t) for t in TEXTS]
    found = await call(client, "search_graph", {"query": "why did the deploy fail", "top_k": 4})
    result_ids = [r["id"] for r in found["results"]]
    assert (await call(client, "get_threshold_status"))["pending_outcomes"] >= len(result_ids)
    # using a found memory resolves its predictions as 1
    await call(client, "annotate_node", {"node_id": result_ids[0], "annotations": {"tags": ["used"]}})
    metrics = await call(client, "get_calibration_metrics", {"timeframe": "1h"})
    for name in ("theta_warn",):
        assert metrics["metrics"][name]["General"]["pairs"] >= 1
    scores, outcomes = app.services.thresholds.outcomes.pairs("theta_warn", "General")
    assert 1.0 in outcomes.tolist()
    # a merge confirms the pair as duplicates (θ_dup), scored by the sources' E1 cosine
    await call(client, "merge_concepts", {"source_node_ids": ids[:2], "target_name": "deploy failure",
                                          "rationale": WHY})
    scores, outcomes = app.services.thresholds.outcomes.pairs("theta_dup", "General")
    assert outcomes.tolist() == [1.0] and 0.7 <= scores[0] <= 1.0
    status = await call(client, "get_threshold_status")
    assert status["thresholds"]["theta_dup"]["observations"] == 1
    assert status["recent_changes"][0]["threshold"] in NAMES


async def test_recalibration_levels_lower_ece_and_survive_a_restart(client, app, settings):
    refused = await refusal(client, "trigger_recalibration", {"level": 2})
    assert refused.code == -32018 and "needs at least 20" in refused.message
    synthetic(app, "theta_kur", "Research", 400, theta_star=0.87, t_star=0.35)
    before_kur = app.services.workspace.enter_threshold
    out = await call(client, "trigger_recalibration", {"level": 2, "domain": "Research"})
    kur = out["thresholds"]["theta_kur"]
    assert kur["after"]["ece"] < kur["before"]["ece"] and kur["after"]["pairs"] == 400
    assert set(out["skipped"]) == NAMES - {"theta_kur"}
    out = await call(client, "trigger_recalibration", {"level": 4, "domain": "Research", "threshold": "theta_kur"})
    kur = out["thresholds"]["theta_kur"]
    assert abs(kur["after"]["theta"] - 0.87) < abs(kur["before"]["theta"] - 0.87)
    assert 0.65 <= kur["after"]["theta"] <= 0.95
    # the Research domain moved; the engine's workspace follows the General value, which did not
    assert app.services.workspace.enter_threshold == before_kur == 0.8
    synthetic(app, "theta_kur", "General", 200, theta_star=0.9, t_star=0.3)
    await call(client, "trigger_recalibration", {"level": 3, "threshold": "theta_kur"})
    general = app.services.thresholds.value("theta_kur")
    assert general != 0.8 and app.services.workspace.enter_threshold == general
    assert app.services.workspace.exit_threshold == pytest.approx(general - 0.1)
    app.close()
    again = build_app(settings)
    try:
        async with Client(build_server(again), mode="legacy") as c2:
            status = await call(c2, "get_threshold_status", {"domain": "Research"})
            assert status["thresholds"]["theta_kur"]["value"] == kur["after"]["theta"]
            assert status["thresholds"]["theta_kur"]["pairs"] == 400
            assert again.services.workspace.enter_threshold == general
    finally:
        again.close()


async def test_out_of_range_thresholds_and_levels_are_refused_with_bounds(client):
    level = await refusal(client, "trigger_recalibration", {"level": 5})
    assert level.code == -32602 and "4" in level.message
    start = await refusal(client, "trigger_recalibration", {"level": 1, "threshold": "theta_dup", "start": 0.5})
    assert start.code == -32018 and start.data["min"] == 0.8 and start.data["max"] == 0.98
    alone = await refusal(client, "trigger_recalibration", {"level": 1, "start": 0.85})
    assert alone.code == -32602 and alone.data["field"] == "threshold"
    name = await refusal(client, "trigger_recalibration", {"level": 1, "threshold": "theta_x"})
    assert name.code == -32602 and "theta_kur" in name.message
    lam = await refusal(client, "trigger_lambda_recalibration", {"lambda_s": 0.95})
    assert lam.code == -32602 and "0.9" in lam.message
    assert (await refusal(client, "get_meta_learning_log", {"limit": 0})).code == -32602
    assert (await refusal(client, "get_meta_learning_log", {"kind": "other"})).code == -32602


async def test_meta_learning_follows_every_store(client, app):
    none = await refusal(client, "trigger_lambda_recalibration")
    assert none.code == -32003
    for text in TEXTS:
        await store(client, text)
    status = await call(client, "get_meta_learning_status")
    assert status["operations"] == len(TEXTS)
    assert status["lambda_s"] + status["lambda_c"] == pytest.approx(1.0)
    assert status["window"]["filled"] == len(TEXTS) and 0.0 <= status["accuracy"] <= 1.0
    assert status["alpha_source"] in ("acetylcholine", "constant (acetylcholine not available)")
    out = await call(client, "trigger_lambda_recalibration", {"lambda_s": 0.4})
    assert out["operations_used"] == len(TEXTS)
    assert out["objective_after"] <= out["objective_before"]
    assert 0.1 <= out["lambda_after"]["lambda_s"] <= 0.9
    log = await call(client, "get_meta_learning_log", {"limit": 1})
    assert log["total"] >= 1 and len(log["entries"]) == 1 and log["entries"][0]["kind"] == "manual"
    # the engine scores the next memory with the learned λ
    lam = (await call(client, "get_meta_learning_status"))["lambda_s"]
    prior = lifecycle(len(TEXTS) - 1, app.constitution["utl"]["lifecycle"])  # a merge-free store: 4 memories
    assert app.services.storage.delta_sc.lambda_policy(prior).lambda_s == pytest.approx(lam, abs=1e-6)
