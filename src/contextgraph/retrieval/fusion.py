"""Reciprocal Rank Fusion (SPEC §7 stage 3) and the rank helpers it needs. Pure numpy."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np


def ranks(scores: np.ndarray) -> np.ndarray:
    """1-based competition ranks, best (highest score) = 1; ties share the better rank. NaN ranks last."""
    scores = np.nan_to_num(np.asarray(scores, dtype=np.float64), nan=-np.inf)
    order = np.argsort(-scores, kind="stable")
    sorted_scores = scores[order]
    # position of the first element of each run of equal scores
    first = np.r_[0, np.flatnonzero(np.diff(sorted_scores) != 0) + 1]
    run_rank = np.repeat(first + 1, np.diff(np.r_[first, len(scores)]))
    out = np.empty(len(scores), dtype=np.int64)
    out[order] = run_rank
    return out


def rrf(space_ranks: Mapping[int, np.ndarray], weights: Mapping[int, float], k: float) -> np.ndarray:
    """Σᵢ wᵢ / (k + rankᵢ) over the spaces given; every rank array has one entry per candidate."""
    total: np.ndarray | None = None
    for space, r in space_ranks.items():
        w = float(weights.get(space, 0.0))
        if w == 0.0:
            continue
        part = w / (k + np.asarray(r, dtype=np.float64))
        total = part if total is None else total + part
    if total is None:
        n = len(next(iter(space_ranks.values()))) if space_ranks else 0
        return np.zeros(n)
    return total
