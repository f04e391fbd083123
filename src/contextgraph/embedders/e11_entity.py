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
from functools import cache

import numpy as np
from threadpoolctl import ThreadpoolController

from contextgraph.embedders import token_spans
from contextgraph.embedders.base import Backbone, Encoded, MemoryInput
from contextgraph.embedders.e01_semantic import sentence_vector
from contextgraph.embedders.entities import Entity, entities, triples
from contextgraph.fingerprint import SPACES, Kind
from contextgraph.vectors import cosine_scores, l2_normalize, span_token_mask

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
        return self.embed_batch([item])[0]

    def embed_batch(self, items: Sequence[MemoryInput]) -> list[np.ndarray]:
        return self.embed_with_triples(items, with_triples=False)[0]

    def embed_with_triples(self, items: Sequence[MemoryInput], with_triples: bool = True
                           ) -> tuple[list[np.ndarray], list[list[Triple]]]:
        """Each item's E11 vector and (with_triples) its relation triples, from one search for its entity
        mentions: the pipeline's vectors and triples come from the same pass over the text."""
        vectors, found = [], []
        # one BLAS thread for the span products ([a few dozen spans, ~150 tokens] each): a multi-threaded
        # OpenBLAS spent 2-3.5x the single-threaded time on them when the caller had not limited it (a bare
        # pipeline, a benchmark) and another process was busy; the server limits it for the whole process.
        # Through one cached controller: a fresh threadpool_limits inspects the loaded libraries (~0.3 ms)
        with _blas().limit(limits=1, user_api="blas"):
            for item in items:
                mentions = entities(item.text)
                pooled = _SpanPool(item.encoded)
                vectors.append(self._vector(item, pooled, mentions))
                found.append(self._triples(pooled, mentions) if with_triples else [])
        return vectors, found

    def _vector(self, item: MemoryInput, pooled: _SpanPool, mentions: list[Entity]) -> np.ndarray:
        vectors = pooled.means([(m.start, m.end) for m in mentions])
        if not len(vectors):
            return sentence_vector(item.encoded, self.pooling)
        return l2_normalize(l2_normalize(vectors).mean(axis=0))

    def similarity(self, query: np.ndarray, docs: Sequence[np.ndarray]) -> np.ndarray:
        return cosine_scores(query, docs)

    def triple_vectors(self, item: MemoryInput) -> list[Triple]:
        """The text's relation triples with head and tail vectors pooled from the forward pass (the first
        occurrence of each term; a term past the truncation has no tokens and its triple is dropped)."""
        return self._triples(_SpanPool(item.encoded), entities(item.text))

    @staticmethod
    def _triples(pooled: _SpanPool, mentions: list[Entity]) -> list[Triple]:
        text = pooled.encoded.text
        placed = []
        for head, relation, tail in triples(text, mentions):
            h_at = text.find(head)
            t_at = text.find(tail, h_at + len(head)) if h_at >= 0 else -1
            if h_at >= 0 and t_at >= 0:
                placed.append((head, relation, tail, (h_at, h_at + len(head)), (t_at, t_at + len(tail))))
        if not placed:
            return []
        spans = [span for *_terms, h, t in placed for span in (h, t)]
        covered, means = pooled.covered(spans), pooled.all_means(spans)
        vectors = l2_normalize(means)
        return [Triple(head, relation, tail, vectors[2 * i], vectors[2 * i + 1])
                for i, (head, relation, tail, _h, _t) in enumerate(placed) if covered[2 * i] and covered[2 * i + 1]]


@cache
def _blas() -> ThreadpoolController:
    return ThreadpoolController()


class _SpanPool:
    """Mean token states over character spans of one encoded text, for many spans at once: each span's tokens
    are a contiguous range (token_spans), averaged by one product of a [spans, tokens] weight matrix with the
    states. (Running sums over the states cost a float64 cumsum of the whole [T, H] array per text, ~0.8 ms, for
    the few dozen spans a text has; the product is a few microseconds of BLAS and has no cancellation.)"""

    def __init__(self, encoded: Encoded) -> None:
        self.encoded = encoded
        self._ordered = token_spans.ordered(encoded.offsets, encoded.special)
        self._real: np.ndarray | None = None  # the non-special tokens' states, float32 [T', H]

    def covered(self, spans: list[tuple[int, int]]) -> np.ndarray:
        """bool per span: does any non-special token overlap it?"""
        if not spans:
            return np.zeros(0, dtype=bool)
        if not self._ordered:
            e = self.encoded
            return np.array([span_token_mask(e.offsets, e.special, [s]).any() for s in spans], dtype=bool)
        first, stop = token_spans.span_ranges(self.encoded.offsets, self.encoded.special, spans)
        return stop > first

    def all_means(self, spans: list[tuple[int, int]]) -> np.ndarray:
        """float32 [len(spans), H]: each span's mean token state (zeros for a span no token overlaps)."""
        e = self.encoded
        if not self._ordered:
            rows = []
            for span in spans:
                mask = span_token_mask(e.offsets, e.special, [span])
                rows.append(e.states[mask].mean(axis=0) if mask.any() else np.zeros(e.states.shape[1]))
            return np.asarray(rows, dtype=np.float32).reshape(len(spans), e.states.shape[1])
        if self._real is None:
            self._real = np.ascontiguousarray(e.states[~e.special], dtype=np.float32)
        first, stop = token_spans.span_ranges(e.offsets, e.special, spans)
        tokens = np.arange(self._real.shape[0])
        inside = (tokens >= first[:, None]) & (tokens < stop[:, None])
        weights = inside / np.maximum(stop - first, 1).astype(np.float32)[:, None]  # float32 [spans, tokens]
        return weights @ self._real

    def means(self, spans: list[tuple[int, int]]) -> np.ndarray:
        """The mean token states of the spans that some token overlaps, in span order."""
        if not spans:
            return np.zeros((0, self.encoded.states.shape[1]), dtype=np.float32)
        return self.all_means(spans)[self.covered(spans)]
