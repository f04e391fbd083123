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
                     Above the baseline it also explores the graph: the first hits' graph neighbours join the
                     candidates and each gets a share σ of its best linked hit's fused score (`spread`).
    dopamine boosts  what the agent just used (relevance evidence) is ranked higher within the answer: its score
                     s·(1 + b), b ≤ a bound; the answer's set never changes, only its order (`favoured`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True, slots=True)
class Modulation:
    score_exponent: float = 1.0  # β / β₀
    weight_exponent: float = 1.0  # p
    temperature: float = 1.0  # T
    spread: float = 0.0  # σ: the share of a first hit's fused score its graph neighbours get (noradrenaline)
    explore_head: int = 5  # how many first hits (of each index, then by fused score) are explored when σ > 0
    # memory id or id prefix → b: within the answer, that memory's score becomes s·(1 + b) (dopamine)
    boosts: Mapping[str, float] = field(default_factory=dict)

    @property
    def neutral(self) -> bool:
        return (self.score_exponent == 1.0 and self.weight_exponent == 1.0 and self.temperature == 1.0
                and self.spread == 0.0 and not self.boosts)


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


def spread(fused: np.ndarray, links: Sequence[tuple[int, int, float]], strength: float) -> np.ndarray:
    """fused_j + σ · max over links (h → j, weight w) of w · fused_h: each candidate linked to a first hit h gets
    a share of h's score (the best link counts, not their sum, so a hub is not lifted by its many links). The
    unchanged array when σ = 0 or nothing is linked."""
    if strength <= 0.0 or not links:
        return fused
    bonus = np.zeros(len(fused), dtype=np.float64)
    for head, other, weight in links:
        if head != other and np.isfinite(fused[head]):
            bonus[other] = max(bonus[other], weight * float(fused[head]))
    return np.asarray(fused, dtype=np.float64) + strength * bonus


def boost_of(memory_id: str, boosts: Mapping[str, float]) -> float:
    """The boost of a memory: the largest of its id's and its id prefixes' (a citation tag names a prefix)."""
    return max((b for key, b in boosts.items() if memory_id.startswith(key)), default=0.0)


def favoured(ids: Sequence[str], scores: Sequence[float], boosts: Mapping[str, float]) -> tuple[list[int], list[float]]:
    """The answer's order and scores after dopamine's boosts: positions into `ids`, sorted by s·(1 + b) (ties keep
    the given order), and those scores. The set is the one given: a boost reorders, it never hides a result."""
    boosted = [float(s) * (1.0 + boost_of(memory_id, boosts)) for memory_id, s in zip(ids, scores)]
    order = sorted(range(len(boosted)), key=lambda i: -boosted[i])
    return order, [boosted[i] for i in order]
