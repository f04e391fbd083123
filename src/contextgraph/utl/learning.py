"""The multi-space learning score and the lifecycle weights (docs/utl.md#learning-score, docs/decisions.md#d22).

    L = clip(wₑ · max(0, cos φ) · S^λ_S · C^λ_C, 0, 1),   S = Σᵢ τᵢ ΔSᵢ,  C = Σⱼ τⱼ ΔCⱼ

a λ-weighted geometric mean of surprise and coherence: zero for a duplicate (S ≈ 0) and for a text unrelated to
what is stored (C ≈ 0), highest for a new fact on a known topic. τ the per-space teleological weights (normalised
to sum 1; uniform until a teleological profile exists), λ_S/λ_C the lifecycle weights (normalised to sum 1),
wₑ = 0.5 + importance ∈ [0.5, 1.5] the emotional weight, and φ ∈ [0, π] the memory's own phase spread
(docs/decisions.md#d19): the circular spread √(−2 ln r_m) of its 13 binding phases θᵢ = π(1 − aᵢ), aᵢ its
agreement with its context in space i (`binding_phase_spread`). A memory whose spaces agree (all familiar, or
all new) has φ ≈ 0; one that some spaces know and others do not has a large φ, and max(0, cos φ) discounts
what it teaches.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class Lifecycle:
    stage: str
    lambda_s: float
    lambda_c: float


def lifecycle(memory_count: int, stages: Sequence[dict]) -> Lifecycle:
    """The stage whose `min_memories` is the largest one not above `memory_count`."""
    current = stages[0]
    for stage in stages:
        if memory_count >= stage["min_memories"]:
            current = stage
    return Lifecycle(current["stage"], float(current["lambda_s"]), float(current["lambda_c"]))


def _clamp(x: float, lo: float, hi: float) -> float:
    if math.isnan(x):
        return lo
    return min(max(x, lo), hi)


def normalised(weights: Sequence[float]) -> list[float]:
    """τ normalised to sum 1; all-zero (or negative) weights fall back to uniform."""
    clean = [max(float(w), 0.0) if math.isfinite(w) else 0.0 for w in weights]
    total = sum(clean)
    if total <= 0.0:
        return [1.0 / len(clean)] * len(clean)
    return [w / total for w in clean]


def sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


@dataclass(frozen=True, slots=True)
class ScoreParts:
    """What L is made of: `weight` = wₑ·max(0, cos φ), `surprise` S and `coherence` C (τ-weighted means), and
    λ_S (λ_C = 1 − λ_S). L at another λ_S follows from them alone (`at`): Meta-UTL rescores its window so."""

    weight: float
    surprise: float
    coherence: float
    lambda_s: float

    @property
    def score(self) -> float:
        return self.at(self.lambda_s)

    def at(self, lambda_s: float) -> float:
        lam = _clamp(lambda_s, 0.0, 1.0)
        return _clamp(self.weight * self.surprise ** lam * self.coherence ** (1.0 - lam), 0.0, 1.0)


def score_parts(
    delta_s: Sequence[float],
    delta_c: Sequence[float],
    tau: Sequence[float],
    lambda_s: float,
    lambda_c: float,
    emotional_weight: float = 1.0,
    phase_spread: float = 0.0,
    emotional_bounds: tuple[float, float] = (0.5, 1.5),
    coherence_tau: Sequence[float] | None = None,
) -> ScoreParts:
    """The parts of L (D22). Inputs are clamped to their domains, so no input yields NaN or infinity; λ_S and λ_C
    are normalised to sum 1 (both zero or unusable → ½ each). `coherence_tau`: C's own per-space weights
    (normalised), when they differ from S's τ; None → τ."""
    c_tau = tau if coherence_tau is None else coherence_tau
    if not (len(delta_s) == len(delta_c) == len(tau) == len(c_tau)):
        raise ValueError(f"ΔS, ΔC and τ must have one value per space (got {len(delta_s)}, {len(delta_c)}, {len(tau)}, "
                         f"{len(c_tau)})")
    weights = normalised(tau)
    surprise = _clamp(sum(w * _clamp(s, 0.0, 1.0) for w, s in zip(weights, delta_s)), 0.0, 1.0)
    coherence = _clamp(sum(w * _clamp(c, 0.0, 1.0) for w, c in zip(normalised(c_tau), delta_c)), 0.0, 1.0)
    ls, lc = _clamp(lambda_s, 0.0, 1.0), _clamp(lambda_c, 0.0, 1.0)
    lam = ls / (ls + lc) if ls + lc > 0.0 else 0.5
    w_e = _clamp(emotional_weight, *emotional_bounds)
    phi = _clamp(phase_spread, 0.0, math.pi)
    return ScoreParts(w_e * max(0.0, math.cos(phi)), surprise, coherence, lam)


def predicted_parts(actual: ScoreParts, surprise: float, coherence: float) -> ScoreParts:
    """L̂'s parts: the S and C the engine expects (from E1 alone, before the other spaces are scored) with L's own
    weight wₑ·max(0, cos φ) and λ. The weight is not what is predicted: an L̂ without it (φ = 0) stood above L by
    cos φ in every operation, and Meta-UTL, which moves λ_S by α·(L − L̂), could only ever push λ one way."""
    return ScoreParts(actual.weight, _clamp(surprise, 0.0, 1.0), _clamp(coherence, 0.0, 1.0), actual.lambda_s)


def learning_score(
    delta_s: Sequence[float],
    delta_c: Sequence[float],
    tau: Sequence[float],
    lambda_s: float,
    lambda_c: float,
    emotional_weight: float = 1.0,
    phase_spread: float = 0.0,
    emotional_bounds: tuple[float, float] = (0.5, 1.5),
) -> float:
    """L ∈ [0, 1] (D22): wₑ · max(0, cos φ) · S^λ_S · C^λ_C, clipped."""
    return score_parts(delta_s, delta_c, tau, lambda_s, lambda_c, emotional_weight, phase_spread,
                       emotional_bounds).score


def emotional_weight(importance: float | None, default: float = 1.0,
                     bounds: tuple[float, float] = (0.5, 1.5)) -> float:
    """wₑ = 0.5 + importance (D19), clamped to `bounds`; no importance known → `default`."""
    if importance is None or not math.isfinite(float(importance)):
        return _clamp(float(default), *bounds)
    return _clamp(0.5 + float(importance), *bounds)


def binding_phase_spread(delta_s: Sequence[float]) -> float:
    """φ of a memory from its per-space novelty: agreement with its context aᵢ = 1 − ΔSᵢ (the calibrated
    familiarity: its similarity to its neighbours normalised against the store's own distribution), phases
    θᵢ = π(1 − aᵢ) = π·ΔSᵢ, r_m their order parameter, φ = √(−2 ln r_m) clamped to [0, π]. No values → 0."""
    s = np.clip(np.nan_to_num(np.asarray(delta_s, dtype=np.float64), nan=1.0), 0.0, 1.0)
    if s.size == 0:
        return 0.0
    z = np.exp(1j * math.pi * s).mean()
    r = float(min(max(abs(z), 0.0), 1.0))
    if r <= 0.0:
        return math.pi
    if r >= 1.0:
        return 0.0
    return min(math.sqrt(-2.0 * math.log(r)), math.pi)
