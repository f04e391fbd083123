"""E6 sparse: the lexical space, BM25-scored (docs/decisions.md#d21). Terms come from the shared analyzer
(retrieval/analyzer.py: identifiers split on snake_case/camelCase/dots and also kept whole, words lower-cased and
lightly stemmed, English function words dropped), each hashed into 2¹⁸ buckets with CRC-32 (stable across
processes and machines, unlike Python's salted `hash()`).

A bucket's value is the raw term frequency: BM25's saturation tf·(k1+1)/(tf + k1·(1 − b + b·dl/avgdl)) and its
idf depend on the store (document frequencies, average length) and on tuned k1/b, so the index applies them at
query time and stored vectors never go stale. A document's length dl is the sum of its values. At most
MAX_ACTIVE buckets are kept (a longer text keeps its most repeated terms). `similarity` (no index at hand) is the
plain dot product of frequencies; retrieval scores E6 through the index (storage/sparse_index.py)."""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np

from contextgraph.embedders.base import MemoryInput
from contextgraph.fingerprint import SPACES, Kind, Sparse
from contextgraph.retrieval.analyzer import analyze
from contextgraph.vectors import sparse_dot_scores

BUCKETS = 1 << 18
MAX_ACTIVE = 4096


def terms(text: str) -> list[str]:
    """The analyzer's terms of `text` (with repeats)."""
    return analyze(text)


def bucket(term: str) -> int:
    return zlib.crc32(term.encode("utf-8")) % BUCKETS


def tf_vector(keys: np.ndarray, cap: int | None = None) -> Sparse:
    """Sparse vector of raw counts per distinct key; with `cap`, the `cap` most frequent keys (ties: the smaller
    key)."""
    indices, counts = np.unique(np.asarray(keys, dtype=np.int64), return_counts=True)
    if cap is not None and len(indices) > cap:
        keep = np.sort(np.argsort(-counts, kind="stable")[:cap])
        indices, counts = indices[keep], counts[keep]
    return Sparse(indices.astype(np.int32), counts.astype(np.float32))


class SparseEmbedder:
    space = 6
    name = SPACES[5].name
    kind: Kind = "sparse"
    dim = BUCKETS
    method = (
        f"BM25 term frequencies over an identifier-splitting, stemming analyzer; CRC-32 into {BUCKETS} buckets, "
        f"raw tf stored (k1, b and idf applied by the index at query time), at most {MAX_ACTIVE} active"
    )

    def embed_text(self, text: str) -> Sparse:
        keys = np.fromiter((bucket(t) for t in terms(text)), dtype=np.int64)
        return tf_vector(keys, cap=MAX_ACTIVE)

    def embed_batch(self, items: Sequence[MemoryInput]) -> list[Sparse]:
        return [self.embed_text(item.text) for item in items]

    def similarity(self, query: Sparse, docs: Sequence[Sparse]) -> np.ndarray:
        return sparse_dot_scores(query, docs)
