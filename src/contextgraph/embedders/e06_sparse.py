"""E6 sparse: hashed lexical features — lowercased word unigrams and adjacent-word bigrams, each hashed into
2¹⁵ buckets with CRC-32 (stable across processes and machines, unlike Python's salted `hash()`).

A bucket's value is log(1 + tf), tf its count in the text. The idf factor of TF-IDF is not baked in: it changes
as the store grows, so the index multiplies the query's values by idf at query time, and the stored vectors
never go stale. At most 5% of the buckets are kept (the heaviest 1,638); a longer text keeps its most repeated
terms. Similarity is the sparse dot product."""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from itertools import pairwise

import numpy as np

from contextgraph.embedders.base import MemoryInput
from contextgraph.embedders.vectors import sparse_dot_scores, sparse_from_counts
from contextgraph.fingerprint import SPACES, Kind, Sparse

BUCKETS = 1 << 15
MAX_ACTIVE = int(BUCKETS * 0.05)  # 1638
_WORD = re.compile(r"\w+")


def terms(text: str) -> list[str]:
    """Unigrams and bigrams ("a b"): a bigram holds a space, so it never collides with a unigram's string."""
    words = _WORD.findall(text.lower())
    return words + [f"{a} {b}" for a, b in pairwise(words)]


def bucket(term: str) -> int:
    return zlib.crc32(term.encode("utf-8")) % BUCKETS


class SparseEmbedder:
    space = 6
    name = SPACES[5].name
    kind: Kind = "sparse"
    dim = BUCKETS
    method = (
        f"hashed unigram+bigram term frequencies, CRC-32 into {BUCKETS} buckets, log(1+tf) "
        f"(idf applied by the index at query time), at most {MAX_ACTIVE} active"
    )

    def embed_text(self, text: str) -> Sparse:
        keys = np.fromiter((bucket(t) for t in terms(text)), dtype=np.int64)
        return sparse_from_counts(keys, cap=MAX_ACTIVE)

    def embed_batch(self, items: Sequence[MemoryInput]) -> list[Sparse]:
        return [self.embed_text(item.text) for item in items]

    def similarity(self, query: Sparse, docs: Sequence[Sparse]) -> np.ndarray:
        return sparse_dot_scores(query, docs)
