"""Coherence ΔC (SPEC §8): ΔC = 0.4·Connectivity + 0.4·ClusterFit + 0.2·Consistency, each in [0, 1].

    Connectivity  mean similarity of the memory's neighbours above the connectivity threshold (0 when none)
    ClusterFit    silhouette s = (b − a)/max(a, b) mapped to [0, 1] as (s + 1)/2, where a is the mean distance
                  to the memory's own cluster and b the smallest mean distance to another cluster
    Consistency   1 − variance of recent coherence values

ClusterFit is required, never dropped (SPEC §8). Where it is undefined — no cluster mates or no other cluster
(an empty store, one memory) — it is 0.5, the silhouette's "on the border" value, so it neither rewards nor
punishes what cannot be judged yet.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

WEIGHTS = {"connectivity": 0.4, "cluster_fit": 0.4, "consistency": 0.2}
NEUTRAL_FIT = 0.5


def _unit(x: float) -> float:
    return min(max(float(x), 0.0), 1.0) if math.isfinite(x) else 0.0


def connectivity(similarities: Sequence[float], threshold: float) -> float:
    s = np.clip(np.nan_to_num(np.asarray(similarities, dtype=np.float64)), 0.0, 1.0)
    above = s[s > threshold]
    return float(above.mean()) if above.size else 0.0


def silhouette(a: float, b: float) -> float:
    """(b − a)/max(a, b) ∈ [−1, 1]; both distances 0 (identical points) → 0."""
    if not (math.isfinite(a) and math.isfinite(b)):
        return 0.0
    m = max(a, b)
    return 0.0 if m <= 0.0 else min(max((b - a) / m, -1.0), 1.0)


def _cosine_distances(x: np.ndarray, points: np.ndarray) -> np.ndarray:
    x = np.nan_to_num(np.asarray(x, dtype=np.float64).ravel())
    p = np.nan_to_num(np.asarray(points, dtype=np.float64).reshape(-1, x.size))
    nx = np.linalg.norm(x)
    np_ = np.linalg.norm(p, axis=1)
    denom = nx * np_
    cos = np.divide(p @ x, denom, out=np.zeros(p.shape[0]), where=denom > 0)
    return np.clip(1.0 - cos, 0.0, 2.0)


def cluster_fit(vector: np.ndarray, own: np.ndarray, others: Sequence[np.ndarray]) -> float:
    """ClusterFit ∈ [0, 1] of `vector` against its own cluster's members (rows of `own`, itself excluded) and the
    members of every other cluster, by cosine distance."""
    own = np.asarray(own, dtype=np.float64)
    nonempty = [np.asarray(o, dtype=np.float64) for o in others if np.asarray(o).size]
    if own.size == 0 or not nonempty or np.asarray(vector).size == 0:
        return NEUTRAL_FIT
    a = float(_cosine_distances(vector, own).mean())
    b = min(float(_cosine_distances(vector, o).mean()) for o in nonempty)
    return _unit((silhouette(a, b) + 1.0) / 2.0)


def cluster_fit_from_distances(own: Sequence[float], other: Sequence[float]) -> float:
    """ClusterFit from distances already measured (a space with its own similarity measure): `own` to the
    memory's cluster mates, `other` to the nearest other group. Either empty → neutral 0.5."""
    a_d = np.asarray([d for d in own if math.isfinite(d)], dtype=np.float64)
    b_d = np.asarray([d for d in other if math.isfinite(d)], dtype=np.float64)
    if a_d.size == 0 or b_d.size == 0:
        return NEUTRAL_FIT
    return _unit((silhouette(float(a_d.mean()), float(b_d.mean())) + 1.0) / 2.0)


def consistency(history: Sequence[float]) -> float:
    """1 − variance of recent coherence values; fewer than two values show no inconsistency yet → 1."""
    h = np.asarray([v for v in history if math.isfinite(v)], dtype=np.float64)
    if h.size < 2:
        return 1.0
    return _unit(1.0 - float(h.var()))


def delta_c(connectivity_value: float, cluster_fit_value: float, consistency_value: float,
            weights: Mapping[str, float] = WEIGHTS) -> float:
    return _unit(weights["connectivity"] * _unit(connectivity_value)
                 + weights["cluster_fit"] * _unit(cluster_fit_value)
                 + weights["consistency"] * _unit(consistency_value))
