"""E10 multimodal: for text (the only modality this default embeds), the E1 vector carried in its modality's
subspace — the modality's one-hot (over fingerprint.MODALITIES) appended at weight 0.5 and the whole
renormalised. The same content stored as "text" and as "code" then has cosine 1/(1 + 0.5²) = 0.8, different
content of one modality keeps E1's ordering, and a search can favour one modality. A CLIP-style model from a
local directory, which would also embed images, is a future configuration; it is not built here."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from contextgraph.embedders.base import Backbone, MemoryInput
from contextgraph.embedders.e01_semantic import sentence_vector
from contextgraph.errors import InvalidParams
from contextgraph.fingerprint import MODALITIES, SPACES, Kind
from contextgraph.vectors import cosine_scores, l2_normalize

MODALITY_WEIGHT = 0.5


def modality_one_hot(modality: str) -> np.ndarray:
    if modality not in MODALITIES:
        raise InvalidParams(
            f"unknown modality {modality!r}; allowed: {', '.join(MODALITIES)}",
            field="modality", allowed=list(MODALITIES),
        )
    one_hot = np.zeros(len(MODALITIES), dtype=np.float32)
    one_hot[MODALITIES.index(modality)] = 1.0
    return one_hot


class MultimodalEmbedder:
    space = 10
    name = SPACES[9].name
    kind: Kind = "dense"

    def __init__(self, backbone: Backbone) -> None:
        self.dim = backbone.hidden_size + len(MODALITIES)
        self.pooling = getattr(backbone, "pooling", "mean")
        self.method = (
            f"E1 ({backbone.model_name}) + modality subspace: one-hot of {len(MODALITIES)} modalities "
            f"at weight {MODALITY_WEIGHT:g}, renormalised (text only; no CLIP model configured)"
        )

    def embed(self, item: MemoryInput) -> np.ndarray:
        e1 = sentence_vector(item.encoded, self.pooling)
        return l2_normalize(np.concatenate([e1, MODALITY_WEIGHT * modality_one_hot(item.modality)]))

    def embed_batch(self, items: Sequence[MemoryInput]) -> list[np.ndarray]:
        return [self.embed(item) for item in items]

    def similarity(self, query: np.ndarray, docs: Sequence[np.ndarray]) -> np.ndarray:
        return cosine_scores(query, docs)
