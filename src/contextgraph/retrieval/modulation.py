"""What the neuromodulators do to retrieval (docs/retrieval.md). Pure numpy; every effect is deterministic for a given
state and is the identity at the baselines (the same ranks and the same score bytes as without modulation).

    dopamine β       sharpness: final scores s ∈ [0, 1] become s^(β/β₀). Monotone, so the ranking never moves;
                     β > β₀ pushes the weaker results down (a peakier score distribution), β < β₀ flattens it.
    serotonin s      space weights: every non-zero RRF weight wᵢ becomes w_max·(wᵢ/w_max)^p, p = 1 − 2(s − s₀).
                     s > s₀ evens the spaces out (p → 0: every active space votes as the strongest), s < s₀
                     concentrates the vote on the strongest spaces (p → 2). Spaces weighted 0 stay off.
    noradrenaline T  attention temperature: the RRF constant becomes k·T and the candidate pools and rerank head
                     ×T. A hot T flattens the rank-to-score curve (lower-ranked candidates of each space weigh more)
                     and looks further down each space's list; a cold T trusts the first ranks. No randomness.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class Modulation:
    score_exponent: float = 1.0  # β / β₀
    weight_exponent: float = 1.0  # p
    temperature: float = 1.0  # T

    @property
    def neutral(self) -> bool:
        return self.score_exponent == 1.0 and self.weight_exponent == 1.0 and self.temperature == 1.0


NEUTRAL = Modulation()


def sharpen(scores: np.ndarray, exponent: float) -> np.ndarray:
    """s^exponent for s ≥ 0 (negative scores, which the pipeline never makes, are kept as they are)."""
    if exponent == 1.0:
        return scores
    s = np.asarray(scores, dtype=np.float64)
    return np.where(s > 0, np.power(np.clip(s, 0.0, None), exponent), s)


def reweight(weights: Mapping[int, float], exponent: float) -> dict[int, float]:
    """w_max·(w/w_max)^exponent for every non-zero weight; zeros stay zero."""
    if exponent == 1.0:
        return dict(weights)
    active = [w for w in weights.values() if w > 0]
    if not active:
        return dict(weights)
    top = max(active)
    return {space: (top * math.pow(w / top, exponent) if w > 0 else w) for space, w in weights.items()}


def widened(count: int, temperature: float) -> int:
    """A candidate count scaled by the temperature (at least 1)."""
    if temperature == 1.0:
        return count
    return max(1, math.ceil(count * temperature))
