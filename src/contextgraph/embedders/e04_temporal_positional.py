"""E4 temporal_positional: the memory's order in its session and in the whole store, each as the sinusoidal
positional encoding of the Transformer paper, PE(p)₂ᵢ = sin(p·ωᵢ), PE(p)₂ᵢ₊₁ = cos(p·ωᵢ), ωᵢ = base^(−2i/d).

The dot product of two encodings is Σᵢ cos(Δp·ωᵢ): it depends only on the distance Δp, and because the
frequencies are log-spaced it falls roughly like 1 − log(Δp)/log(base) for 1 < Δp < base, so near positions are
closer than far ones at every scale. The global block uses a larger base because stores hold far more memories
than a session. Each 256-d block is normalised and scaled by 1/√2: the cosine is the mean of the two kernels."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from contextgraph.embedders.axes import Axis, monotone
from contextgraph.embedders.base import MemoryInput
from contextgraph.fingerprint import SPACES, Kind
from contextgraph.vectors import cosine_scores, sinusoid_features, sinusoid_phases

BLOCK_DIM = 256
SESSION_BASE = 10_000.0  # the paper's base: wavelengths from 2π to ~63K positions
GLOBAL_BASE = 1_000_000.0  # wavelengths up to ~6.3M memories
BASES = (SESSION_BASE, GLOBAL_BASE)


def _omega(base: float, dim: int = BLOCK_DIM) -> np.ndarray:
    return base ** (-np.arange(dim // 2, dtype=np.float64) * 2.0 / dim)


def positional_encoding(positions: np.ndarray, base: float, dim: int = BLOCK_DIM) -> np.ndarray:
    """float32 [n, dim], rows of norm 1."""
    omega = _omega(base, dim)
    amplitude = np.full(dim // 2, np.sqrt(2.0 / dim))
    phases = np.asarray(positions, dtype=np.float64).reshape(-1, 1) * omega
    return sinusoid_features(phases, amplitude)


def encode_positions(positions: np.ndarray) -> np.ndarray:
    """float32 [n, dim]: the E4 vectors of (session, global) positions [n, 2], as decode_positions gives them back
    (the embedder's own; whole positions, so the very vectors that were stored)."""
    p = np.asarray(positions, dtype=np.float64).reshape(-1, 2)
    halves = (positional_encoding(p[:, 0], SESSION_BASE), positional_encoding(p[:, 1], GLOBAL_BASE))
    return (np.concatenate(halves, axis=1) / np.sqrt(2.0)).astype(np.float32)


_DECODE_STEPS = 6  # slowest frequencies walked per block by decode_positions


def decode_positions(vectors: np.ndarray) -> np.ndarray:
    """float64 [n, 2]: the (session, global) positions E4 vectors ([n, dim] or [dim]) were made from, read back
    from the phases of each block's slowest frequencies and rounded to whole positions. Unique below each block's
    slowest period, 2π·base^(1 − 2/256): ~58K session positions and ~5.6M memories (beyond, positions alias)."""
    v = np.atleast_2d(np.asarray(vectors))
    out = []
    for b, base in enumerate(BASES):
        omega = _omega(base)
        phases = sinusoid_phases(v[:, b * BLOCK_DIM:(b + 1) * BLOCK_DIM])
        slowest = len(omega) - 1
        p = (phases[:, slowest] % (2.0 * np.pi)) / omega[slowest]
        for j in range(slowest - 1, slowest - _DECODE_STEPS, -1):
            turns = np.round((omega[j] * p - phases[:, j]) / (2.0 * np.pi))
            p = (phases[:, j] + 2.0 * np.pi * turns) / omega[j]
        out.append(np.rint(p))
    return np.stack(out, axis=1)


def _log_falloff(base: float) -> Axis:
    """One block's kernel Σᵢ cos(Δp·ωᵢ) falls roughly like 1 − ln(1 + |Δp|)/ln(base); the cosine is the mean of
    the two blocks. A stand-in that orders candidates like the cosine: the timeline index re-scores its best on
    the stored vectors, so the ripple it leaves out moves no final score."""
    def kernel(gap: np.ndarray) -> np.ndarray:
        return np.maximum(1.0 - np.log1p(gap) / np.log(base), 0.0) / len(BASES)
    return Axis(None, kernel, monotone(kernel))


AXES = tuple(_log_falloff(base) for base in BASES)  # (session, global), as decode_positions gives them


class TemporalPositionalEmbedder:
    space = 4
    name = SPACES[3].name
    kind: Kind = "dense"
    dim = 2 * BLOCK_DIM
    method = (
        f"sinusoidal positional encoding of session position (256-d, base {SESSION_BASE:g}) "
        f"and global position (256-d, base {GLOBAL_BASE:g})"
    )

    def embed_positions(self, session: np.ndarray, global_: np.ndarray) -> np.ndarray:
        return encode_positions(np.stack([np.asarray(session, dtype=np.float64).ravel(),
                                          np.asarray(global_, dtype=np.float64).ravel()], axis=1))

    def embed_batch(self, items: Sequence[MemoryInput]) -> list[np.ndarray]:
        session = np.array([item.session_position for item in items], dtype=np.float64)
        global_ = np.array([item.global_position for item in items], dtype=np.float64)
        return list(self.embed_positions(session, global_))

    def similarity(self, query: np.ndarray, docs: Sequence[np.ndarray]) -> np.ndarray:
        return cosine_scores(query, docs)
