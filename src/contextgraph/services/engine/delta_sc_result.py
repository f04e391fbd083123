"""What a ΔS/ΔC computation gives: per-space results, the aggregate UTL numbers, and inject_context's `utl`
block shaped from them (services.delta_sc computes them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from contextgraph.constitution import Constitution
from contextgraph.fingerprint import SPACES, Fingerprint
from contextgraph.utl import learning
from contextgraph.utl.johari import classify


@dataclass(frozen=True, slots=True)
class SpaceResult:
    space: int
    delta_s: float
    delta_c: float
    method: str
    connectivity: float
    cluster_fit: float
    neighbours: int


@dataclass(frozen=True)
class DeltaSc:
    spaces: list[SpaceResult]
    consistency: float
    entropy: float
    coherence: float
    learning_score: float
    quadrant: str
    lifecycle: learning.Lifecycle
    threshold: float
    timings_ms: dict[str, float] = field(default_factory=dict)
    # seq → fingerprint of every neighbour gathered, in any space (not reported; reused for `related`)
    neighbourhood: dict[int, Fingerprint] = field(default_factory=dict, repr=False)
    predicted_learning_score: float = 0.5  # L̂ from E1 alone, before the other spaces were scored
    phase_spread: float = 0.0  # φ, the memory's own binding spread (D19)
    emotional_weight: float = 1.0
    memory_count: int = 0  # the store's size it was measured against (the lifecycle stage's input)
    # what L and L̂ are made of (D22): Meta-UTL rescores them at another λ from these
    parts: learning.ScoreParts | None = None
    predicted_parts: learning.ScoreParts | None = None

    @property
    def delta_s(self) -> list[float]:
        return [s.delta_s for s in self.spaces]

    @property
    def delta_c(self) -> list[float]:
        return [s.delta_c for s in self.spaces]

    def per_space(self, precision: int = 4) -> list[dict[str, Any]]:
        return [{"space": f"E{s.space}", "name": SPACES[s.space - 1].name, "delta_s": round(s.delta_s, precision),
                 "delta_c": round(s.delta_c, precision),
                 "quadrant": classify(s.delta_s, s.delta_c, self.threshold), "method": s.method}
                for s in self.spaces]

    def diagnostics(self, precision: int = 4) -> list[dict[str, Any]]:
        return [{"space": f"E{s.space}", "connectivity": round(s.connectivity, precision),
                 "cluster_fit": round(s.cluster_fit, precision), "consistency": round(self.consistency, precision),
                 "neighbours": s.neighbours} for s in self.spaces]


def utl_payload(result: DeltaSc, constitution: Constitution, suggested_action: str) -> dict[str, Any]:
    """inject_context's `utl` block: the aggregates, the per-space values and how each was computed."""
    p = int(constitution.get("pulse.precision"))
    names = [SPACES[s.space - 1].name for s in result.spaces]
    return {
        "entropy": round(result.entropy, p),
        "coherence": round(result.coherence, p),
        "learningScore": round(result.learning_score, p),
        # D19: L̂, the engine's prediction from E1 alone before the other spaces were scored (meta-cognition
        # compares the two), and φ, the memory's own binding phase spread in L's cos φ
        "predictedLearningScore": round(result.predicted_learning_score, p),
        "phaseSpread": round(result.phase_spread, p),
        "johariQuadrant": result.quadrant,
        "suggestedAction": suggested_action,
        "surprise": round(max(result.delta_s), p),
        "delta_s": {n: round(s.delta_s, p) for n, s in zip(names, result.spaces)},
        "delta_c": {n: round(s.delta_c, p) for n, s in zip(names, result.spaces)},
        "components": {
            "connectivity": round(float(np.mean([s.connectivity for s in result.spaces])), p),
            "cluster_fit": round(float(np.mean([s.cluster_fit for s in result.spaces])), p),
            "consistency": round(result.consistency, p),
        },
        "methods": {n: s.method for n, s in zip(names, result.spaces)},
        "lifecycle": {"stage": result.lifecycle.stage, "lambda_s": result.lifecycle.lambda_s,
                      "lambda_c": result.lifecycle.lambda_c},
        "compute_ms": result.timings_ms.get("total"),
    }
