"""Neuromodulation's effects on search_graph, on a real store: none at the baselines (the same bytes as an
unmodulated search), dopamine sharpens the scores without moving the ranking, serotonin changes each space's
contribution, noradrenaline's temperature scales RRF's k. Steering: a near-duplicate and a memory without a
meaningful rationale earn less than a novel, well-justified one."""

import numpy as np
import pytest

from contextgraph.constitution import constitution
from contextgraph.services.engine.neuromodulation import NeuromodulationService
from contextgraph.services.memory.memory_payloads import NewMemory

pytestmark = pytest.mark.anyio
CORPUS = [
    "The deploy failed because the database migration timed out after thirty seconds.",
    "Database migrations time out when the lock table grows large.",
    "Our staging cluster runs PostgreSQL 16 with two read replicas.",
    "The cat sleeps on the warm windowsill every afternoon.",
    "Tomatoes in the garden need water twice a day in July.",
    "Kuramoto oscillators synchronise once the coupling exceeds a critical value.",
    "The release checklist requires a green CI run and a signed tag.",
    "Rollbacks restore the previous container image within two minutes.",
]
QUERY = "why did the deploy fail"


async def filled(app):
    for text in CORPUS:
        await app.services.memory.store(NewMemory(text, "the team's operational knowledge base"))


async def search(app, query=QUERY):
    out = await app.services.memory.search(query, top_k=8, min_similarity=0.0, modality=None, breakdown=True)
    return out.payload()


def fresh(app):
    """A neuromodulation service at its baselines, attached to the memory service; its clock stands still, so
    nothing decays between an adjustment and the search that follows."""
    service = NeuromodulationService(constitution(), clock=lambda: 1_000.0)
    app.services.memory.modulation = service.modulation
    return service


async def test_at_the_baselines_search_is_exactly_the_unmodulated_search(app):
    await filled(app)
    fresh(app)
    modulated = await search(app)
    app.services.memory.modulation = None  # the retrieval as it was before neuromodulation existed
    plain = await search(app)
    assert [(r["id"], r["score"], r["space_contributions"]) for r in modulated["results"]] == \
           [(r["id"], r["score"], r["space_contributions"]) for r in plain["results"]]
    assert modulated["space_weights"] == plain["space_weights"] and modulated["rrf_k"] == plain["rrf_k"]


async def test_dopamine_sharpens_scores_without_moving_the_top_result(app):
    await filled(app)
    service = fresh(app)
    before = await search(app)
    service.adjust("dopamine", 3.0)  # β 2 → 5: the score exponent becomes 2.5
    after = await search(app)
    assert [r["id"] for r in after["results"]] == [r["id"] for r in before["results"]]  # monotone: same order
    assert after["results"][0]["id"] == before["results"][0]["id"] and "deploy" in after["results"][0]["content"]
    b = np.array([r["score"] for r in before["results"]])
    a = np.array([r["score"] for r in after["results"]])
    print("\nscores at β=2:", b.round(4).tolist(), "\nscores at β=5:", a.round(4).tolist())
    assert a[0] == pytest.approx(b[0] ** 2.5, abs=1e-5)
    assert (a[1:] < b[1:]).all() and a[1:].mean() < b[1:].mean()
    # sharper: the top result stands further above the rest
    assert a[0] / a[1:].mean() > b[0] / b[1:].mean()


async def test_serotonin_changes_each_space_contribution(app):
    await filled(app)
    service = fresh(app)
    before = await search(app)
    service.adjust("serotonin", 0.5)  # 0.5 → 1.0: every active space votes as the strongest
    after = await search(app)
    active = {k: v for k, v in before["space_weights"].items() if v > 0}
    assert len(set(active.values())) > 1
    assert len({v for k, v in after["space_weights"].items() if k in active}) == 1  # evened out
    assert {k for k, v in after["space_weights"].items() if v > 0} == set(active)  # off stays off
    top_before = before["results"][0]["space_contributions"]
    same = next(r for r in after["results"] if r["id"] == before["results"][0]["id"])["space_contributions"]
    assert same != top_before
    service.adjust("serotonin", -1.0)  # 0.0: the vote concentrates on the strongest spaces
    low = await search(app)
    weights = low["space_weights"]
    strongest = max(active, key=active.__getitem__)  # whichever space the constitution weights most
    assert weights[strongest] == before["space_weights"][strongest]  # the strongest keeps its weight
    assert all(weights[k] <= before["space_weights"][k] for k in active)


async def test_noradrenaline_scales_the_rrf_constant(app):
    await filled(app)
    service = fresh(app)
    before = await search(app)
    service.adjust("noradrenaline", 1.0)
    after = await search(app)
    assert after["rrf_k"] == pytest.approx(2 * before["rrf_k"])
    again = await search(app)
    assert [(r["id"], r["score"]) for r in again["results"]] == [(r["id"], r["score"]) for r in after["results"]]


async def test_steering_rewards_a_novel_justified_memory_above_a_duplicate_and_an_empty_rationale(app):
    await filled(app)
    steering = app.services.steering

    async def reward(content, rationale):
        # a session of its own: the same content again in the filling's session would be a retry (deduplicated)
        await app.services.memory.store(NewMemory(content, rationale, session="steering"))
        await app.services.memory.settled()  # steering judges it after the answer (D24)
        return steering.history[-1]

    novel = await reward("Feature flags let us ship the billing rewrite dark and enable it per customer.",
                         "decided in the architecture review; avoids a risky big-bang release of billing")
    duplicate = await reward("The deploy failed because the database migration timed out after thirty seconds.",
                             "decided in the architecture review; avoids a risky big-bang release of billing")
    empty = await reward("Canary releases send five percent of traffic to the new version first.",
                         "canary releases traffic version")
    assert "near_duplicate" in duplicate["penalties"] and duplicate["evidence"]["max_similarity_to_stored"] > 0.9
    assert "missing_rationale" in empty["penalties"]
    assert not novel["penalties"]
    assert novel["reward"] > duplicate["reward"] and novel["reward"] > empty["reward"]
    for entry in (novel, duplicate, empty):
        assert -1.0 <= entry["reward"] <= 1.0 and set(entry["components"]) == {"gardener", "curator", "assessor"}
    feedback = steering.feedback()
    assert feedback["reward"] == empty["reward"] and feedback["would_raise_it"]
    assert len(feedback["history"]) == min(10, len(steering.history))
