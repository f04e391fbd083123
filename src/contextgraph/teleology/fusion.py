"""One fused vector from a memory's fingerprint under space weights (fuse_embeddings).

Every space that has a fixed-length real vector contributes its unit vector scaled by √wᵢ, concatenated, so the
dot product of two fused vectors is Σᵢ wᵢ·cosᵢ: the weighted multi-space similarity, searchable by any one
dense index. E9's bits enter as ±1/√d (their cosine is 1 − 2·Hamming), E12 as its mean token vector. E6 and
E13 are sparse over vocabularies of 32K and 30K terms and are left out (their weight is reported as unused).

Methods differ only in the weights:
    linear        the profile's weights as given
    hierarchical  group priorities × the profile's weights within each group (a group's share is its priority)
    attention     the profile's weights × softmax of the memory's own purpose vector (spaces that serve the
                  north star count more), temperature τ
    gated         the profile's weights where the memory's alignment in that space passes the gate, else 0
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from contextgraph.fingerprint import SPACES, Fingerprint, dense

METHODS = ("linear", "hierarchical", "attention", "gated")
UNFUSABLE = frozenset(s.id for s in SPACES if s.kind == "sparse")


def method_weights(method: str, weights: np.ndarray, *, groups: Mapping[str, Sequence[int]] | None = None,
                   priorities: Mapping[str, float] | None = None, purpose: np.ndarray | None = None,
                   temperature: float = 0.1, gate: float = 0.3) -> np.ndarray:
    """The 13 fusion weights of `method` (normalised to sum 1 over the fusable spaces)."""
    w = np.asarray(weights, dtype=np.float64).copy()
    if method == "hierarchical":
        if not groups:
            raise ValueError("hierarchical fusion needs the space groups")
        prio = priorities or {}
        out = np.zeros_like(w)
        for name, spaces in groups.items():
            idx = [s - 1 for s in spaces]
            within = w[idx]
            if within.sum() > 0:
                out[idx] = float(prio.get(name, 1.0)) * within / within.sum()
        w = out
    elif method in ("attention", "gated"):
        if purpose is None:
            raise ValueError(f"{method} fusion needs the memory's purpose vector (a north star)")
        pv = np.asarray(purpose, dtype=np.float64)
        if method == "attention":
            z = pv / temperature
            w = w * np.exp(z - z.max())
        else:
            w = np.where(pv >= gate, w, 0.0)
    elif method != "linear":
        raise ValueError(f"method must be one of {METHODS}")
    for s in UNFUSABLE:
        w[s - 1] = 0.0
    total = float(w.sum())
    return w / total if total > 0 else w


def space_vector(space_id: int, vector: object) -> np.ndarray:
    """The space's unit real vector (E9 bits as ±1/√d, E12 the mean of its tokens)."""
    kind = SPACES[space_id - 1].kind
    if kind == "binary":
        bits = np.unpackbits(np.asarray(dense(vector), dtype=np.uint8)).astype(np.float64)  # type: ignore[arg-type]
        v = 2.0 * bits - 1.0
    elif kind == "multivector":
        v = np.asarray(dense(vector), dtype=np.float64).mean(axis=0)  # type: ignore[arg-type]
    else:
        v = np.asarray(dense(vector), dtype=np.float64)  # type: ignore[arg-type]
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


def fuse(fingerprint: Fingerprint, weights: np.ndarray) -> tuple[np.ndarray, dict[int, tuple[int, int]]]:
    """(fused vector, space → (offset, length) in it) over the spaces with a positive weight."""
    parts: list[np.ndarray] = []
    layout: dict[int, tuple[int, int]] = {}
    offset = 0
    for space in SPACES:
        w = float(weights[space.id - 1])
        if w <= 0 or space.id in UNFUSABLE:
            continue
        v = space_vector(space.id, fingerprint[space.id]) * np.sqrt(w)
        layout[space.id] = (offset, len(v))
        parts.append(v)
        offset += len(v)
    return (np.concatenate(parts) if parts else np.zeros(0)), layout
