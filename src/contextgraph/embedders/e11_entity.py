"""E11 entity: what a memory is about, by its named things. The entity mentions (`entities.entities`: URLs, paths,
versions, code identifiers, Capitalised Phrases) are each pooled from the shared forward's token states (mean
of the tokens inside the mention), and the vector is the normalised mean of the mentions, each mention counting
once. A text with no mention — or whose mentions fall past the truncation — falls back to its E1 vector, so
every memory has a usable E11 and entity-free texts compare as E1 does.

The (head, relation, tail) triples of the spec's TransE space come from `triples`; `triple_vectors` pools each
head and tail from the same forward pass, and the store keeps them beside the fingerprint (the closed-form
TransE translations are fitted from them by utl.transe)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from contextgraph.embedders.base import Backbone, MemoryInput
from contextgraph.embedders.e01_semantic import sentence_vector
from contextgraph.embedders.entities import entities, triples
from contextgraph.embedders.vectors import cosine_scores, l2_normalize, span_token_mask
from contextgraph.fingerprint import SPACES, Kind

__all__ = ["EntityEmbedder", "Triple", "entities", "triples"]


@dataclass(frozen=True, slots=True)
class Triple:
    head: str
    relation: str
    tail: str
    head_vector: np.ndarray  # unit norm, the head's pooled token states
    tail_vector: np.ndarray


class EntityEmbedder:
    space = 11
    name = SPACES[10].name
    kind: Kind = "dense"

    def __init__(self, backbone: Backbone) -> None:
        self.dim = backbone.hidden_size
        self.pooling = getattr(backbone, "pooling", "mean")
        self.method = (
            f"mean of entity mentions (URLs, paths, versions, identifiers, capitalised phrases) pooled from "
            f"{backbone.model_name} token states; E1 when a text has none"
        )

    def embed(self, item: MemoryInput) -> np.ndarray:
        encoded = item.encoded
        mentions = []
        for mention in entities(encoded.text):
            mask = span_token_mask(encoded.offsets, encoded.special, [(mention.start, mention.end)])
            if mask.any():
                mentions.append(l2_normalize(encoded.states[mask].mean(axis=0)))
        if not mentions:
            return sentence_vector(encoded, self.pooling)
        return l2_normalize(np.mean(mentions, axis=0))

    def embed_batch(self, items: Sequence[MemoryInput]) -> list[np.ndarray]:
        return [self.embed(item) for item in items]

    def similarity(self, query: np.ndarray, docs: Sequence[np.ndarray]) -> np.ndarray:
        return cosine_scores(query, docs)

    def triple_vectors(self, item: MemoryInput) -> list[Triple]:
        """The text's relation triples with head and tail vectors pooled from the forward pass (the first
        occurrence of each term; a term past the truncation has no tokens and its triple is dropped)."""
        encoded = item.encoded
        text = encoded.text
        out = []
        for head, relation, tail in triples(text):
            h_at = text.find(head)
            t_at = text.find(tail, h_at + len(head)) if h_at >= 0 else -1
            if h_at < 0 or t_at < 0:
                continue
            vectors = []
            for start, term in ((h_at, head), (t_at, tail)):
                mask = span_token_mask(encoded.offsets, encoded.special, [(start, start + len(term))])
                if not mask.any():
                    break
                vectors.append(l2_normalize(encoded.states[mask].mean(axis=0)).astype(np.float32))
            if len(vectors) == 2:
                out.append(Triple(head, relation, tail, vectors[0], vectors[1]))
        return out
