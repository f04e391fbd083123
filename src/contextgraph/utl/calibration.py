"""The local novelty statistic of a memory against its nearest stored neighbours in one space, and the logistic
calibration that maps it to ΔS ∈ [0, 1] from the store's own leave-one-out sample (docs/utl.md): a memory as novel
as the store's typical memory scores 0.5, an exact duplicate ~0, one unlike anything stored → 1. Pure numpy."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from contextgraph.utl.delta_s import unit_interval

_LOGIT_EPS = 1e-6  # g is clipped to [ε, 1 − ε] before the logit: a duplicate (g = 0) maps to ~0, not −inf


def local_statistic(distances: np.ndarray | Sequence[float], k: int) -> float:
    """√(d₁ · d̄ₖ) ∈ [0, 1]: d₁ the smallest distance, d̄ₖ the mean of the k smallest (all of them when fewer).
    Distances are clipped to [0, 1], NaN counts as 1 (unmeasurable is far); none → 1 (nothing stored)."""
    if k < 1:
        raise ValueError(f"k must be at least 1 (got {k})")
    d = np.clip(np.nan_to_num(np.asarray(distances, dtype=np.float64).ravel(), nan=1.0), 0.0, 1.0)
    if d.size == 0:
        return 1.0
    near = np.sort(d)[:k]
    return unit_interval(math.sqrt(float(near[0]) * float(near.mean())))


def uncovered_share(weights: np.ndarray | Sequence[float], covered: np.ndarray | Sequence[bool]) -> float:
    """The weighted share of a memory's terms that are not `covered` (used by no neighbour): Σ_uncovered w / Σ w,
    weights clipped at 0 (idf·|tf| in practice). No terms, or no weight → 1 (nothing known about it)."""
    w = np.clip(np.nan_to_num(np.asarray(weights, dtype=np.float64).ravel()), 0.0, None)
    c = np.asarray(covered, dtype=bool).ravel()
    if w.size != c.size:
        raise ValueError(f"{w.size} weights for {c.size} coverage flags")
    total = float(w.sum())
    if total <= 0.0:
        return 1.0
    return unit_interval(float(w[~c].sum()) / total)


def sparse_statistic(best_jaccard: float, weights: np.ndarray | Sequence[float],
                     covered: np.ndarray | Sequence[bool], share: float = 0.75) -> float:
    """E6/E13: √(d₁ · (share·u + (1 − share)·d₁)) with d₁ = 1 − the best Jaccard and u the uncovered share.
    The d₁ term inside keeps a light edit above an exact duplicate when every word of the edit occurs in some
    neighbour (u = 0); a duplicate (d₁ = 0) scores 0."""
    d1 = unit_interval(1.0 - (0.0 if math.isnan(float(best_jaccard)) else float(best_jaccard)))
    u = uncovered_share(weights, covered)
    return unit_interval(math.sqrt(d1 * (share * u + (1.0 - share) * d1)))


def logit(g: float) -> float:
    g = min(max(float(g) if math.isfinite(g) else 1.0, _LOGIT_EPS), 1.0 - _LOGIT_EPS)
    return math.log(g / (1.0 - g))


@dataclass(frozen=True, slots=True)
class Calibration:
    """ΔS = sigmoid(slope · (logit g − location)), fitted on `samples` leave-one-out statistics."""

    location: float = 0.0
    slope: float = 1.0
    samples: int = 0

    def __call__(self, g: float) -> float:
        return calibrated(self, g)


IDENTITY = Calibration()
_LOGISTIC_VAR = math.pi**2 / 3.0  # variance of the standard logistic: slope 1
_MAD_TO_SD = 1.4826  # the MAD of a normal sample times this estimates its standard deviation


def fit_calibration(statistics: Sequence[float] | np.ndarray, prior_weight: float = 4.0,
                    slope_bounds: tuple[float, float] = (1.0, 1.5)) -> Calibration:
    """The calibration of a space from the leave-one-out statistics of stored memories.

    Location: the median logit, shrunk toward 0 by `prior_weight` pseudo-samples (no sample → the identity map
    ΔS = g). Slope: π/(√3·sd) of the logits (a logistic with their spread), sd = 1.4826·MAD (the median absolute
    deviation), the spread pooled with the standard logistic's (π²/3) at the same prior weight, then bounded to
    `slope_bounds`. NaN statistics are skipped.

    Median and MAD, not mean and standard deviation: a store holds exact duplicates, whose leave-one-out g is 0
    and logit −14; a mean dragged down by a few of them scored every other memory as novel as an unrelated text
    (paraphrase, new fact and unrelated all read 0.94-0.99 once a session had stored ten duplicates)."""
    lo, hi = float(slope_bounds[0]), float(slope_bounds[1])
    if not (0.0 < lo <= hi and math.isfinite(hi)):
        raise ValueError(f"slope bounds must satisfy 0 < min ≤ max (got {slope_bounds})")
    w0 = max(float(prior_weight), 0.0)
    z = np.array([logit(v) for v in np.asarray(statistics, dtype=np.float64).ravel() if math.isfinite(v)])
    n = int(z.size)
    if n + w0 <= 0.0:
        return Calibration(0.0, min(max(1.0, lo), hi), 0)
    median = float(np.median(z)) if n else 0.0
    location = n * median / (n + w0)
    robust_sd = _MAD_TO_SD * float(np.median(np.abs(z - median))) if n else 0.0
    var = (w0 * _LOGISTIC_VAR + n * robust_sd**2) / (n + w0)
    slope = math.pi / math.sqrt(3.0 * var) if var > 0.0 else hi
    return Calibration(location, min(max(slope, lo), hi), n)


def calibrated(cal: Calibration, g: float) -> float:
    """sigmoid(slope·(logit g − location)) ∈ [0, 1]; NaN g counts as novel (1)."""
    g = float(g)
    if math.isnan(g):
        return 1.0
    x = cal.slope * (logit(g) - cal.location)
    if x >= 0:
        return unit_interval(1.0 / (1.0 + math.exp(-x)))
    e = math.exp(x)
    return unit_interval(e / (1.0 + e))


def hybrid_geometric(a: float, b: float) -> float:
    """√(a·b) of two novelty scores (each clamped, NaN novel): 0 when either says "seen", e.g. E11's calibrated
    kNN and TransE residual, so an exact duplicate's triple does not count as half-novel."""
    return unit_interval(math.sqrt(unit_interval(a) * unit_interval(b)))
