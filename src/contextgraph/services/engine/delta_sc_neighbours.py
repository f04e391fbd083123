"""The UTL's neighbourhood (services.delta_sc): per space the 2k nearest stored memories and their fingerprints.

index_neighbours  every indexed space's own index (E12, which has none, borrows E1's order), searched after one
                  catch-up under one read lock where the indexes offer nearest_many (E2-E4 by the timeline's
                  closeness, the index's stand-in for their cosine: the UTL scores the neighbours itself); E6/E13 skip
                  query terms found in more than `sparse_max_df` of the memories, as search_graph's stage 1 does
                  (their postings are the longest and their idf the smallest: the neighbourhood's cost at 10K),
                  unless that leaves fewer than `want` hits (a small store, where every term is that common)
rank_within       a pool the caller already holds, ranked per space by the space's own similarity (as the caller
                  measured it, when it did). search_graph scores its query's UTL for the pulse (docs/utl.md) against
                  the memories it answers with, so the index searches and the neighbourhood read (most of the
                  UTL's cost) are skipped, and ΔS/ΔC say how novel the query is against its answer and how
                  coherent that answer is around it; retrieval has measured their similarities to the query
ranked_coherence  connectivity and ClusterFit (the weighted clustering coefficient of the memory with its nearest,
                  nearest_between) before they stand against the store; E6/E13 by idf-weighted term overlap
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from contextgraph.fingerprint import SPACES, Fingerprint, sparse
from contextgraph.retrieval.similarity import space_similarities
from contextgraph.storage.indexes import INDEXED_SPACES
from contextgraph.utl import delta_c as dc

LATE_INTERACTION, SEMANTIC = 12, 1
SPARSE_SPACES = (6, 13)
Neighbourhood = tuple[dict[int, list[int]], dict[int, Fingerprint]]  # (space → seqs best first, seq → fingerprint)


def index_neighbours(store: Any, indexes: Any, fingerprint: Fingerprint, exclude: frozenset[int], want: int,
                     sparse_max_df: float) -> Neighbourhood:
    """The `want` nearest of every indexed space, `exclude` left out, and the fingerprints of their union (read
    once)."""
    hits = _Hits(indexes, fingerprint, want, len(exclude), sparse_max_df)
    return _read(store, hits.ranked(exclude, want), None)


def index_neighbours_twice(store: Any, indexes: Any, fingerprint: Fingerprint, own: int,
                           topic: frozenset[int] | None, want: int, sparse_max_df: float,
                           cache: dict[int, Fingerprint] | None = None) -> tuple[Neighbourhood, Neighbourhood | None]:
    """index_neighbours of a stored memory without itself (`own`) and without its whole topic (`topic`, and
    `own`; None: not asked): the leave-one-out's two passes, from one search of every index. Each pass's hits
    are a prefix of the larger search's (HNSW's to its recall), and E6/E13 fall back to all terms just where
    index_neighbours alone would, so both are what two calls gave, for the cost of one; but E8/E10, re-scored
    from one pool large enough for both passes, may find nearer ones for the first."""
    everything = frozenset({own}) | (topic or frozenset())
    hits = _Hits(indexes, fingerprint, want, len(everything), sparse_max_df)
    own_pass = _read(store, hits.ranked(frozenset({own}), want), cache)
    return own_pass, (None if topic is None else _read(store, hits.ranked(everything, want), cache))


class _Hits:
    """Every indexed space's `want` + `dropped` nearest of a fingerprint, searched once (E2-E4 by closeness:
    nearest_many), and E6/E13's over all their terms when a pass needs more hits than the common terms left (a
    small store, where every term is in more than max_df of it), searched once more if so."""

    def __init__(self, indexes: Any, fingerprint: Fingerprint, want: int, dropped: int, max_df: float) -> None:
        k = want + dropped  # `dropped` of them the passes leave out
        self.indexes, self.k, self.max_df = indexes, k, max_df
        self.queries = {space: fingerprint[space] for space in INDEXED_SPACES}
        many = getattr(indexes, "nearest_many", None)
        self.found = (many(self.queries, k, max_df, dropped) if many is not None else
                      {space: indexes.search(space, q, k, max_df) for space, q in self.queries.items()})
        self._all_terms: dict[int, list[tuple[int, float]]] = {}

    def ranked(self, exclude: frozenset[int], want: int) -> dict[int, list[int]]:
        k = want + len(exclude)  # what index_neighbours asks each index for, with this `exclude`
        out = {}
        for space, hits in self.found.items():
            if space in SPARSE_SPACES and len(hits) < k and self.max_df < 1.0:
                if space not in self._all_terms:
                    self._all_terms[space] = self.indexes.search(space, self.queries[space], self.k, 1.0)
                hits = self._all_terms[space]
            out[space] = [seq for seq, _ in hits[:k] if seq not in exclude][:want]
        out[LATE_INTERACTION] = out[SEMANTIC]
        return out


def _read(store: Any, ranked: dict[int, list[int]], cache: dict[int, Fingerprint] | None) -> Neighbourhood:
    """The ranked neighbours' fingerprints: one read of their union (the spaces share most neighbours, and
    inject_context ranks its related memories from this same neighbourhood, Retriever.rank, without reading it
    again); from `cache`, and into it, when given."""
    union = list(dict.fromkeys(seq for seqs in ranked.values() for seq in seqs))
    if cache is None:
        return ranked, {seq: fp for seq, fp in zip(union, store.fingerprints(union)) if fp is not None}
    missing = [seq for seq in union if seq not in cache]
    cache.update((seq, fp) for seq, fp in zip(missing, store.fingerprints(missing)) if fp is not None)
    return ranked, {seq: cache[seq] for seq in union if seq in cache}


def rank_within(by_space: Mapping[int, Any], fingerprint: Fingerprint, pool: Mapping[int, Fingerprint],
                want: int, exclude: frozenset[int] = frozenset(),
                similarities: Mapping[int, np.ndarray] | None = None) -> tuple[dict[int, list[int]],
                                                                                dict[int, Fingerprint],
                                                                                dict[int, np.ndarray]]:
    """The `want` most similar of `pool` per space (`exclude` left out): the shape of index_neighbours, plus
    each ranked list's similarities (space_similarities, best first), which the UTL then need not recompute.
    `similarities` ({seq: [13]}, E1..E13, as retrieval.similarity.context_similarities gives them): each pooled
    memory's similarities to `fingerprint` when the caller has measured them already (search_graph's retrieval
    did, for its answer's agreements); computed here the same way when absent or missing a pooled memory."""
    kept = {seq: fp for seq, fp in pool.items() if seq not in exclude}
    seqs = list(kept)
    fps = [kept[s] for s in seqs]
    known = None
    if similarities is not None and all(s in similarities for s in seqs):
        known = np.array([similarities[s] for s in seqs], dtype=np.float64).reshape(len(seqs), len(SPACES))
    ranked: dict[int, list[int]] = {}
    scores: dict[int, np.ndarray] = {}
    for space in SPACES:
        if space.id == LATE_INTERACTION:
            continue
        sims = known[:, space.id - 1] if known is not None else space_similarities(by_space, space, fingerprint, fps)
        best = np.argsort(-sims, kind="stable")[:want]
        ranked[space.id] = [seqs[i] for i in best.tolist()]
        scores[space.id] = sims[best]
    ranked[LATE_INTERACTION] = ranked[SEMANTIC]
    return ranked, kept, scores


def nearest_between(similar: Callable[[Fingerprint, list[Fingerprint]], np.ndarray], fps: list[Fingerprint],
                    sims: np.ndarray, k: int, skip: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The `k` nearest of `fps` by `sims` (the memory's similarities to them) after the `skip` nearest: those
    similarities, best first, and the neighbours' similarities to each other by `similar` (one against a list) [k, k]
    (diagonal 1), the triangles ClusterFit weighs (utl.delta_c.weighted_clustering). k − 1 calls of `similar`: each
    neighbour against the ones after it."""
    s = np.nan_to_num(np.asarray(sims, dtype=np.float64).ravel(), nan=-1.0)
    order = np.argsort(-s, kind="stable")[skip : skip + max(k, 0)]
    near = [fps[i] for i in order.tolist()]
    between = np.eye(len(near))
    for j in range(len(near) - 1):
        between[j, j + 1 :] = between[j + 1 :, j] = similar(near[j], near[j + 1 :])
    return s[order], between


def ranked_coherence(by_space: Mapping[int, Any], space: Any, idf_of: Callable[[int, np.ndarray], np.ndarray],
                     fp: Fingerprint, fps: list[Fingerprint], sims: np.ndarray, k: int) -> tuple[float, float]:
    """(connectivity, ClusterFit) of `fp` in one space before they stand against the store's leave-one-out values:
    the closeness of its 2nd to (k+1)-th nearest and its weighted clustering coefficient with them (utl.delta_c),
    the single nearest left out of both (whether the memory restates one is ΔS's d₁). `sims`: its similarities to
    `fps` in the space's own measure; E6/E13 compare term sets idf-weighted instead (`idf_of(space, terms)`, the
    store model's idf; utl.delta_c.weighted_jaccard)."""
    if space.id in SPARSE_SPACES:
        sid = space.id

        def similar(a: Fingerprint, bs: list[Fingerprint]) -> np.ndarray:
            return dc.weighted_jaccard(sparse(a[sid]).indices, [sparse(b[sid]).indices for b in bs],
                                       lambda t: idf_of(sid, t))

        sims = similar(fp, fps)
    else:
        def similar(a: Fingerprint, bs: list[Fingerprint]) -> np.ndarray:
            return space_similarities(by_space, space, a, bs)
    near, between = nearest_between(similar, fps, sims, k, skip=1)
    return dc.neighbourhood_closeness(sims, k), dc.weighted_clustering(near, between)
