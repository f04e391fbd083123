"""E12 late_interaction: ColBERT-style token vectors from the E1 pass. Each content token's contextual state is
projected to 128-d by a fixed orthogonal projection (the Q factor of a seeded Gaussian H×128 matrix: it keeps
angles between the projected directions and is the same in every process) and normalised.

Pruning keeps at most 48 tokens per memory: [CLS]/[SEP] and punctuation-only tokens are dropped, and if more than
48 remain the rarest are kept. Rarity is read from the token id: WordPiece (and most sub-word) vocabularies are
built most-frequent-first, so a larger id is a rarer piece (in MiniLM's vocabulary "the" is 1996) — a
zero-cost idf proxy that needs no corpus statistics. Kept tokens stay in text order. A text with no content
token keeps one vector, the mean of all its states, so no memory is empty.

Similarity is MaxSim: for each query token the best dot product over the doc's tokens, averaged over the query
tokens; vectorised over many docs by one matrix product and `np.maximum.reduceat` over the docs' row ranges."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from threadpoolctl import threadpool_limits

from contextgraph.embedders.base import Backbone, Encoded, MemoryInput
from contextgraph.embedders.token_spans import alnum_in_spans
from contextgraph.fingerprint import SPACES, Kind
from contextgraph.vectors import l2_normalize

TOKEN_DIM = 128
MAX_TOKENS = 48
SEED = 20_251_112


def projection(hidden: int, dim: int = TOKEN_DIM, seed: int = SEED) -> np.ndarray:
    """float32 [hidden, dim] with orthonormal columns (dim ≤ hidden)."""
    gaussian = np.random.default_rng(seed).standard_normal((hidden, dim))
    # One thread: this 384×128 QR takes ~10 ms that way, while starting OpenBLAS's pool for it on a busy 2-core
    # machine took 0.27-2.4 s, and it runs on the first store's path (measured by benchmarks/bench_hooks.py).
    with threadpool_limits(limits=1, user_api="blas"):
        q, r = np.linalg.qr(gaussian)
    # Fix the signs (QR is unique only up to them) so the matrix does not depend on the LAPACK build.
    return (q * np.sign(np.diag(r))).astype(np.float32)


def kept_tokens(encoded: Encoded, limit: int = MAX_TOKENS) -> np.ndarray:
    """Indices of the tokens E12 keeps, in text order."""
    content = np.flatnonzero(~encoded.special & (alnum_in_spans(encoded.text, encoded.offsets) > 0))
    if len(content) > limit:
        ids = encoded.token_ids[content]
        rarest = np.argsort(-ids.astype(np.int64), kind="stable")[:limit]
        content = content[np.sort(rarest)]
    return content.astype(np.int64)


def maxsim(query: np.ndarray, docs: Sequence[np.ndarray]) -> np.ndarray:
    """float32 [len(docs)]: mean over query rows of the max dot product with each doc's rows."""
    if len(docs) == 0:
        return np.zeros(0, dtype=np.float32)
    lengths = np.array([len(d) for d in docs])
    if (lengths == 0).any() or len(query) == 0:
        raise ValueError("MaxSim needs at least one token vector in the query and in every doc")
    matrix = np.concatenate([np.asarray(d, dtype=np.float32) for d in docs])
    scores = np.asarray(query, dtype=np.float32) @ matrix.T  # [q, Σ doc tokens]
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    return np.maximum.reduceat(scores, starts, axis=1).mean(axis=0).astype(np.float32)


class LateInteractionEmbedder:
    space = 12
    name = SPACES[11].name
    kind: Kind = "multivector"

    def __init__(self, backbone: Backbone) -> None:
        # A projection cannot add dimensions: a model narrower than 128 keeps its width (a seeded rotation).
        self.dim = min(TOKEN_DIM, backbone.hidden_size)
        self._projection = projection(backbone.hidden_size, self.dim)
        self.method = (
            f"{backbone.model_name} token states × seeded orthogonal projection to {self.dim}-d (seed {SEED}), "
            f"at most {MAX_TOKENS} tokens (rarest by vocabulary rank), MaxSim"
        )

    def embed(self, item: MemoryInput) -> np.ndarray:
        return self.embed_batch([item])[0]

    def embed_batch(self, items: Sequence[MemoryInput]) -> list[np.ndarray]:
        """The kept token states of the whole batch projected by one matrix product (a product per memory
        cost ~15 ms each on a loaded 2-core machine, waking BLAS every time) and normalised together."""
        if not items:
            return []
        kept = []
        for item in items:
            encoded = item.encoded
            keep = kept_tokens(encoded)
            kept.append(encoded.states[keep] if len(keep) else encoded.states.mean(axis=0, keepdims=True))
        projected = l2_normalize(np.concatenate(kept) @ self._projection)
        return np.split(projected, np.cumsum([len(k) for k in kept])[:-1])

    def similarity(self, query: np.ndarray, docs: Sequence[np.ndarray]) -> np.ndarray:
        return maxsim(query, docs)
