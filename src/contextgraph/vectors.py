"""Pure vector math shared by the embedders and the kernels (gwt, utl, retrieval): normalising, pooling token
states over character spans, sparse vectors from term counts, and the similarity measures (cosine, dot, sparse
dot). numpy only, no state; it lives beside fingerprint.py so that kernels need nothing from the model's package."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from contextgraph.fingerprint import Sparse

_EPS = 1e-12


def l2_normalize(v: np.ndarray) -> np.ndarray:
    """v / ‖v‖ along the last axis as float32; a zero vector stays zero rather than becoming NaN."""
    v = np.asarray(v, dtype=np.float32)
    norm = np.linalg.norm(v, axis=-1, keepdims=True)
    return (v / np.maximum(norm, _EPS)).astype(np.float32, copy=False)


def clip_unit(values: np.ndarray) -> np.ndarray:
    """Float values held to [0, 1], NaN as 0, in their own dtype: what clip(nan_to_num(v), 0, 1) gives, bit for
    bit (fmax takes the number over a NaN), in two ufuncs instead of nan_to_num's ~15 µs of Python; the UTL and
    retrieval call it dozens of times an operation."""
    return np.fmin(np.fmax(values, 0.0), 1.0)


def weighted_mean(states: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Σ wᵢ sᵢ / Σ wᵢ over the rows of `states` [T, H]; zeros when every weight is zero."""
    weights = np.asarray(weights, dtype=np.float32)
    total = float(weights.sum())
    if total <= 0.0:
        return np.zeros(states.shape[1], dtype=np.float32)
    return (weights @ states / total).astype(np.float32, copy=False)


def span_token_mask(offsets: np.ndarray, special: np.ndarray, spans: Iterable[tuple[int, int]]) -> np.ndarray:
    """bool [T]: the non-special tokens whose character range overlaps any of the half-open `spans`."""
    starts, ends = offsets[:, 0], offsets[:, 1]
    mask = np.zeros(len(offsets), dtype=bool)
    for lo, hi in spans:
        mask |= (starts < hi) & (ends > lo)
    return mask & ~special


def as_matrix(docs: Sequence[np.ndarray] | np.ndarray, dtype: type = np.float32) -> np.ndarray:
    """The docs as one [n, dim] array: as given when already one (retrieval's columns), else stacked."""
    if isinstance(docs, np.ndarray) and docs.ndim == 2:
        return docs.astype(dtype, copy=False)
    return np.stack([np.asarray(d, dtype=dtype) for d in docs])


def cosine_scores(query: np.ndarray, docs: Sequence[np.ndarray]) -> np.ndarray:
    """float32 [len(docs)]: cosine of `query` with each doc (0 against a zero vector)."""
    if len(docs) == 0:
        return np.zeros(0, dtype=np.float32)
    matrix = l2_normalize(as_matrix(docs))
    return (matrix @ l2_normalize(query)).astype(np.float32)


def dot_scores(query: np.ndarray, docs: Sequence[np.ndarray]) -> np.ndarray:
    """float32 [len(docs)]: plain dot products (for spaces whose vectors carry meaningful norms)."""
    if len(docs) == 0:
        return np.zeros(0, dtype=np.float32)
    return (as_matrix(docs) @ np.asarray(query, dtype=np.float32)).astype(np.float32)


def sparse_from_counts(keys: np.ndarray, cap: int | None = None) -> Sparse:
    """Sparse vector with value log(1 + count) for each distinct key (bucket or token id). With `cap`, only the
    `cap` heaviest keys are kept (ties go to the smaller key, so the result is deterministic)."""
    indices, counts = np.unique(np.asarray(keys, dtype=np.int64), return_counts=True)
    values = np.log1p(counts.astype(np.float64))
    if cap is not None and len(indices) > cap:
        # unique() sorted by key, and a stable sort by descending weight keeps that order among ties.
        keep = np.sort(np.argsort(-values, kind="stable")[:cap])
        indices, values = indices[keep], values[keep]
    return Sparse(indices.astype(np.int32), values.astype(np.float32))


def sparse_dot(a: Sparse, b: Sparse) -> float:
    _, ia, ib = np.intersect1d(a.indices, b.indices, assume_unique=True, return_indices=True)
    return float(np.dot(a.values[ia].astype(np.float64), b.values[ib]))


def sparse_dot_scores(query: Sparse, docs: Sequence[Sparse]) -> np.ndarray:
    """float32 [len(docs)]: Σ over shared indices of query value × doc value."""
    return np.array([sparse_dot(query, d) for d in docs], dtype=np.float32)


def sinusoid_features(phases: np.ndarray, amplitudes: np.ndarray) -> np.ndarray:
    """[..., 2K] = [a₁cos φ₁, a₁sin φ₁, …, a_K cos φ_K, a_K sin φ_K] for phases [..., K] and amplitudes [K].

    The dot product of two such vectors is Σₖ aₖ² cos(φₖ − φ'ₖ): a shift-invariant kernel in whatever the
    phases measure, which is how E2, E3 and E4 turn times and positions into vectors."""
    phases = np.asarray(phases, dtype=np.float64)
    out = np.empty((*phases.shape[:-1], 2 * phases.shape[-1]), dtype=np.float64)
    out[..., 0::2] = np.cos(phases) * amplitudes
    out[..., 1::2] = np.sin(phases) * amplitudes
    return out.astype(np.float32)


def sinusoid_phases(vectors: np.ndarray) -> np.ndarray:
    """float64 [..., K]: the phases φₖ back from sinusoid_features' [..., 2K] output, wrapped to (−π, π]. The
    amplitudes drop out, so a feature vector alone says where it was taken (the timeline index's coordinates)."""
    v = np.asarray(vectors, dtype=np.float64)
    return np.arctan2(v[..., 1::2], v[..., 0::2])
