"""Steering (docs/engine.md#steering): a reward in [−1, 1] for every stored memory, from three judges, fed to dopamine.

    Gardener  graph health around the store: orphans among the newest memories, edges per memory against a
              target, the share of tombstoned memories. g = 1 − 2·min(1, 0.5·orphans + 0.3·sparsity + 0.2·tombs)
    Curator   the memory's own quality: how much its rationale says beyond its content (distinct content words
              not in the content), c = 2·min(1, new words / (2·rationale_min_terms)) − 1
    Assessor  novelty and coherence as the lifecycle stage wants them: a = 2·(λ_S·ΔS + λ_C·ΔC) − 1 with the
              stage's λ (an infant store wants novelty, a mature one coherence); ΔS/ΔC the memory's aggregate UTL

    reward = clip(w_g·g + w_c·c + w_a·a + Σ penalties, −1, 1)

Penalties (constitution steering_penalties): a rationale without meaning (fewer than rationale_min_terms words
beyond the content's own) −0.5; a near-duplicate (E1 cosine > 0.9 to a stored memory) −0.4; weak priors (the
mean confidence of the edges it was stored with below 0.5) −0.3. The reward moves dopamine by +0.2·r / −0.1·|r|.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any

import numpy as np

from contextgraph.constitution import Constitution
from contextgraph.fingerprint import Fingerprint
from contextgraph.log import get_logger
from contextgraph.retrieval.analyzer import term_set
from contextgraph.services.engine.delta_sc_result import DeltaSc
from contextgraph.services.engine.neuromodulation import NeuromodulationService
from contextgraph.services.runtime.store_handle import StoreHandle
from contextgraph.storage.base import GraphTxn, MemoryRecord

_log = get_logger("utl")
_TOMBSTONE_SCAN = 1000  # tombstones counted at most (the share is what matters, bounded work)


def clip(value: float) -> float:
    return min(1.0, max(-1.0, value))


def gardener_score(orphan_share: float, edges_per_memory: float, tombstone_share: float, target: float) -> float:
    sparsity = max(0.0, 1.0 - edges_per_memory / target) if target > 0 else 0.0
    return 1.0 - 2.0 * min(1.0, 0.5 * orphan_share + 0.3 * sparsity + 0.2 * tombstone_share)


def curator_score(new_terms: int, min_terms: int) -> float:
    return 2.0 * min(1.0, new_terms / (2.0 * max(1, min_terms))) - 1.0


def assessor_score(delta_s: float, delta_c: float, lambda_s: float, lambda_c: float) -> float:
    return clip(2.0 * (lambda_s * delta_s + lambda_c * delta_c) - 1.0)


class SteeringService:
    def __init__(self, constitution: Constitution, storage: StoreHandle,
                 neuromodulation: NeuromodulationService) -> None:
        s = constitution["steering"]
        self.weights = {k: float(v) for k, v in s["weights"].items()}
        self.penalties = {k: float(v) for k, v in constitution["steering_penalties"].items()}
        self.duplicate = float(s["near_duplicate_similarity"])
        self.low_priors = float(s["low_priors_confidence"])
        self.min_terms = int(s["rationale_min_terms"])
        self.sample = int(s["gardener_sample"])
        self.target = float(s["target_edges_per_memory"])
        # the Gardener's figures cost a walk over the newest memories' edges (~ms each at the sample's size on a
        # busy machine): measured once per refresh interval, not on every store
        self.gardener_refresh = float(s["gardener_refresh_seconds"])
        self._gardener: dict[str, float] | None = None
        self._gardener_at = 0.0
        self.storage = storage
        self.neuromodulation = neuromodulation
        self._lock = threading.Lock()
        self.history: deque[dict[str, Any]] = deque(maxlen=int(s["history"]))

    def on_store(self, record: MemoryRecord, fingerprint: Fingerprint, utl: DeltaSc) -> dict[str, Any]:
        """Judge one stored memory (after its answer, on the store handle's worker thread: it reads the store
        directly, docs/engine.md#after-the-answer), feed the reward to dopamine and keep it."""
        store = self.storage.store
        now = time.monotonic()
        refresh = self._gardener is None or now - self._gardener_at >= self.gardener_refresh
        gardener, priors = store.graph_read(lambda g: self._graph_view(g, record.id, refresh))
        if refresh:
            self._gardener, self._gardener_at = gardener, now
        gardener = self._gardener or gardener
        nearest = _max_cosine(fingerprint[1], [fp[1] for fp in utl.neighbourhood.values()])
        entry = self.judge(record, nearest, priors, gardener, utl)
        entry["dopamine"] = self.neuromodulation.steering_reward(entry["reward"])
        with self._lock:
            self.history.append(entry)
        return entry

    def judge(self, record: MemoryRecord, nearest: float, priors: float | None, gardener: dict[str, float],
              utl: DeltaSc) -> dict[str, Any]:
        content_terms = term_set(record.content)
        beyond = sorted(term_set(record.rationale) - content_terms)
        penalties: dict[str, float] = {}
        advice: list[str] = []
        if len(beyond) < self.min_terms:
            penalties["missing_rationale"] = self.penalties["missing_rationale"]
            advice.append(f"give a rationale that says why in words of its own (≥ {self.min_terms} content words "
                          "not in the memory itself)")
        if nearest > self.duplicate:
            penalties["near_duplicate"] = self.penalties["near_duplicate"]
            advice.append(f"this is {nearest:.2f} similar to a stored memory: merge_concepts or annotate_node "
                          "instead of storing it again")
        if priors is not None and priors < self.low_priors:
            penalties["low_priors_confidence"] = self.penalties["low_priors_confidence"]
            advice.append("its links are weak (low-confidence edges): link_to the memories it really builds on")
        stage = utl.lifecycle
        components = {
            "gardener": gardener_score(gardener["orphan_share"], gardener["edges_per_memory"],
                                       gardener["tombstone_share"], self.target),
            "curator": curator_score(len(beyond), self.min_terms),
            "assessor": assessor_score(utl.entropy, utl.coherence, stage.lambda_s, stage.lambda_c),
        }
        if components["gardener"] < 0:
            advice.append("the graph is sparse or has orphans: link new memories (link_to) to what they relate to")
        if components["assessor"] < 0:
            wanted = "novel memories" if stage.lambda_s > stage.lambda_c else "memories that fit what is known"
            advice.append(f"at the {stage.stage} stage the store rewards {wanted}")
        reward = clip(sum(self.weights[k] * v for k, v in components.items()) + sum(penalties.values()))
        return {"memory_id": record.id, "reward": round(reward, 6),
                "components": {k: round(v, 6) for k, v in components.items()},
                "weights": self.weights, "penalties": penalties,
                "evidence": {"max_similarity_to_stored": round(nearest, 6), "rationale_words_beyond_content": beyond,
                             "edge_confidence_mean": None if priors is None else round(priors, 6),
                             "delta_s": round(utl.entropy, 6), "delta_c": round(utl.coherence, 6),
                             "lifecycle_stage": stage.stage, **{k: round(v, 6) for k, v in gardener.items()}},
                "would_raise_it": advice}

    def _graph_view(self, g: GraphTxn, memory_id: str, gardener: bool) -> tuple[dict[str, float], float | None]:
        """(the Gardener's graph-health figures, or {} when not refreshed now; the new memory's mean edge
        confidence, None without edges)."""
        own = g.edges(memory_id)
        priors = float(np.mean([e.confidence for e in own])) if own else None
        if not gardener:
            return {}, priors
        recent = g.recent(self.sample, None, None)
        orphans = sum(1 for r in recent if not g.edges(r.id))
        live = self.storage.store.count()
        tombs = 0
        for tombs, _ in enumerate(g.tombstones(), start=1):
            if tombs >= _TOMBSTONE_SCAN:
                break
        return ({"orphan_share": orphans / len(recent) if recent else 0.0,
                 "edges_per_memory": g.edge_count() / live if live else 0.0,
                 "tombstone_share": tombs / (live + tombs) if live + tombs else 0.0}, priors)

    def feedback(self) -> dict[str, Any]:
        with self._lock:
            history = list(self.history)
        if not history:
            return {"reward": None, "components": None, "history": [], "count": 0,
                    "message": "No memory stored since the server started: the reward is computed on every store.",
                    "weights": self.weights, "penalties": self.penalties}
        last = history[-1]
        rewards = [h["reward"] for h in history]
        return {"reward": last["reward"], "components": last["components"], "penalties": last["penalties"],
                "memory_id": last["memory_id"], "evidence": last["evidence"],
                "would_raise_it": last["would_raise_it"] or ["nothing: this store earned the reward it could"],
                "dopamine": last.get("dopamine"),
                "history": [{"memory_id": h["memory_id"], "reward": h["reward"], "components": h["components"],
                             "penalties": h["penalties"]} for h in history[-10:]],
                "count": len(history), "mean_reward": round(float(np.mean(rewards)), 6),
                "weights": self.weights, "penalty_values": self.penalties,
                "method": "reward = clip(Σ weight·component + Σ penalties, −1, 1); dopamine += 0.2·r (r > 0) or "
                          "−0.1·|r| (r < 0)"}


def _max_cosine(vector: Any, others: list[Any]) -> float:
    if not others:
        return 0.0
    v = np.asarray(vector, dtype=np.float64)
    m = np.stack([np.asarray(o, dtype=np.float64) for o in others])
    norms = np.linalg.norm(m, axis=1) * np.linalg.norm(v)
    cos = np.divide(m @ v, norms, out=np.zeros(len(m)), where=norms > 0)
    return float(cos.max())
