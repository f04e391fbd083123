"""The north star as a fingerprint: the dominant cluster's centroid in every space, in a form each space's own
similarity can compare a memory with (so A(Eᵢ, V) is apples to apples).

    dense (E1-E5, E7, E8, E10, E11)  the mean of the members' unit vectors, renormalised (E2's random Fourier
                                      features are compared by dot product: their mean is kept unnormalised, as
                                      z̄·z(t) is the mean kernel value between t and the members' times)
    sparse (E6, E13)                  the members' most frequent terms: as many as a member has on median (so a
                                      Jaccard against it is on the scale of member-to-member Jaccards), with the
                                      mean weight of each term where present
    binary (E9)                       the bitwise majority of the members (the Hamming centroid)
    multivector (E12)                 one token per member: its mean token vector, unit length (MaxSim of a
                                      memory's tokens against them: how close its tokens come to a member)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from contextgraph.fingerprint import SPACES, Fingerprint, Sparse, dense, sparse

TEMPORAL_RECENT = 2


def _unit_rows(m: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(m, axis=-1, keepdims=True)
    return m / np.where(norms > 0, norms, 1.0)


def centroid(members: Sequence[Fingerprint], max_tokens: int = 64) -> Fingerprint:
    """The star of a group of fingerprints (at least one)."""
    if not members:
        raise ValueError("a centroid needs at least one member")
    star: Fingerprint = {}
    for space in SPACES:
        column = [fp[space.id] for fp in members]
        if space.kind == "dense":
            m = np.stack([dense(v) for v in column]).astype(np.float64)
            if space.id == TEMPORAL_RECENT:
                star[space.id] = m.mean(axis=0).astype(np.float32)
            else:
                mean = _unit_rows(m).mean(axis=0)
                star[space.id] = _unit_rows(mean[None, :])[0].astype(np.float32)
        elif space.kind == "sparse":
            star[space.id] = _sparse_centroid([sparse(v) for v in column])
        elif space.kind == "binary":
            bits = np.unpackbits(np.stack([dense(v) for v in column]).astype(np.uint8), axis=1)
            majority = (bits.mean(axis=0) >= 0.5).astype(np.uint8)  # ties go to 1, deterministically
            star[space.id] = np.packbits(majority)
        else:  # multivector: one unit token per member, the first max_tokens in the given order
            pooled = np.stack([np.asarray(dense(v), dtype=np.float64).mean(axis=0) for v in column])
            star[space.id] = _unit_rows(pooled[:max_tokens]).astype(np.float32)
    return star


def _sparse_centroid(column: Sequence[Sparse]) -> Sparse:
    lengths = [len(v) for v in column]
    keep = int(np.median(lengths)) if lengths else 0
    if keep == 0:
        return Sparse(np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32))
    terms = np.concatenate([v.indices for v in column]).astype(np.int64)
    values = np.concatenate([v.values for v in column]).astype(np.float64)
    unique, inverse, counts = np.unique(terms, return_inverse=True, return_counts=True)
    weight = np.bincount(inverse, weights=values) / counts
    # most frequent first; ties by the larger mean weight, then the lower term id (stable, deterministic)
    order = np.lexsort((unique, -weight, -counts))[:keep]
    chosen = np.sort(order)
    return Sparse(unique[chosen].astype(np.int32), weight[chosen].astype(np.float32))


def blend(star: Fingerprint, toward: Fingerprint, beta: float) -> Fingerprint:
    """(1 − β)·star + β·toward in the dense spaces (renormalised, E2 kept as a mean); the other spaces take
    `toward`'s when β ≥ 0.5, else keep the star's (a term set or a bit majority has no halfway point)."""
    if not 0.0 <= beta <= 1.0:
        raise ValueError("beta must be in [0, 1]")
    out: Fingerprint = {}
    for space in SPACES:
        a, b = star[space.id], toward[space.id]
        if space.kind == "dense":
            mixed = (1 - beta) * dense(a).astype(np.float64) + beta * dense(b).astype(np.float64)
            out[space.id] = (mixed if space.id == TEMPORAL_RECENT else _unit_rows(mixed[None, :])[0]).astype(np.float32)
        else:
            out[space.id] = b if beta >= 0.5 else a
    return out
