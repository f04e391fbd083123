"""E13 splade: a SPLADE-shaped sparse vector over the tokenizer's own vocabulary (30,522 WordPiece ids for
MiniLM), without a SPLADE model: the value of each non-special token id is log(1 + tf), tf its count in the
text, read straight from the forward's token ids (no extra tokenisation). As with E6, idf is applied by the index
at query time, so stored vectors never go stale as the store grows. Tokens past the backbone's truncation are
not seen. Similarity is the sparse dot product. A real SPLADE model from a local directory is a future setting."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from contextgraph.embedders.base import Backbone, MemoryInput
from contextgraph.embedders.vectors import sparse_dot_scores, sparse_from_counts
from contextgraph.errors import EmbeddingError
from contextgraph.fingerprint import SPACES, Kind, Sparse


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
            f"log(1+tf) of {backbone.model_name} WordPiece ids over its {self.dim}-token vocabulary "
            "(idf at query time)"
        )

    def embed(self, item: MemoryInput) -> Sparse:
        encoded = item.encoded
        return sparse_from_counts(encoded.token_ids[~encoded.special])

    def embed_batch(self, items: Sequence[MemoryInput]) -> list[Sparse]:
        return [self.embed(item) for item in items]

    def similarity(self, query: Sparse, docs: Sequence[Sparse]) -> np.ndarray:
        return sparse_dot_scores(query, docs)
