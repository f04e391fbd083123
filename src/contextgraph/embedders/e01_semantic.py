"""E1 semantic: the sentence embedding of the shared transformer, pooled exactly as sentence-transformers pools
the configured model (mean over every attended token, [CLS] and [SEP] included; or the [CLS] state), then
L2-normalised. The other model-based spaces mix or fall back to this vector."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from contextgraph.embedders.base import Backbone, Encoded, MemoryInput
from contextgraph.fingerprint import SPACES, Kind
from contextgraph.vectors import cosine_scores, l2_normalize


def sentence_vector(encoded: Encoded, pooling: str = "mean") -> np.ndarray:
    """The unit sentence vector of one encoded text. Mean pooling averages all real tokens: the backbone strips
    padding, and sentence-transformers' attention mask covers the special tokens too."""
    pooled = encoded.states[0] if pooling == "cls" else encoded.states.mean(axis=0)
    return l2_normalize(pooled)


class SemanticEmbedder:
    space = 1
    name = SPACES[0].name
    kind: Kind = "dense"

    def __init__(self, backbone: Backbone) -> None:
        self.pooling = getattr(backbone, "pooling", "mean")
        self.dim = backbone.hidden_size
        self.method = f"{backbone.model_name} {self.pooling}-pooled, L2-normalised ({backbone.runtime})"

    def embed(self, item: MemoryInput) -> np.ndarray:
        return sentence_vector(item.encoded, self.pooling)

    def embed_batch(self, items: Sequence[MemoryInput]) -> list[np.ndarray]:
        return [self.embed(item) for item in items]

    def similarity(self, query: np.ndarray, docs: Sequence[np.ndarray]) -> np.ndarray:
        return cosine_scores(query, docs)
