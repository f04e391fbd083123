"""An inverted index for one sparse space (E6 hashed buckets, E13 WordPiece ids); labels are memory seqs.

Each term owns two append-only arrays (document slots, weights) with spare capacity, so adding a document is a
few scalar writes per term. Documents get dense slots 0..n-1 so that scoring accumulates each query term's
postings into one dense score array. A delete is a tombstone on the slot, skipped when scoring and dropped by
`compact()` once tombstones pile up.

The embedders give raw term frequencies; the index scores them with Okapi BM25 at query time (docs/storage.md), from
the live statistics, over the query's distinct terms:

    score(d) = Σ_t idf_t · tf_td·(k1 + 1) / (tf_td + k1·(1 − b + b·dl_d/avgdl)),
    idf_t = ln(1 + (N − df_t + 0.5) / (df_t + 0.5))          (the Lucene/bm25s form: never negative)

dl_d is the sum of the document's stored frequencies and avgdl the mean over live documents; both are kept
incrementally (add/remove) and recomputed from the postings on load, so a saved or rebuilt index needs no extra
state. k1 and b are the caller's (retrieval settings), per call.

A cache, rebuildable from the store. Not thread-safe for mutation: IndexSet serialises mutation against searches.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path

import numpy as np

from contextgraph.fingerprint import Sparse
from contextgraph.storage.seq_map import SeqMap

_EMPTY_I = np.zeros(0, dtype=np.int32)
_EMPTY_F = np.zeros(0, dtype=np.float32)
_COMPACT_MIN = 1024  # tombstones before compaction is considered ...
_COMPACT_SHARE = 0.25  # ... and the share of all slots they must reach
_GROW_BY_QUARTER = 4096  # postings from which a full list grows by 25 % rather than doubling
K1, B = 1.2, 0.75  # BM25 defaults; retrieval passes its tuned settings


def _norm(k1: float, b: float, avgdl: float) -> tuple[float, float]:
    """BM25's length normalisation k1·(1 − b + b·dl/avgdl) as base + slope·dl."""
    return k1 * (1.0 - b), (k1 * b / avgdl) if avgdl > 0 else 0.0


def bm25_scores(query_terms: np.ndarray, term_idf: np.ndarray, docs: Sequence[Sparse], avgdl: float,
                k1: float = K1, b: float = B) -> np.ndarray:
    """float64 [len(docs)]: the BM25 score of each document for the distinct `query_terms` (ascending) with their
    `term_idf`, given the collection's avgdl (0 → the documents' own mean). The one scoring of given documents
    that both backends use (SparseIndex.score, and PostgreSQL's postings), so their scores cannot drift apart."""
    out = np.zeros(len(docs))
    if not len(query_terms) or not len(docs):
        return out
    lengths = np.fromiter((len(d) for d in docs), dtype=np.int64, count=len(docs))
    if not lengths.sum():
        return out
    terms = np.concatenate([d.indices for d in docs]).astype(np.int64)
    tf = np.concatenate([d.values for d in docs]).astype(np.float64)
    owner = np.repeat(np.arange(len(docs)), lengths)
    dl = np.bincount(owner, weights=tf, minlength=len(docs))
    base, slope = _norm(k1, b, avgdl or float(dl.mean()) or 1.0)
    pos = np.minimum(np.searchsorted(query_terms, terms), len(query_terms) - 1)
    hit = query_terms[pos] == terms
    tf_hit, owner_hit = tf[hit], owner[hit]
    part = term_idf[pos[hit]] * (k1 + 1) * tf_hit / (tf_hit + base + slope * dl[owner_hit])
    return np.bincount(owner_hit, weights=part, minlength=len(docs))


class SparseIndex:
    def __init__(self) -> None:
        self._docs: list[np.ndarray] = []  # per term: int32 slots; capacity = len(array), used = self._used[t]
        self._wts: list[np.ndarray] = []  # per term: float32 weights, same layout
        self._used: list[int] = []
        self._seq = np.zeros(1024, dtype=np.int64)  # slot → seq
        self._len = np.zeros(1024, dtype=np.float64)  # slot → document length (sum of its frequencies)
        self._live_len = 0.0  # total length of the live documents
        self._dead = np.zeros(1024, dtype=bool)  # slot → tombstoned
        self._slots = 0
        self._n_dead = 0
        self._slot_of = SeqMap()  # seq → slot, live documents only

    def __len__(self) -> int:
        return len(self._slot_of)

    # --- mutation ----------------------------------------------------------------------------------------------

    def _grow_terms(self, top: int) -> None:
        extra = top - len(self._docs)
        if extra > 0:
            self._docs.extend([_EMPTY_I] * extra)
            self._wts.extend([_EMPTY_F] * extra)
            self._used.extend([0] * extra)

    def _reserve(self, term: int, n: int) -> tuple[np.ndarray, np.ndarray, int]:
        """(slots array, weights array, first free position) of `term`, with room for n more postings."""
        used = self._used[term]
        docs, wts = self._docs[term], self._wts[term]
        if used + n > len(docs):
            cap = max(used + n, _grown_capacity(len(docs)))
            grown_d = np.empty(cap, dtype=np.int32)
            grown_w = np.empty(cap, dtype=np.float32)
            grown_d[:used] = docs[:used]
            grown_w[:used] = wts[:used]
            self._docs[term] = docs = grown_d
            self._wts[term] = wts = grown_w
        self._used[term] = used + n
        return docs, wts, used

    def add(self, seqs: Sequence[int], vectors: Sequence[Sparse]) -> None:
        for seq in seqs:
            if seq in self._slot_of:  # re-adding replaces
                self.remove(seq)
        n = len(seqs)
        if not n:
            return
        first = self._slots
        if first + n > len(self._seq):
            cap = max(first + n, 2 * len(self._seq))
            self._seq = np.resize(self._seq, cap)
            self._len = np.concatenate([self._len[:first], np.zeros(cap - first)])
            self._dead = np.concatenate([self._dead[:first], np.zeros(cap - first, dtype=bool)])
        self._seq[first : first + n] = seqs
        self._slots += n
        for i, seq in enumerate(seqs):
            self._slot_of[int(seq)] = first + i
        lengths = np.fromiter((float(np.sum(v.values, dtype=np.float64)) for v in vectors), dtype=np.float64,
                              count=n)
        self._len[first : first + n] = lengths
        self._live_len += float(lengths.sum())
        if n == 1:  # the common case (one memory stored): scalar writes, no sorting
            v = vectors[0]
            if len(v):
                self._grow_terms(int(v.indices.max()) + 1)
                for t, w in zip(v.indices.tolist(), v.values.tolist()):
                    docs, wts, at = self._reserve(t, 1)
                    docs[at] = first
                    wts[at] = w
            return
        # a batch (rebuild, catch-up): group the postings by term, then one slice append per term
        lengths = np.fromiter((len(v) for v in vectors), dtype=np.int64, count=n)
        if not lengths.sum():
            return
        terms = np.concatenate([v.indices for v in vectors]).astype(np.int64)
        weights = np.concatenate([v.values for v in vectors]).astype(np.float32)
        slots = np.repeat(np.arange(first, first + n, dtype=np.int32), lengths)
        order = np.argsort(terms, kind="stable")
        terms, weights, slots = terms[order], weights[order], slots[order]
        self._grow_terms(int(terms[-1]) + 1)
        bounds = np.flatnonzero(np.diff(terms)) + 1
        starts = np.concatenate([[0], bounds]).tolist()
        ends = np.concatenate([bounds, [len(terms)]]).tolist()
        for t, a, b in zip(terms[starts].tolist(), starts, ends):
            docs, wts, at = self._reserve(t, b - a)
            docs[at : at + b - a] = slots[a:b]
            wts[at : at + b - a] = weights[a:b]

    def remove(self, seq: int) -> None:
        slot = self._slot_of.pop(seq)
        if slot is None:
            return
        self._dead[slot] = True
        self._live_len = max(0.0, self._live_len - float(self._len[slot]))
        self._n_dead += 1
        if self._n_dead >= _COMPACT_MIN and self._n_dead >= _COMPACT_SHARE * self._slots:
            self.compact()

    def compact(self) -> None:
        """Drop tombstoned postings and renumber slots densely (O(postings))."""
        if not self._n_dead:
            return
        keep = ~self._dead[: self._slots]
        renumber = (np.cumsum(keep) - 1).astype(np.int32)
        for t, used in enumerate(self._used):
            if used:
                docs = self._docs[t][:used]
                live = keep[docs]
                self._docs[t] = renumber[docs[live]]
                self._wts[t] = self._wts[t][:used][live]
                self._used[t] = len(self._docs[t])
        seqs = self._seq[: self._slots][keep]
        lengths = self._len[: self._slots][keep]
        self._slots = len(seqs)
        self._seq = np.resize(seqs, max(1024, self._slots))
        self._len = np.concatenate([lengths, np.zeros(len(self._seq) - self._slots)])
        self._live_len = float(lengths.sum())
        self._dead = np.zeros(len(self._seq), dtype=bool)
        self._n_dead = 0
        self._slot_of = SeqMap.of(seqs)

    # --- scoring -----------------------------------------------------------------------------------------------

    def _df(self, term: int) -> int:
        """Live documents containing `term` (tombstoned postings are not counted)."""
        used = self._used[term] if 0 <= term < len(self._used) else 0
        if used and self._n_dead:
            used -= int(np.count_nonzero(self._dead[self._docs[term][:used]]))
        return used

    def idf(self, terms: np.ndarray) -> np.ndarray:
        """float64 idf of each term (a term in no document gets the largest idf)."""
        df = np.array([self._df(t) for t in np.asarray(terms).tolist()], dtype=np.float64)
        return np.log1p((len(self._slot_of) - df + 0.5) / (df + 0.5))

    def avgdl(self) -> float:
        return self._live_len / len(self._slot_of) if len(self._slot_of) else 0.0

    def search(self, query: Sparse, k: int, max_df: float = 1.0, *, k1: float = K1, b: float = B
               ) -> list[tuple[int, float]]:
        """The k best documents by BM25 as (seq, score), best first, ties by seq; only documents sharing a term.
        `max_df` < 1 skips query terms found in more than that fraction of the documents (a candidate
        pre-filter's shortcut: their postings are the longest and their idf the smallest) unless that would
        skip them all."""
        if k <= 0 or not len(self._slot_of):
            return []
        scores = np.zeros(self._slots)
        terms = np.asarray(query.indices)
        idf = self.idf(terms)
        if max_df < 1.0 and len(terms):
            df = np.array([self._df(t) for t in terms.tolist()], dtype=np.float64)
            keep = df <= max_df * len(self._slot_of)
            if keep.any():
                terms, idf = terms[keep], idf[keep]
        base, slope = _norm(k1, b, self.avgdl())
        for t, w_idf in zip(terms.tolist(), idf.tolist()):
            used = self._used[t] if 0 <= t < len(self._used) else 0
            if used:
                # a document occurs once per term, so a fancy-index add is exact (no np.add.at needed)
                docs = self._docs[t][:used]
                tf = self._wts[t][:used].astype(np.float64)
                scores[docs] += (w_idf * (k1 + 1)) * tf / (tf + base + slope * self._len[docs])
        cand = np.flatnonzero(scores)  # a document with no shared term scores exactly 0
        if self._n_dead:
            cand = cand[~self._dead[cand]]
        neg = -scores[cand]
        if len(cand) > k:  # everything scoring as high as the k-th, then (score, seq) order: ties are stable
            keep = neg <= np.partition(neg, k - 1)[k - 1]
            cand, neg = cand[keep], neg[keep]
        cand = cand[np.lexsort((self._seq[cand], neg))][:k]
        return list(zip(self._seq[cand].tolist(), scores[cand].tolist()))

    def score(self, query: Sparse, docs: Sequence[Sparse], *, k1: float = K1, b: float = B) -> np.ndarray:
        """float64 [len(docs)]: the same BM25 score as `search` for given documents (indexed or not), e.g. the
        candidates of a fused retrieval; the collection statistics (df, avgdl) are this index's."""
        q_terms = np.unique(np.asarray(query.indices, dtype=np.int64))
        return bm25_scores(q_terms, self.idf(q_terms), docs, self.avgdl(), k1, b)

    # --- persistence -------------------------------------------------------------------------------------------

    def save(self, path: Path | str) -> None:
        """One .npz in CSR form (live postings only, slots renumbered); does not modify the index."""
        keep = ~self._dead[: self._slots]
        renumber = (np.cumsum(keep) - 1).astype(np.int32)
        counts = np.zeros(len(self._used), dtype=np.int64)
        docs, wts = [], []
        for t, used in enumerate(self._used):
            if used:
                d = self._docs[t][:used]
                live = keep[d]
                docs.append(renumber[d[live]])
                wts.append(self._wts[t][:used][live])
                counts[t] = len(docs[-1])
        with open(path, "wb") as f:
            np.savez(
                f,
                indptr=np.concatenate([[0], np.cumsum(counts)]),
                docs=np.concatenate(docs) if docs else _EMPTY_I,
                weights=np.concatenate(wts) if wts else _EMPTY_F,
                seqs=self._seq[: self._slots][keep],
            )

    @classmethod
    def load(cls, path: Path | str) -> SparseIndex:
        with np.load(path) as data:
            indptr, docs, wts, seqs = data["indptr"], data["docs"], data["weights"], data["seqs"]
        _check_loaded(indptr, docs, wts, seqs)  # a damaged file fails here, not in some later search
        self = cls()
        bounds = indptr.tolist()
        self._docs, self._wts = _owned(docs, bounds, _EMPTY_I), _owned(wts, bounds, _EMPTY_F)
        self._used = np.diff(indptr).tolist()
        self._slots = len(seqs)
        self._seq = np.resize(seqs.astype(np.int64), max(1024, self._slots))
        self._len = np.zeros(len(self._seq))
        self._len[: self._slots] = np.bincount(docs, weights=wts, minlength=self._slots)[: self._slots]
        self._live_len = float(self._len.sum())
        self._dead = np.zeros(len(self._seq), dtype=bool)
        self._slot_of = SeqMap.of(seqs)
        return self


def _grown_capacity(capacity: int) -> int:
    """A full posting list's next capacity: doubled while short, a quarter more once long (at 1M memories a
    common term holds ~10^5-10^6 postings, and doubling those added ~1 GB of spare room within a hundred
    stores: benchmarks/README)."""
    return max(capacity + (capacity if capacity < _GROW_BY_QUARTER else capacity // 4), 4)


def _owned(flat: np.ndarray, bounds: list[int], empty: np.ndarray) -> list[np.ndarray]:
    """Each term's slice of a loaded CSR array as an array of its own, a long one with its spare room already
    (_grown_capacity). Views would cost nothing here, but the first append to each would copy it, on the request
    path (up to ~180 ms for one memory's terms at 1M), while the views kept the whole loaded array alive."""
    out = []
    for a, b in pairwise(bounds):
        n = b - a
        if n <= 0:
            out.append(empty)
        elif n < _GROW_BY_QUARTER:
            out.append(flat[a:b].copy())
        else:
            own = np.empty(_grown_capacity(n), dtype=flat.dtype)
            own[:n] = flat[a:b]
            out.append(own)
    return out


def _check_loaded(indptr: np.ndarray, docs: np.ndarray, wts: np.ndarray, seqs: np.ndarray) -> None:
    """The CSR arrays of a saved index agree with each other, or ValueError (IndexSet then rebuilds)."""
    if indptr.ndim != 1 or not len(indptr) or indptr[0] != 0 or np.any(np.diff(indptr) < 0):
        raise ValueError("sparse index: indptr is not a non-decreasing offset array from 0")
    if not (docs.ndim == wts.ndim == seqs.ndim == 1) or int(indptr[-1]) != len(docs) or len(docs) != len(wts):
        raise ValueError("sparse index: postings and offsets disagree")
    if len(docs) and (int(docs.min()) < 0 or int(docs.max()) >= len(seqs)):
        raise ValueError("sparse index: a posting names a document that is not there")
