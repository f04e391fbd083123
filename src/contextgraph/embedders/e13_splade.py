"""E13 splade: a SPLADE-shaped sparse vector over the tokenizer's own vocabulary (30,522 WordPiece ids for
MiniLM), without a SPLADE model: the value of each non-special token id is its raw count in the text, read
straight from the forward's token ids (no extra tokenisation). Like E6 it is BM25-scored by the index at query
time (docs/decisions.md#d21: saturation, length normalisation, idf from the live store): stored vectors never go stale
as the store grows. Tokens past the backbone's truncation are not seen. `similarity` (no index at hand) is the
plain dot product of counts. A real SPLADE model from a local directory is a future setting."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from contextgraph.embedders.base import Backbone, MemoryInput
from contextgraph.embedders.e06_sparse import tf_vector
from contextgraph.errors import EmbeddingError
from contextgraph.fingerprint import SPACES, Kind, Sparse
from contextgraph.vectors import sparse_dot_scores


class SpladeEmbedder:
    space = 13
    name = SPACES[12].name
    kind: Kind = "sparse"

    def __init__(self, backbone: Backbone) -> None:
        vocab_size = getattr(backbone, "vocab_size", None)  # both backbones here expose their tokenizer's
        if not vocab_size:
            raise EmbeddingError(f"backbone {backbone.model_name} does not report its vocabulary size")
        self.dim = int(vocab_size)
        self.method = (
            f"term frequencies of {backbone.model_name} WordPiece ids over its {self.dim}-token vocabulary "
            "(BM25 at query time)"
        )

    @staticmethod
    def from_ids(token_ids: np.ndarray) -> Sparse:
        """The vector of non-special token ids (what `embed` reads from the forward)."""
        return tf_vector(token_ids)

    def embed(self, item: MemoryInput) -> Sparse:
        encoded = item.encoded
        return self.from_ids(encoded.token_ids[~encoded.special])

    def embed_batch(self, items: Sequence[MemoryInput]) -> list[Sparse]:
        return [self.embed(item) for item in items]

    def similarity(self, query: Sparse, docs: Sequence[Sparse]) -> np.ndarray:
        return sparse_dot_scores(query, docs)
