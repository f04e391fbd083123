"""Reciprocal Rank Fusion (docs/retrieval.md#stage-3-fusion) and the rank helpers it needs. Pure numpy."""

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


# E1's copies: E8 is E1 mixed with graph neighbours' E1 (E1 itself without neighbours), E10 is E1 plus a modality
# one-hot for text. Where such a space ranks a candidate exactly where E1 does, its vote would be E1's vote again
# (docs/decisions.md#d15): it is dropped for that candidate.
E1_COPIES = (8, 10)


def rrf_deduplicated(space_ranks: Mapping[int, np.ndarray], weights: Mapping[int, float], k: float,
                     reference: int = 1, copies: tuple[int, ...] = E1_COPIES) -> np.ndarray:
    """rrf(), except that a space in `copies` adds nothing for a candidate it ranks exactly as `reference` does."""
    if reference not in space_ranks or not any(c in space_ranks for c in copies):
        return rrf(space_ranks, weights, k)
    base = rrf({s: r for s, r in space_ranks.items() if s not in copies}, weights, k)
    ref = np.asarray(space_ranks[reference])
    for space in copies:
        w = float(weights.get(space, 0.0))
        if space not in space_ranks or w == 0.0:
            continue
        r = np.asarray(space_ranks[space], dtype=np.float64)
        base = base + np.where(r == ref, 0.0, w / (k + r))
    return base


def minmax(values: np.ndarray) -> np.ndarray:
    """values mapped onto [0, 1] by the candidates' own min and max (all 0 when they are all equal); NaN → 0."""
    v = np.nan_to_num(np.asarray(values, dtype=np.float64), nan=-np.inf)
    finite = np.isfinite(v)
    if not finite.any():
        return np.zeros(len(v))
    lo, hi = v[finite].min(), v[finite].max()
    out = np.zeros(len(v))
    if hi > lo:
        out[finite] = (v[finite] - lo) / (hi - lo)
    return out


def fuse(scores: Mapping[int, np.ndarray], weights: Mapping[int, float], k: float,
         score_weights: Mapping[int, float] | None = None,
         space_ranks: Mapping[int, np.ndarray] | None = None) -> np.ndarray:
    """Stage 3: the deduplicated RRF over every space's ranks, scaled so that the best candidate has 1, plus
    Σ wₛ·minmax(scoreₛ) for the spaces in `score_weights` (score-level fusion: where a space's raw score, e.g. the
    BM25 or the E1 cosine, says more than its rank). Higher is better. `space_ranks`: ranks(scores) already
    computed by the caller."""
    # the voting spaces' ranks, and E1's even when E1 does not vote: its copies' deduplication reads them (without
    # them E8 and E10 would each cast E1's vote again)
    space_ranks = {s: (space_ranks[s] if space_ranks is not None and s in space_ranks else ranks(v))
                   for s, v in scores.items() if float(weights.get(s, 0.0)) != 0.0 or s == 1}
    n = len(next(iter(scores.values()))) if scores else 0
    fused = rrf_deduplicated(space_ranks, weights, k) if space_ranks else np.zeros(n)
    top = fused.max() if n else 0.0
    if top > 0:
        fused = fused / top
    for space, w in (score_weights or {}).items():
        if w and space in scores:
            fused = fused + float(w) * minmax(scores[space])
    return fused


def rerank(fused: np.ndarray, late: np.ndarray | None, head: int, weight: float) -> tuple[np.ndarray, np.ndarray]:
    """Stage 5: the `head` best by `fused`, re-scored as (1 − w)·fused/max(fused) + w·late (E12 MaxSim in [0, 1])
    and sorted; returns (candidate indices best first, their final scores). Stable: ties keep the fused order."""
    order = np.argsort(-fused, kind="stable")[:head]
    final = fused[order]
    top = final.max() if len(final) else 0.0
    if top > 0:
        final = final / top
    if weight > 0 and late is not None:
        final = (1.0 - weight) * final + weight * np.nan_to_num(np.asarray(late, dtype=np.float64)[order])
    resort = np.argsort(-final, kind="stable")
    return order[resort], final[resort]
