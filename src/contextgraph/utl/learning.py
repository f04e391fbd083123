"""The multi-space learning score and the lifecycle weights (SPEC §8).

    L = sigmoid(gain · (Σᵢ τᵢ λ_S ΔSᵢ) · (Σⱼ τⱼ λ_C ΔCⱼ) · wₑ · cos φ)

τ the per-space teleological weights (normalised to sum 1), λ_S/λ_C the lifecycle weights, wₑ ∈ [0.5, 1.5]
the emotional weight, φ ∈ [0, π] the Kuramoto phase spread.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


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


def learning_score(
    delta_s: Sequence[float],
    delta_c: Sequence[float],
    tau: Sequence[float],
    lambda_s: float,
    lambda_c: float,
    emotional_weight: float = 1.0,
    phase_spread: float = 0.0,
    gain: float = 2.0,
    emotional_bounds: tuple[float, float] = (0.5, 1.5),
) -> float:
    """L ∈ [0, 1]. Inputs are clamped to their domains, so no input yields NaN or infinity."""
    if not (len(delta_s) == len(delta_c) == len(tau)):
        raise ValueError(f"ΔS, ΔC and τ must have one value per space (got {len(delta_s)}, {len(delta_c)}, {len(tau)})")
    weights = normalised(tau)
    surprise = sum(w * lambda_s * _clamp(s, 0.0, 1.0) for w, s in zip(weights, delta_s))
    coherence = sum(w * lambda_c * _clamp(c, 0.0, 1.0) for w, c in zip(weights, delta_c))
    w_e = _clamp(emotional_weight, *emotional_bounds)
    phi = _clamp(phase_spread, 0.0, math.pi)
    return _clamp(sigmoid(gain * surprise * coherence * w_e * math.cos(phi)), 0.0, 1.0)
