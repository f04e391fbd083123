"""E8 graph: one round of message passing over the memory graph. A memory's vector is its own E1 vector mixed
half and half with the edge-weighted mean of its neighbours' E1 vectors:

    v = normalise(½·e₁ + ½·Σ wᵢ nᵢ / Σ wᵢ)      (nᵢ each normalised first; v = e₁ with no neighbour or Σ wᵢ = 0)

so memories that sit in the same neighbourhood move toward each other. The neighbours come in with the input
(`MemoryInput.neighbours`); when a memory's edges change, the store recomputes this from stored E1 vectors
(`mix`), without another forward pass."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from contextgraph.embedders.base import Backbone, MemoryInput
from contextgraph.embedders.e01_semantic import sentence_vector
from contextgraph.errors import DimensionMismatch
from contextgraph.fingerprint import SPACES, Kind
from contextgraph.vectors import cosine_scores, l2_normalize

SELF_WEIGHT = 0.5


def mix(own: np.ndarray, neighbours: Sequence[tuple[float, np.ndarray]]) -> np.ndarray:
    """The E8 vector from a memory's E1 vector and its (edge weight, neighbour E1) pairs."""
    own = l2_normalize(own)
    weights = np.array([max(float(w), 0.0) for w, _ in neighbours], dtype=np.float32)
    if not len(neighbours) or weights.sum() <= 0.0:
        return own
    vectors = []
    for _, vector in neighbours:
        vector = np.asarray(vector, dtype=np.float32)
        if vector.shape != own.shape:
            raise DimensionMismatch(
                f"a neighbour's E1 vector has shape {vector.shape}, this model's E1 has {own.shape}",
                space=8, expected=list(own.shape), got=list(vector.shape),
            )
        vectors.append(vector)
    context = weights @ l2_normalize(np.stack(vectors)) / weights.sum()
    return l2_normalize(SELF_WEIGHT * own + (1.0 - SELF_WEIGHT) * context)


class GraphEmbedder:
    space = 8
    name = SPACES[7].name
    kind: Kind = "dense"

    def __init__(self, backbone: Backbone) -> None:
        self.dim = backbone.hidden_size
        self.pooling = getattr(backbone, "pooling", "mean")
        self.method = (
            f"one message-passing round: {SELF_WEIGHT:g}·own E1 + {1 - SELF_WEIGHT:g}·edge-weighted mean of "
            f"neighbours' E1 ({backbone.model_name})"
        )

    def embed_batch(self, items: Sequence[MemoryInput]) -> list[np.ndarray]:
        return [mix(sentence_vector(item.encoded, self.pooling), item.neighbours) for item in items]

    def similarity(self, query: np.ndarray, docs: Sequence[np.ndarray]) -> np.ndarray:
        return cosine_scores(query, docs)
