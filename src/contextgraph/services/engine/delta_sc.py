"""ΔS and ΔC of one fingerprint against the store (docs/utl.md): the numbers behind inject_context's UTL
block, compute_delta_sc, get_johari_classification and the pulse.

Per space i the memory's neighbourhood comes from that space's own index (E12, which has none, borrows E1's
order): the 2k nearest, the memory itself excluded (`exclude`). Then

    ΔSᵢ  a local statistic of the space's distances to those neighbours (E1 Mahalanobis once the store holds
         `gaussian.min_samples`, E5 both directions, E6/E13 term sets, E9 Hamming, E11 with TransE, E12 MaxSim),
         calibrated on the store's own leave-one-out distribution (utl.delta_s, utl.calibration): the store's
         typical memory scores 0.5, an exact duplicate ~0, one unlike anything stored → 1.
    ΔCᵢ  = 0.4·Connectivity + 0.4·ClusterFit + 0.2·Consistency (utl.delta_c): the closeness of the memory's
         2nd-4th nearest and the weighted clustering coefficient of the memory with them (the cluster they form
         and its fit with it), each standing against the store's leave-one-out values (median and MAD), and how
         consistent the operation's coherence is with the engine's recent ones. E8 with edges: its own edge
         weights. Before there is a leave-one-out sample: graded connectivity and a silhouette against the
         prototypes of spherical k-means clusters of E1 (whose clusters also define the topics left out below).
    S, C the τ-weighted means over the content spaces (E2-E4, when a memory was stored, left out); C's weights
         also by how far each space's coherence sees topics in this store (StoreModel.coherence_weights).
    L    = wₑ · max(0, cos φ) · S^λ_S · C^λ_C (D22), φ the memory's own binding spread over the content spaces
         (phases π·ΔSᵢ), wₑ = 0.5 + importance when the caller knows it.
    L̂    the prediction before the other spaces are scored: S and C from E1 alone with L's own weight
         (learning.predicted_parts); meta-cognition compares it with L (utl.meta).

The store model (`StoreModel`: Gaussian fits, sparse idf, clusters, the per-space calibrations and coherence
samples) is refitted from a random sample of the store once it has changed by `gaussian.refit_growth`: in the
background while the previous model serves, in the caller when there is none (a quick fit, refitted in full at
once) and up to `calibration.sync_below` memories, so a small store answers the same question the same way
twice. Leave-one-out: the scored memory is never its own neighbour, nor among the cluster prototypes or the
TransE translations. Read-only, synchronous: callers run it in a worker thread.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from contextgraph.fingerprint import SPACES, Fingerprint, dense, sparse
from contextgraph.retrieval.similarity import space_similarities
from contextgraph.services.engine import delta_sc_neighbours as nbr
from contextgraph.services.engine.delta_sc_result import DeltaSc, SpaceResult
from contextgraph.services.engine.store_model import (
    EMPTY_MODEL,
    DeletionCount,
    RefitCache,
    StoreModel,
    TranslationFits,
    relation_vectors,
)
from contextgraph.services.engine.store_model_file import SavedModel
from contextgraph.services.engine.store_sample import cluster_distances, fit_clusters, same_cluster, sample_fingerprints
from contextgraph.storage.base import MemoryStore, SearchIndexes
from contextgraph.utl import calibration as cal
from contextgraph.utl import delta_c as dc
from contextgraph.utl import delta_s as ds
from contextgraph.utl import learning, transe
from contextgraph.utl.johari import classify
from contextgraph.vectors import clip_unit

GAUSSIAN_SPACES = (1, 7)  # E1 by Mahalanobis alone; E7 hybrid (Mahalanobis + cosine)
SPARSE_SPACES = (6, 13)
GRAPH_SPACE = 8
TIME_SPACES = (2, 3, 4)  # temporal: recency, periodicity, position
LATE_INTERACTION = 12


class DeltaScComputer:
    def __init__(self, constitution: Any) -> None:
        utl = constitution["utl"]
        self.k = int(utl["knn_k"])
        self.threshold = float(utl["johari_threshold"])
        self.connectivity_neighbours = int(utl["connectivity_neighbours"])
        self.connect = float(constitution["memory"]["connectivity_threshold"])
        self.weights = dict(utl["delta_c_weights"])
        self.empty_s = float(utl["empty_store_delta_s"])
        self.empty_c = float(utl["empty_store_delta_c"])
        self.stages = utl["lifecycle"]
        # the lifecycle stage's λ → the λ the engine uses (Meta-UTL's learned λ; identity until attached)
        self.lambda_policy: Callable[[learning.Lifecycle], learning.Lifecycle] = lambda stage: stage
        bounds = utl.get("emotional_weight", {}) or {}
        self.emotional_bounds = (float(bounds.get("min", 0.5)), float(bounds.get("max", 1.5)))
        g = utl["gaussian"]
        self.min_samples = int(g["min_samples"])
        self.max_samples = int(g["max_samples"])
        self.components = int(g["components"])
        self.refit_growth = float(g["refit_growth"])
        cal = utl.get("calibration", {}) or {}
        self.loo_samples = int(cal.get("loo_samples", 32))
        self.quick_loo_samples = int(cal.get("quick_loo_samples", 12))
        self.quick_max_samples = int(cal.get("quick_max_samples", 200))
        self.sync_below = int(cal.get("sync_below", 8))  # up to this many memories the model refits in the caller
        self.prior_weight = float(cal.get("prior_weight", 4.0))
        slope = cal.get("slope", {}) or {}
        self.slope_bounds = (float(slope.get("min", 1.0)), float(slope.get("max", 1.5)))
        cl = utl.get("clusters", {}) or {}
        self.per_cluster = int(cl.get("prototypes", 3))
        self.max_clusters = int(cl.get("max", 16))
        self.considered = int(cl.get("considered", 4))
        self.reference_size = int(cal.get("reference_samples", 64))
        # E6/E13 neighbours skip terms in more than this share of memories, as stage 1 does (the longest postings)
        self.sparse_max_df = float(constitution["retrieval"]["sparse_max_df"])
        self._models = RefitCache("store-model")
        self.saved = SavedModel(constitution)  # the full fits kept between runs (the store handle sets its path)
        self._deletions = DeletionCount()
        self.translations = TranslationFits(int(utl["transe_min_examples"]), self.refit_growth, self._deletions,
                                            self.saved)

    def close(self) -> None:
        """Stop background refits and wait for the running ones (the store is about to close)."""
        self._models.close()
        self.translations.close()

    def wait(self) -> None:
        """Until no background refit runs (tests, benchmarks)."""
        self._models.wait()
        self.translations.wait()

    # -- the store model -------------------------------------------------------------------------------------
    def model(self, store: MemoryStore, indexes: SearchIndexes, by_space: Mapping[int, Any]) -> StoreModel:
        count = store.count()
        if count < 2:
            return EMPTY_MODEL
        deletions = self._deletions(store)

        def stale(fitted: tuple[int, int, bool] | None) -> bool:  # (count, deletions, quick) of a fit
            n, gone, quick = fitted or (0, -1, True)
            return quick or gone != deletions or abs(count - n) >= max(1.0, n * self.refit_growth)

        small = count <= self.sync_below  # cheap enough to refit in the caller: every answer is current
        self.saved.adopt(self._models, store, by_space, deletions)  # the last process's full fit, if kept
        full = lambda: self._fit(store, indexes, by_space, quick=False)  # noqa: E731
        entry = self._models.get("model", (count, deletions, False), stale,
                                 full if small else lambda: self.saved.keep(store, by_space, full),
                                 background=not small,
                                 first=None if small else lambda: self._fit(store, indexes, by_space, quick=True),
                                 first_stamp=lambda m: (count, deletions, m.quick))
        return entry if entry is not None else EMPTY_MODEL

    def reference(self, store: MemoryStore, indexes: SearchIndexes,
                  embedders: Sequence[Any]) -> tuple[Fingerprint, ...]:
        """A uniform sample of stored fingerprints (at most `calibration.reference_samples`), refreshed with the
        store model: what binding normalises a candidate's similarity to the context against. See
        gwt.binding.context_agreements."""
        return self.model(store, indexes, {e.space: e for e in embedders}).reference

    def _fit(self, store: MemoryStore, indexes: SearchIndexes, by_space: Mapping[int, Any], quick: bool) -> StoreModel:
        count = store.count()
        size = min(self.max_samples, self.quick_max_samples) if quick else self.max_samples
        seqs, sample = sample_fingerprints(store, size, spaces=[1, 6, 7, 13])
        reduced = quick and (len(seqs) < count or self.quick_loo_samples < min(self.loo_samples, len(seqs)))
        gaussian: dict[int, ds.GaussianFit] = {}
        if len(seqs) >= self.min_samples:
            for sid in GAUSSIAN_SPACES:
                fit = ds.fit_gaussian(np.stack([dense(f[sid]) for f in sample]).astype(np.float64), self.components)
                if fit is not None:
                    gaussian[sid] = fit
        idf: dict[int, tuple[np.ndarray, np.ndarray, float]] = {}
        for sid in SPARSE_SPACES:
            terms = (np.concatenate([np.unique(sparse(f[sid]).indices) for f in sample]) if sample
                     else np.zeros(0, np.int64))
            known, df = np.unique(terms.astype(np.int64), return_counts=True)
            n = len(sample)
            idf[sid] = (known, np.log1p((n - df + 0.5) / (df + 0.5)), float(np.log1p((n + 0.5) / 0.5)))
        clusters = fit_clusters(store, by_space, seqs, sample, self.per_cluster, self.max_clusters)
        partial = StoreModel(count, gaussian, idf, clusters, {}, 0)
        # leave-one-out statistics of a sample of stored memories, each against the store without itself
        loo_n = min(self.quick_loo_samples if quick or count <= self.sync_below else self.loo_samples, len(seqs))
        rng = random.Random(store.last_seq() + 1)
        loo_seqs = sorted(rng.sample(seqs, loo_n)) if loo_n < len(seqs) else list(seqs)
        stats: dict[str, list[float]] = {}
        coherence: dict[str, list[float]] = {}  # the raw connectivity and cluster fit ΔC judges a memory by
        cache: dict[int, Fingerprint] = {s: f for s, f in zip(loo_seqs, store.fingerprints(loo_seqs)) if f is not None}
        # the same memories as if their own topic were not stored: what an off-topic memory scores (docs/utl.md#
        # coherence), against which ΔC tells a memory that fits from one that does not
        topics = same_cluster(clusters, seqs, sample)
        for seq in loo_seqs:
            fp = cache.get(seq)
            if fp is None:
                continue
            own, off = nbr.index_neighbours_twice(store, indexes, fp, seq, topics.get(seq), 2 * self.k,
                                                  self.sparse_max_df, cache)
            self._loo(by_space, partial, fp, own, coherence, "", stats)
            if off is not None:
                self._loo(by_space, partial, fp, off, coherence, "/off")
        calibration = {key: cal.fit_calibration(v, self.prior_weight, self.slope_bounds) for key, v in stats.items()}
        ref_seqs = seqs if len(seqs) <= self.reference_size else sorted(rng.sample(seqs, self.reference_size))
        reference = tuple(f for f in store.fingerprints(ref_seqs) if f is not None)
        return StoreModel(count, gaussian, idf, clusters, calibration, len(loo_seqs), quick=reduced,
                          reference=reference, coherence={k: np.sort(v) for k, v in coherence.items()})

    def _loo(self, by_space: Mapping[int, Any], partial: StoreModel, fp: Fingerprint, found: nbr.Neighbourhood,
             coherence: dict[str, list[float]], suffix: str, stats: dict[str, list[float]] | None = None) -> None:
        """One stored memory's raw statistics against its neighbourhood `found` in a store without it (or without
        its topic), appended per key (`suffix` after the coherence keys); `stats`: the ΔS statistics too."""
        ranked, neighbourhood = found
        for space in SPACES:
            fps = [neighbourhood[s] for s in ranked[space.id] if s in neighbourhood]
            if not fps:
                continue
            sims = space_similarities(by_space, space, fp, fps)
            if stats is not None:
                for key, g in self._statistics(partial, by_space, space.id, fp, fps, sims).items():
                    stats.setdefault(key, []).append(g)
            conn, fit = self._raw_coherence(partial, by_space, space, fp, fps, sims, {}, ranked=True)
            coherence.setdefault(f"E{space.id}/connectivity{suffix}", []).append(conn)
            if math.isfinite(fit):
                coherence.setdefault(f"E{space.id}/cluster_fit{suffix}", []).append(fit)

    # -- one computation ---------------------------------------------------------------------------------------
    def compute(self, store: MemoryStore, indexes: SearchIndexes, embedders: Sequence[Any], fingerprint: Fingerprint, *,
                coherence_history: Sequence[float], emotional_weight: float = 1.0,
                exclude: frozenset[int] = frozenset(), edge_weights: Sequence[float] = (),
                triples: Sequence[Any] = (), own_triples: Sequence[Any] = (),
                importance: float | None = None, tau: Sequence[float] | None = None,
                pool: Mapping[int, Fingerprint] | None = None,
                pool_similarities: Mapping[int, np.ndarray] | None = None) -> DeltaSc:
        """φ is the memory's own binding spread (D19), not the network's. wₑ = 0.5 + `importance` when given,
        else `emotional_weight`; τ uniform unless given. `pool` ({seq: fingerprint}): draw the neighbours
        from it instead of the indexes (a search's answer), with their similarities to `fingerprint` when
        `pool_similarities` has them (rank_within)."""
        started = time.perf_counter()
        by_space = {e.space: e for e in embedders}
        known: dict[int, np.ndarray] = {}  # per space, the similarities of its ranked neighbours when known
        if pool is None:
            ranked, neighbourhood = nbr.index_neighbours(store, indexes, fingerprint, exclude, 2 * self.k,
                                                         self.sparse_max_df)
        else:
            ranked, neighbourhood, known = nbr.rank_within(by_space, fingerprint, pool, 2 * self.k, exclude,
                                                       pool_similarities)
        timings = {"neighbours": _ms(started)}
        model = self.model(store, indexes, by_space) if neighbourhood else EMPTY_MODEL
        timings["model"] = _ms(started) - timings["neighbours"]
        # the prototypes' silhouette only until there is a leave-one-out sample (ClusterFit's triangles after)
        cluster_dists = ({} if model.coherence else
                         cluster_distances(model.clusters, by_space, fingerprint, exclude, self.considered))
        partial = []
        for space in SPACES:
            fps = [neighbourhood[seq] for seq in ranked[space.id] if seq in neighbourhood]
            partial.append(self._space(store, model, by_space, space, fingerprint, fps, edge_weights, triples,
                                       own_triples, cluster_dists, known.get(space.id)))
        current = float(np.mean([dc.delta_c(p[3], p[4], 1.0, self.weights) for p in partial]))
        consistency = dc.consistency(coherence_history, current if neighbourhood else None)
        results = []
        for sid, delta_s, method, conn, fit, n in partial:
            if n == 0:
                results.append(SpaceResult(sid, delta_s, self.empty_c, method, 0.0, dc.NEUTRAL_FIT, 0))
            else:
                results.append(SpaceResult(sid, delta_s, dc.delta_c(conn, fit, consistency, self.weights), method,
                                           conn, fit, n))
        timings["spaces"] = _ms(started) - timings["neighbours"] - timings["model"]
        # S, C and φ over the content spaces: E2-E4 say when a memory was stored, so every memory of a session is
        # familiar to them and none fits them better than another (docs/utl.md#learning-score); their ΔS and ΔC
        # stay reported per space
        given = list(tau) if tau is not None and len(tau) == len(SPACES) else [1.0] * len(SPACES)
        weights = learning.normalised([0.0 if sp.id in TIME_SPACES else w for sp, w in zip(SPACES, given)])
        # C weighs each space also by how far its coherence sees topics in this store (StoreModel.
        # coherence_weights): character n-grams and common words fit an unrelated text as well as a related one
        seen = [w * model.coherence_weights[sp.id] for sp, w in zip(SPACES, weights)]
        c_weights = learning.normalised(seen) if sum(seen) > 0.0 else weights
        s_values = [r.delta_s for r in results]
        c_values = [r.delta_c for r in results]
        entropy = float(np.dot(weights, s_values))
        coherence = float(np.dot(c_weights, c_values))
        count = store.count()
        stage = self.lambda_policy(learning.lifecycle(count, self.stages))
        w_e = learning.emotional_weight(importance, emotional_weight, self.emotional_bounds)
        # their agreement in E2-E4 would discount exactly the novel content L should reward
        phi = learning.binding_phase_spread([v for sp, v in zip(SPACES, s_values) if sp.id not in TIME_SPACES])
        parts = learning.score_parts(s_values, c_values, weights, stage.lambda_s, stage.lambda_c, w_e, phi,
                                     self.emotional_bounds, c_weights)
        predicted = learning.predicted_parts(parts, s_values[0], c_values[0])
        timings["total"] = _ms(started)
        return DeltaSc(results, consistency, entropy, coherence, parts.score,
                       classify(entropy, coherence, self.threshold), stage, self.threshold, timings, neighbourhood,
                       predicted.score, phi, w_e, count, parts, predicted)

    def _space(self, store: MemoryStore, model: StoreModel, by_space: Mapping[int, Any], space: Any, fp: Fingerprint,
               fps: list, edge_weights: Sequence[float], triples: Sequence[Any], own_triples: Sequence[Any],
               cluster_dists: Mapping[int, list], sims: np.ndarray | None = None
               ) -> tuple[int, float, str, float, float, int]:
        """(space, ΔS, method, connectivity, cluster fit, neighbours). `sims`: fp's similarities to `fps`, when
        the caller already has them (rank_within)."""
        sid = space.id
        if not fps:
            return sid, self.empty_s, "empty store: everything is novel", 0.0, dc.NEUTRAL_FIT, 0
        if sims is None or len(sims) != len(fps):
            sims = space_similarities(by_space, space, fp, fps)
        stats = self._statistics(model, by_space, sid, fp, fps, sims)
        delta_s, method = self._novelty(store, model, sid, stats, triples, own_triples, len(fps))
        conn, fit = self._raw_coherence(model, by_space, space, fp, fps, sims, cluster_dists,
                                        ranked=bool(model.coherence))
        # ranked among the store's own leave-one-out memories, as ΔS is calibrated (docs/utl.md#coherence): an
        # unrelated text is less connected than every stored memory, whatever the space's raw scale
        conn = model.coherence_standing(f"E{sid}/connectivity", conn)
        fit = model.coherence_standing(f"E{sid}/cluster_fit", fit)
        if sid == GRAPH_SPACE and len(edge_weights):  # the vertex's own edges: already a judged connection
            conn = dc.connectivity(edge_weights, 0.0)
        return sid, delta_s, method, conn, fit, len(fps)

    def _raw_coherence(self, model: StoreModel, by_space: Mapping[int, Any], space: Any, fp: Fingerprint, fps: list,
                       sims: np.ndarray, cluster_dists: Mapping[int, list], ranked: bool) -> tuple[float, float]:
        """(connectivity, cluster fit) of one space before they are ranked against the store. `ranked` (there is
        a leave-one-out sample to rank against, or this builds it): the closeness of the neighbourhood, unclipped,
        so nothing ties at a floor and an unrelated text ranks below the store's loosest memories, and the
        weighted clustering coefficient of the memory with its 2nd-4th nearest (ranked_coherence); else the graded
        connectivity and the silhouette against the clusters' prototypes."""
        sid = space.id
        if ranked:
            return nbr.ranked_coherence(by_space, space, model.idf_of, fp, fps, sims, self.connectivity_neighbours)
        pairs = cluster_dists.get(sid, [])
        best = np.sort(clip_unit(np.asarray(sims, dtype=np.float64)))[::-1][: self.k]
        baseline = model.clusters.baseline.get(sid) if model.clusters is not None else None
        conn = dc.graded_connectivity(best, self.connect if baseline is None else baseline)
        fit = dc.cluster_silhouette([d for d, _ in pairs], [b for _, b in pairs]) if pairs else dc.NEUTRAL_FIT
        return conn, fit

    def _statistics(self, model: StoreModel, by_space: Mapping[int, Any], sid: int, fp: Fingerprint, fps: list,
                    sims: np.ndarray) -> dict[str, float]:
        """The raw local statistics g of one space (utl.delta_s), keyed by what they are calibrated as."""
        k = self.k
        key = f"E{sid}"
        if sid == 5:
            e5 = by_space[5]
            column = [f[5] for f in fps]
            # like halves (a restatement of its cause, of its effect): a duplicate is not novel
            causes, effects = (clip_unit(s) for s in e5.restatement(fp[5], column))
            return {key: 0.5 * (cal.local_statistic(1.0 - causes, k) + cal.local_statistic(1.0 - effects, k))}
        if sid in SPARSE_SPACES:
            own = sparse(fp[sid])
            terms = np.asarray(own.indices, dtype=np.int64)
            union = np.unique(np.concatenate([np.asarray(sparse(f[sid]).indices, dtype=np.int64) for f in fps]))
            covered = np.isin(terms, union, assume_unique=True)
            weights = np.abs(np.asarray(own.values, dtype=np.float64)) * model.idf_of(sid, terms)
            return {key: cal.sparse_statistic(float(sims.max()) if sims.size else 0.0, weights, covered)}
        cosine = cal.local_statistic(1.0 - sims, k)
        fit = model.gaussian.get(sid)
        if sid in GAUSSIAN_SPACES and fit is not None:
            maha = cal.local_statistic(ds.mahalanobis_distances(fit, np.asarray(fp[sid], dtype=np.float64),
                                                               np.stack([f[sid] for f in fps])), k)
            return {key: maha, f"{key}/cosine": cosine} if sid == 7 else {key: maha}
        if sid == 7:
            return {f"{key}/cosine": cosine}
        return {key: cosine}

    def _novelty(self, store: MemoryStore, model: StoreModel, sid: int, stats: Mapping[str, float],
                 triples: Sequence[Any], own_triples: Sequence[Any], n: int) -> tuple[float, str]:
        k = self.k
        key = f"E{sid}"
        loo = f"calibrated on {model.loo_samples} leave-one-out memories" if model.loo_samples else "uncalibrated"
        if sid == 1:
            fit = model.gaussian.get(1)
            if fit is None:
                return (model.calibrate(key, stats[key]),
                        f"knn (k={k}): √(d₁·d̄ₖ) of cosine distances, {loo}; a Gaussian fit needs "
                        f"{self.min_samples} memories (Ledoit–Wolf)")
            return (model.calibrate(key, stats[key]),
                    f"gaussian: √(d₁·d̄ₖ) of Mahalanobis distances to the {min(n, k)} nearest under a Ledoit–Wolf "
                    f"covariance of {fit.samples} stored E1 vectors (shrinkage {fit.shrinkage:.3f}), {loo}")
        if sid == 7:
            cos = model.calibrate(f"{key}/cosine", stats[f"{key}/cosine"])
            if key not in stats:
                return cos, f"knn (k={k}): √(d₁·d̄ₖ) of cosine distances, {loo} (hybrid once {self.min_samples} stored)"
            return (ds.hybrid_novelty(model.calibrate(key, stats[key]), cos),
                    f"hybrid: mean of the Ledoit–Wolf Mahalanobis and cosine local scores, {loo}")
        value = model.calibrate(key, stats[key])
        if sid == 5:
            return value, f"asymmetric_knn (k={k}): cause→cause and effect→effect, {loo}"
        if sid == 9:
            return value, f"hamming: √(d₁·d̄ₖ) of normalised Hamming distances, {loo}"
        if sid == 12:
            return value, f"maxsim: √(d₁·d̄ₖ) of 1 − MaxSim to E1's nearest, {loo}"
        if sid in SPARSE_SPACES:
            return value, (f"jaccard: √(d₁·(¾u + ¼d₁)), d₁ = 1 − max Jaccard, u the idf share of terms no "
                           f"neighbour uses, {loo}")
        if sid == 11 and not triples:
            return value, (f"knn (k={k}): √(d₁·d̄ₖ) of 1 − similarity, {loo}; the memory states no relation "
                           f"triple for TransE")
        if sid == 11:
            model_t = self.translations.get(store)
            if own_triples:  # a stored vertex is scored against the store without itself
                model_t = model_t.without(relation_vectors(own_triples))
            vectors = relation_vectors(triples)
            score = transe.transe_novelty(model_t, vectors)
            if score is not None:
                used = sorted({r for r, _, _ in vectors if r in model_t.vectors})
                return (cal.hybrid_geometric(value, score),
                        f"transe: √(calibrated knn · ‖h + r − t‖² score) against the stored translation of "
                        f"{', '.join(used)} ({sum(model_t.counts[r] for r in used)} triples)")
            relations = sorted({r for r, _, _ in vectors})
            return value, (f"knn (k={k}), {loo}: TransE knows no relation {', '.join(relations)} yet (needs "
                           f"{self.translations.min_examples} stored triples)")
        return value, f"knn (k={k}): √(d₁·d̄ₖ) of 1 − similarity, {loo}"


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
