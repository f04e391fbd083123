"""ΔS and ΔC of one fingerprint against the store (SPEC §8): the numbers behind inject_context's UTL block,
compute_delta_sc and the pulse.

Per space i the memory's neighbourhood comes from that space's own index (E12, which has none, borrows E1's
order): the 2k nearest, the memory itself excluded. Then

    ΔSᵢ  by the space's method (utl.delta_s): E1 Mahalanobis to a Gaussian fit of stored E1 vectors with a
         chi-square CDF; E5 asymmetric kNN; E7 the mean of that Gaussian score (on E7) and kNN; E9 Hamming to
         the nearest; E11 TransE: the memory's relation triples against the translations fitted from the stored
         ones (kNN when it states none, or none the store knows yet); E12 1 − MaxSim to the nearest; E13
         1 − max Jaccard of term sets; the rest kNN (k nearest)
    ΔCᵢ  = 0.4·Connectivity + 0.4·ClusterFit + 0.2·Consistency (utl.delta_c):
         Connectivity  mean similarity of the k nearest above the connectivity threshold; for E8 (the graph
                       space) the vertex's own edge weights when it has edges
         ClusterFit    a local silhouette: the k nearest are the memory's cluster, ranks k+1..2k the nearest
                       other group, distances 1 − similarity in the space's own measure
         Consistency   1 − variance of the engine's recent per-operation coherence

The Gaussian fits are refitted from a random sample of stored vectors when the store has grown by a tenth since
the last fit; below `gaussian.min_samples` memories there is no fit worth the name and the space falls back to
kNN (the response says so). Read-only, synchronous: callers run it in a worker thread.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from contextgraph.fingerprint import SPACES, Fingerprint
from contextgraph.retrieval.similarity import space_similarities
from contextgraph.storage.indexes import INDEXED_SPACES
from contextgraph.utl import delta_c as dc
from contextgraph.utl import delta_s as ds
from contextgraph.utl import learning, transe
from contextgraph.utl.johari import classify

GAUSSIAN_SPACES = (1, 7)  # E1 by Mahalanobis alone; E7 hybrid (Gaussian + kNN)
GRAPH_SPACE = 8


@dataclass(frozen=True, slots=True)
class SpaceResult:
    space: int
    delta_s: float
    delta_c: float
    method: str
    connectivity: float
    cluster_fit: float
    neighbours: int


@dataclass(frozen=True)
class DeltaSc:
    spaces: list[SpaceResult]
    consistency: float
    entropy: float
    coherence: float
    learning_score: float
    quadrant: str
    lifecycle: learning.Lifecycle
    threshold: float
    timings_ms: dict[str, float] = field(default_factory=dict)
    # seq → fingerprint of every neighbour gathered, in any space (not reported; reused for `related`)
    neighbourhood: dict[int, Fingerprint] = field(default_factory=dict, repr=False)

    @property
    def delta_s(self) -> list[float]:
        return [s.delta_s for s in self.spaces]

    @property
    def delta_c(self) -> list[float]:
        return [s.delta_c for s in self.spaces]

    def per_space(self, precision: int = 4) -> list[dict[str, Any]]:
        return [{"space": f"E{s.space}", "name": SPACES[s.space - 1].name, "delta_s": round(s.delta_s, precision),
                 "delta_c": round(s.delta_c, precision),
                 "quadrant": classify(s.delta_s, s.delta_c, self.threshold), "method": s.method}
                for s in self.spaces]

    def diagnostics(self, precision: int = 4) -> list[dict[str, Any]]:
        return [{"space": f"E{s.space}", "connectivity": round(s.connectivity, precision),
                 "cluster_fit": round(s.cluster_fit, precision), "consistency": round(self.consistency, precision),
                 "neighbours": s.neighbours} for s in self.spaces]


class RefitCache:
    """Fitted models by key, each with the store state (`stamp`) it was fitted on. A current model is returned
    as it is; a stale one keeps serving while a background thread refits it (or the caller refits, when
    `background` is false: a refit cheap enough to wait for); a missing one is fitted in the caller, which has
    nothing to fall back on. close() starts no more refits and waits for the running ones, since the store they
    read is about to close. A failed fit keeps the previous model (a store closed under a background refit)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._cond = threading.Condition()
        self._models: dict[Any, tuple[Any, Any]] = {}
        self._running: set[Any] = set()
        self._closed = False

    def get(self, key: Any, stamp: Any, stale: Callable[[Any], bool], fit: Callable[[], Any],
            background: bool = True) -> Any:
        with self._cond:
            entry = self._models.get(key)
            if entry is not None and (not stale(entry[1]) or key in self._running or self._closed):
                return entry[0]
            if entry is not None and background:
                self._running.add(key)
                threading.Thread(target=self._refit, args=(key, stamp, fit), daemon=True,
                                 name=f"contextgraph-fit-{self._name}-{key}").start()
                return entry[0]
        return self._refit(key, stamp, fit)

    def close(self) -> None:
        with self._cond:
            self._closed = True
        self.wait()

    def wait(self) -> None:
        """Until no background refit runs."""
        with self._cond:
            self._cond.wait_for(lambda: not self._running)

    def _refit(self, key: Any, stamp: Any, fit: Callable[[], Any]) -> Any:
        try:
            model = fit()
        except Exception:
            model = None
        with self._cond:
            self._running.discard(key)
            if model is not None:
                self._models[key] = (model, stamp)
            self._cond.notify_all()
            entry = self._models.get(key)
            return None if entry is None else entry[0]


class GaussianFits:
    """Gaussian fits of stored vectors per space (RefitCache), refitted once the store has grown by a tenth
    (and by at least 10 memories); a refit at 1K memories costs ~0.1 s, so it runs in the background."""

    def __init__(self, min_samples: int, max_samples: int, components: int, refit_growth: float) -> None:
        self.min_samples = min_samples
        self.max_samples = max_samples
        self.components = components
        self.refit_growth = refit_growth
        self._cache = RefitCache("gaussian")

    def get(self, store: Any, space: int) -> ds.GaussianFit | None:
        count = store.count()
        if count < self.min_samples:
            return None
        return self._cache.get(
            space, count, lambda fitted_at: count >= max(fitted_at * (1.0 + self.refit_growth), fitted_at + 10),
            lambda: ds.fit_gaussian(self._sample(store, space), self.components))

    def close(self) -> None:
        self._cache.close()

    def wait(self) -> None:
        self._cache.wait()

    def _sample(self, store: Any, space: int) -> np.ndarray:
        """Up to max_samples stored vectors of one space, drawn uniformly over sequence numbers (deleted ones
        are skipped, so a store with many deletions yields fewer)."""
        last = store.last_seq()
        rng = random.Random(last)  # deterministic for a given store state
        seqs = list(range(1, last + 1)) if last <= self.max_samples else sorted(
            rng.sample(range(1, last + 1), self.max_samples))
        rows = [fp[space] for fp in store.fingerprints(seqs, spaces=[space]) if fp is not None]
        return np.stack(rows).astype(np.float64) if rows else np.zeros((0, 0))


class TranslationFits:
    """The closed-form TransE translations of the stored triples (utl.transe, RefitCache), refitted from a scan
    of the triples table once the number of memories with triples has grown by `refit_growth` (at least one),
    or after any deletion (a deleted memory's triples must stop counting). The scan reads every stored triple
    (tens of milliseconds at 10K memories, more at 100K), so refits run in the background; while fewer than
    SYNC_BELOW memories have triples it takes a few milliseconds and stays in the caller: the model is then
    always current."""

    SYNC_BELOW = 500

    def __init__(self, min_examples: int, refit_growth: float) -> None:
        self.min_examples = min_examples
        self.refit_growth = refit_growth
        self._cache = RefitCache("transe")

    def get(self, store: Any) -> transe.Translations:
        count = store.triple_count()
        # seqs consumed minus live memories grows with every forget, merge or hard delete (restores and puts
        # leave it alone)
        deletions = store.last_seq() - store.count()

        def stale(fitted: tuple[int, int]) -> bool:
            return deletions != fitted[1] or abs(count - fitted[0]) >= max(1.0, fitted[0] * self.refit_growth)

        def fit() -> transe.Translations:
            live = [(relation, h, t) for _id, _head, relation, _tail, h, t in store.live_triples()]
            return transe.fit_translations(live, self.min_examples)

        model = self._cache.get("E11", (count, deletions), stale, fit, background=count >= self.SYNC_BELOW)
        return model if model is not None else transe.fit_translations([], self.min_examples)

    def close(self) -> None:
        self._cache.close()

    def wait(self) -> None:
        self._cache.wait()


def relation_vectors(triples: Sequence[Any]) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(relation, h, t) from embedders.e11_entity.Triple objects or stored (head, relation, tail, h, t) tuples."""
    out = []
    for t in triples:
        if hasattr(t, "relation"):
            out.append((t.relation, t.head_vector, t.tail_vector))
        else:
            out.append((t[1], t[3], t[4]))
    return out


class DeltaScComputer:
    def __init__(self, constitution: Any) -> None:
        utl = constitution["utl"]
        self.k = int(utl["knn_k"])
        self.threshold = float(utl["johari_threshold"])
        self.connect = float(constitution["memory"]["connectivity_threshold"])
        self.weights = dict(utl["delta_c_weights"])
        self.empty_s = float(utl["empty_store_delta_s"])
        self.empty_c = float(utl["empty_store_delta_c"])
        self.stages = utl["lifecycle"]
        self.gain = float(utl["learning_gain"])
        g = utl["gaussian"]
        self.fits = GaussianFits(int(g["min_samples"]), int(g["max_samples"]), int(g["components"]),
                                 float(g["refit_growth"]))
        self.translations = TranslationFits(int(utl["transe_min_examples"]), float(g["refit_growth"]))

    def close(self) -> None:
        """Stop background refits and wait for the running ones (the store is about to close)."""
        self.fits.close()
        self.translations.close()

    def compute(self, store: Any, indexes: Any, embedders: Sequence[Any], fingerprint: Fingerprint, *,
                coherence_history: Sequence[float], phase_spread: float = 0.0, emotional_weight: float = 1.0,
                exclude: frozenset[int] = frozenset(), edge_weights: Sequence[float] = (),
                triples: Sequence[Any] = (), own_triples: Sequence[Any] = ()) -> DeltaSc:
        started = time.perf_counter()
        by_space = {e.space: e for e in embedders}
        consistency = dc.consistency(coherence_history)
        want = 2 * self.k
        ranked: dict[int, list[int]] = {}
        for space in INDEXED_SPACES:
            hits = indexes.search(space, fingerprint[space], want + len(exclude))
            ranked[space] = [seq for seq, _ in hits if seq not in exclude][:want]
        ranked[12] = ranked[1]
        # one read of every neighbour's whole fingerprint: the spaces share most neighbours, and inject_context
        # ranks its related memories from this same neighbourhood (Retriever.rank) without reading it again
        union = list(dict.fromkeys(seq for seqs in ranked.values() for seq in seqs))
        neighbourhood = {seq: fp for seq, fp in zip(union, store.fingerprints(union)) if fp is not None}
        timings = {"neighbours": _ms(started)}
        results = []
        for space in SPACES:
            fps = [neighbourhood[seq] for seq in ranked[space.id] if seq in neighbourhood]
            near, ring = fps[: self.k], fps[self.k:]
            results.append(self._space(store, by_space, space, fingerprint, near, ring, consistency, edge_weights,
                                       triples, own_triples))
        timings["spaces"] = _ms(started) - timings["neighbours"]
        tau = learning.normalised([1.0] * len(SPACES))
        entropy = float(np.dot(tau, [r.delta_s for r in results]))
        coherence = float(np.dot(tau, [r.delta_c for r in results]))
        stage = learning.lifecycle(store.count(), self.stages)
        score = learning.learning_score([r.delta_s for r in results], [r.delta_c for r in results], tau,
                                        stage.lambda_s, stage.lambda_c, emotional_weight, phase_spread, self.gain)
        timings["total"] = _ms(started)
        return DeltaSc(results, consistency, entropy, coherence, score, classify(entropy, coherence, self.threshold),
                       stage, self.threshold, timings, neighbourhood)

    def _space(self, store: Any, by_space: Mapping[int, Any], space: Any, fp: Fingerprint, near: list, ring: list,
               consistency: float, edge_weights: Sequence[float], triples: Sequence[Any],
               own_triples: Sequence[Any]) -> SpaceResult:
        sid = space.id
        if not near:
            return SpaceResult(sid, self.empty_s, self.empty_c, "empty store: everything is novel", 0.0,
                               dc.NEUTRAL_FIT, 0)
        sims = space_similarities(by_space, space, fp, near)
        ring_sims = space_similarities(by_space, space, fp, ring)
        delta_s, method = self._novelty(store, by_space, sid, fp, near, sims, triples, own_triples)
        conn = dc.connectivity(sims, self.connect)
        if sid == GRAPH_SPACE and len(edge_weights):
            conn = dc.connectivity(edge_weights, 0.0)
        fit = dc.cluster_fit_from_distances(1.0 - sims, 1.0 - ring_sims)
        return SpaceResult(sid, delta_s, dc.delta_c(conn, fit, consistency, self.weights), method, conn, fit,
                           len(near))

    def _novelty(self, store: Any, by_space: Mapping[int, Any], sid: int, fp: Fingerprint, near: list,
                 sims: np.ndarray, triples: Sequence[Any], own_triples: Sequence[Any]) -> tuple[float, str]:
        k = self.k
        if sid in GAUSSIAN_SPACES:
            fit = self.fits.get(store, sid)
            knn = ds.knn_novelty(sims, k)
            if fit is None:
                return knn, (f"knn (k={k}): a Gaussian fit needs at least {self.fits.min_samples} memories")
            gauss = ds.gaussian_novelty(fit, np.asarray(fp[sid], dtype=np.float64))
            if sid == 1:
                return gauss, (f"gaussian: Mahalanobis to a PPCA fit of {fit.samples} stored E1 vectors "
                               f"({len(fit.variances)} components), chi-square CDF (dof {fit.mean.size})")
            return ds.hybrid_novelty(gauss, knn), f"hybrid: mean of the Gaussian ({fit.samples} samples) and knn (k={k})"
        if sid == 5:
            e5 = by_space[5]
            column = [f[5] for f in near]
            forward = np.clip(np.nan_to_num(e5.similarity(fp[5], column, direction="forward")), 0.0, 1.0)
            backward = np.clip(np.nan_to_num(e5.similarity(fp[5], column, direction="backward")), 0.0, 1.0)
            return ds.asymmetric_knn_novelty(forward, backward, k), f"asymmetric_knn (k={k}): cause→cause, effect→effect"
        if sid == 9:
            bits = int(np.asarray(fp[9]).size * 8)
            return ds.hamming_novelty(fp[9], np.stack([f[9] for f in near]), bits), "hamming: to the nearest"
        if sid == 12:
            return ds.maxsim_novelty(fp[12], [f[12] for f in near]), "maxsim: 1 − MaxSim to the nearest"
        if sid == 13:
            return ds.jaccard_novelty(fp[13].indices, [f[13].indices for f in near]), "jaccard: 1 − max over term sets"
        if sid == 11:
            if not triples:
                return ds.knn_novelty(sims, k), f"knn (k={k}): the memory states no relation triple for TransE"
            model = self.translations.get(store)
            if own_triples:  # a stored vertex is scored against the store without itself
                model = model.without(relation_vectors(own_triples))
            vectors = relation_vectors(triples)
            score = transe.transe_novelty(model, vectors)
            if score is None:
                relations = sorted({r for r, _, _ in vectors})
                return ds.knn_novelty(sims, k), (f"knn (k={k}): TransE knows no relation {', '.join(relations)} "
                                                 f"yet (needs {self.translations.min_examples} stored triples)")
            used = sorted({r for r, _, _ in vectors if r in model.vectors})
            return score, (f"transe: ‖h + r − t‖² against the stored translation of {', '.join(used)} "
                           f"({sum(model.counts[r] for r in used)} triples)")
        return ds.knn_novelty(sims, k), f"knn (k={k})"


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


def utl_payload(result: DeltaSc, constitution: Any) -> dict[str, Any]:
    """inject_context's `utl` block: the aggregates, the per-space values and how each was computed."""
    p = int(constitution.get("pulse.precision"))
    names = [SPACES[s.space - 1].name for s in result.spaces]
    return {
        "entropy": round(result.entropy, p),
        "coherence": round(result.coherence, p),
        "learningScore": round(result.learning_score, p),
        "johariQuadrant": result.quadrant,
        "suggestedAction": constitution["utl"]["johari_actions"][result.quadrant],
        "surprise": round(max(result.delta_s), p),
        "delta_s": {n: round(s.delta_s, p) for n, s in zip(names, result.spaces)},
        "delta_c": {n: round(s.delta_c, p) for n, s in zip(names, result.spaces)},
        "components": {
            "connectivity": round(float(np.mean([s.connectivity for s in result.spaces])), p),
            "cluster_fit": round(float(np.mean([s.cluster_fit for s in result.spaces])), p),
            "consistency": round(result.consistency, p),
        },
        "methods": {n: s.method for n, s in zip(names, result.spaces)},
        "lifecycle": {"stage": result.lifecycle.stage, "lambda_s": result.lifecycle.lambda_s,
                      "lambda_c": result.lifecycle.lambda_c},
        "compute_ms": result.timings_ms.get("total"),
    }
