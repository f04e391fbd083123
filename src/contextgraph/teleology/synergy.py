"""The 13×13 synergy matrix, learned from retrieval feedback (update_synergy_matrix).

Sᵢⱼ estimates how relevant a result is when spaces i and j both agree that it matches the query. From a
feedback (the query's and the result's per-space similarity s ∈ [0,1]^13, relevance y ∈ [0,1]) each pair's
co-agreement aᵢⱼ = sᵢ·sⱼ moves Sᵢⱼ toward y in proportion to it:

    Sᵢⱼ ← Sᵢⱼ + η · aᵢⱼ · (y − Sᵢⱼ)

an exponentially weighted average of the relevance of results on which the pair agreed; pairs that did not
agree (a ≈ 0) learn nothing from the example. S starts at 0.5 (no evidence), stays symmetric and in [0, 1].
Scopes: `all_pairs` every pair; `contributing_pairs` only pairs with aᵢⱼ ≥ the contribution floor (both spaces
agreed); `high_synergy_only` only pairs whose Sᵢⱼ is already ≥ 0.5.

Fusion reads it as a reweighting of space weights w: w'ᵢ ∝ wᵢ · (S w)ᵢ / mean(S w) — a space that pays off
together with the other weighted spaces gains weight, one that tends to agree on irrelevant results loses it.
"""

from __future__ import annotations

import numpy as np

from contextgraph.vectors import clip_unit

SCOPES = ("all_pairs", "contributing_pairs", "high_synergy_only")
N = 13


def initial(prior: float = 0.5) -> np.ndarray:
    return np.full((N, N), float(prior))


def update(matrix: np.ndarray, similarities: np.ndarray, relevance: float, rate: float, scope: str,
           contribution_floor: float = 0.25) -> tuple[np.ndarray, np.ndarray]:
    """(new matrix, boolean [13, 13] mask of the pairs that changed)."""
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {SCOPES}")
    s = clip_unit(np.asarray(similarities, dtype=np.float64))
    if s.shape != (N,):
        raise ValueError("need 13 per-space similarities")
    m = np.asarray(matrix, dtype=np.float64)
    agreement = np.outer(s, s)
    if scope == "all_pairs":
        mask = np.ones((N, N), dtype=bool)
    elif scope == "contributing_pairs":
        mask = agreement >= contribution_floor
    else:
        mask = m >= 0.5
    step = rate * agreement * (float(relevance) - m)
    new = np.clip(np.where(mask, m + step, m), 0.0, 1.0)
    new = (new + new.T) / 2.0  # the rule is symmetric already; this only removes rounding asymmetry
    return new, mask & (np.abs(step) > 0)


def reweight(weights: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """Space weights reweighted by their synergy with the other weighted spaces; sums to the input's sum."""
    w = np.asarray(weights, dtype=np.float64)
    support = np.asarray(matrix, dtype=np.float64) @ w
    mean = float(support[w > 0].mean()) if (w > 0).any() else 0.0
    if mean <= 0:
        return w
    out = w * support / mean
    total = float(out.sum())
    return out * (float(w.sum()) / total) if total > 0 else w
