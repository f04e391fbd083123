"""The fitted models behind ΔS/ΔC, refitted from the store as it changes: the StoreModel (Gaussian fits, sparse
idf, k-means clusters, per-space calibrations), the closed-form TransE translations of the stored triples, and
RefitCache, which serves a stale model while a background thread refits it."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from contextgraph.background import start_thread
from contextgraph.fingerprint import Fingerprint
from contextgraph.storage.fingerprint_columns import FingerprintColumns
from contextgraph.utl import calibration as cal
from contextgraph.utl import delta_c as dc
from contextgraph.utl import delta_s as ds
from contextgraph.utl import transe

_OPLOG_CHUNK = 4096  # oplog entries per read while counting deletions
_NO_SAMPLE = np.zeros(0)


class DeletionCount:
    """How many memories the store has deleted since this counter first saw it: the refit caches' signal that a
    memory a model was fitted on may be gone (forget, merge, hard delete). Each call reads only the oplog entries
    written since the previous one. `last_seq() - count()` is not that number: a rewrite (the E8 refresh after
    most stores) takes a seq too, so both models refitted after nearly every store, ~1 s of CPU each at 100K
    memories, beside the requests on two cores."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._store: Any = None
        self._seq = 0  # the last oplog entry counted
        self._deletes = 0

    def __call__(self, store: Any) -> int:
        with self._lock:
            if store is not self._store:  # the first call (or another store, in tests): count from here
                self._store, self._seq, self._deletes = store, store.last_seq(), 0
            while entries := store.oplog_since(self._seq, limit=_OPLOG_CHUNK):
                self._deletes += sum(1 for e in entries if e.op == "delete")
                self._seq = entries[-1].seq
            return self._deletes


class RefitCache:
    """Fitted models by key, each with the store state (`stamp`) it was fitted on. A current model is returned
    as it is; a stale one keeps serving while a background thread refits it (or the caller refits, when
    `background` is false: a refit cheap enough to wait for); a missing one is fitted in the caller, which has
    nothing to fall back on. close() starts no more refits and waits for the running ones, since the store they
    read is about to close. A failed fit keeps the previous model (a store closed under a background refit).
    Searches run in parallel (services.perception): callers that find no model while another is fitting the first
    one wait for its model instead of fitting the same one again."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._cond = threading.Condition()
        self._models: dict[Any, tuple[Any, Any]] = {}
        self._running: set[Any] = set()
        self._first: set[Any] = set()  # keys whose first model a caller is fitting now
        self._closed = False

    def get(self, key: Any, stamp: Any, stale: Callable[[Any], bool], fit: Callable[[], Any],
            background: bool = True, first: Callable[[], Any] | None = None,
            first_stamp: Callable[[Any], Any] | None = None) -> Any:
        """`first` (optional): a cheaper fit for the caller when there is no model at all, stamped by
        `first_stamp(model)` (a stamp that `stale` calls stale makes the full fit follow in the background)."""
        with self._cond:
            self._cond.wait_for(lambda: key not in self._first)
            entry = self._models.get(key)
            if entry is not None and (not stale(entry[1]) or key in self._running or self._closed):
                return entry[0]
            if entry is not None and background:
                self._running.add(key)
                start_thread(self._refit, key, stamp, fit, name=f"contextgraph-fit-{self._name}-{key}")
                return entry[0]
            if entry is None:
                self._first.add(key)
        if entry is not None:
            return self._refit(key, stamp, fit)
        try:
            if first is None:
                return self._refit(key, stamp, fit)
            model = self._refit(key, None, first)
            if model is not None and first_stamp is not None:
                with self._cond:
                    if self._models.get(key, (None, None))[0] is model:
                        self._models[key] = (model, first_stamp(model))
            return model
        finally:
            with self._cond:
                self._first.discard(key)
                self._cond.notify_all()

    def seed(self, key: Any, model: Any, stamp: Any) -> None:
        """Serve `model` (fitted on `stamp`'s store state) until a refit replaces it, unless there is one already."""
        with self._cond:
            self._models.setdefault(key, (model, stamp))

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


@dataclass(frozen=True)
class Clusters:
    """Spherical k-means clusters of stored E1 vectors: unit `centroids` [C, d], each cluster's prototype
    members (`members[c]`: seqs, `fingerprints[c]`: their fingerprints) and, per space, each cluster's
    separation b (utl.delta_c.separations)."""

    centroids: np.ndarray
    members: list[list[int]]
    fingerprints: list[list[Fingerprint]]
    separation: dict[int, np.ndarray]
    baseline: dict[int, float]  # per space: the median similarity of prototypes of different clusters

    @cached_property
    def prototype_columns(self) -> FingerprintColumns:
        """Every cluster's prototypes, cluster after cluster, as one array per space (the UTL takes the rows
        of the clusters nearest each memory it scores, instead of stacking their fingerprints per space)."""
        flat = [fp for fps in self.fingerprints for fp in fps]
        return FingerprintColumns.from_fingerprints(range(len(flat)), flat)

    @cached_property
    def prototype_starts(self) -> list[int]:
        """Cluster c's first row in prototype_columns."""
        return np.cumsum([0] + [len(m) for m in self.members]).tolist()


@dataclass(frozen=True)
class StoreModel:
    count: int
    gaussian: dict[int, ds.GaussianFit]
    idf: dict[int, tuple[np.ndarray, np.ndarray, float]]  # sorted terms, their idf, the idf of an unseen term
    clusters: Clusters | None
    calibration: dict[str, cal.Calibration]
    loo_samples: int
    quick: bool = False
    # a uniform sample of stored fingerprints: the store's distribution of each space, what a candidate's
    # similarity to a context is normalised against (gwt.binding.context_agreements)
    reference: tuple[Fingerprint, ...] = ()
    # per "E<i>/connectivity" and "E<i>/cluster_fit": the leave-one-out memories' raw values, sorted; ΔC reads a
    # memory's connectivity and cluster fit by where they stand among them (utl.delta_c.store_standing). Under
    # "…/off" the same memories' values with their own cluster left out: how far each space sees topics
    # (coherence_weights)
    coherence: dict[str, np.ndarray] = field(default_factory=dict)

    @cached_property
    def reference_columns(self) -> FingerprintColumns:
        """`reference` as one array per space: every search compares its query with the whole sample, and
        stacking 32 fingerprints per space per search was ~2 ms of it at 100K."""
        return FingerprintColumns.from_fingerprints(range(len(self.reference)), self.reference)

    def calibrate(self, key: str, g: float) -> float:
        return self.calibration.get(key, cal.IDENTITY)(g)

    @cached_property
    def coherence_weights(self) -> dict[int, float]:
        """Per space, how well its coherence sees topics in this store: the mean separation (utl.delta_c.
        separation) of its connectivity and cluster fit between the leave-one-out memories and the same memories
        with their own cluster left out. A space without a sample (yet) → 1."""
        out: dict[int, float] = {}
        for space in range(1, 14):
            seps = [dc.separation(self.coherence[key], self.coherence[f"{key}/off"])
                    for key in (f"E{space}/connectivity", f"E{space}/cluster_fit")
                    if key in self.coherence and f"{key}/off" in self.coherence]
            out[space] = float(np.mean(seps)) if seps else 1.0
        return out

    def coherence_standing(self, key: str, value: float) -> float:
        sample = self.coherence.get(key, _NO_SAMPLE)
        return dc.standing_at(value, sample, self._coherence_locations.get(key))

    @cached_property
    def _coherence_locations(self) -> dict[str, tuple[float, float] | None]:
        """Each coherence sample's median and spread, once per model (every UTL ranks 26 values against them)."""
        return {key: dc.robust_location(np.asarray(sample, dtype=np.float64)) for key, sample in self.coherence.items()}

    def idf_of(self, space: int, terms: np.ndarray) -> np.ndarray:
        table = self.idf.get(space)
        t = np.asarray(terms, dtype=np.int64)
        if table is None:
            return np.ones(t.size)
        known, values, unseen = table
        if known.size == 0:
            return np.full(t.size, unseen)
        pos = np.minimum(np.searchsorted(known, t), known.size - 1)
        return np.where(known[pos] == t, values[pos], unseen)


EMPTY_MODEL = StoreModel(0, {}, {}, None, {}, 0)


class TranslationFits:
    """The closed-form TransE translations of the stored triples (utl.transe, RefitCache), refitted from a scan
    of the triples table once the number of memories with triples has grown by `refit_growth` (at least one),
    or after any deletion (a deleted memory's triples must stop counting). The scan reads every stored triple
    (tens of milliseconds at 10K memories, more at 100K), so refits run in the background; while fewer than
    SYNC_BELOW memories have triples it takes a few milliseconds and stays in the caller: the model is then
    always current."""

    SYNC_BELOW = 500

    def __init__(self, min_examples: int, refit_growth: float, deletions: DeletionCount | None = None,
                 saved: Any = None) -> None:
        self.min_examples = min_examples
        self.refit_growth = refit_growth
        self._cache = RefitCache("transe")
        # the store model's counter when given: one read of the new oplog entries serves both models
        self._deletions = deletions if deletions is not None else DeletionCount()
        self._saved = saved  # store_model_file.SavedModel: the fits kept between runs, or None

    def get(self, store: Any) -> transe.Translations:
        count = store.triple_count()
        deletions = self._deletions(store)
        if self._saved is not None and count >= self.SYNC_BELOW:  # the last process's fit, once
            self._saved.adopt_translations(self._cache, store, deletions, self.min_examples)

        def stale(fitted: tuple[int, int]) -> bool:
            return deletions != fitted[1] or abs(count - fitted[0]) >= max(1.0, fitted[0] * self.refit_growth)

        def scan() -> transe.Translations:
            live = [(relation, h, t) for _id, _head, relation, _tail, h, t in store.live_triples()]
            return transe.fit_translations(live, self.min_examples)

        def fit() -> transe.Translations:  # large enough to fit in the background: kept for the next process
            return scan() if self._saved is None or count < self.SYNC_BELOW else \
                self._saved.keep_translations(store, count, scan)

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
