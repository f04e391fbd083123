"""C(t) = I × R × D and its state (docs/engine.md#consciousness).

    I = r                                   integration: the Kuramoto order parameter
    R = sigmoid(4·meta_accuracy − 2)        reflection: how well the engine predicts its own learning
    D = −Σ pᵢ log pᵢ / log N                differentiation: normalised entropy of the purpose vector

States (docs/engine.md): HYPERSYNC is checked first and means r > 0.95 (the oscillators, i.e. the spaces, have stopped
differing: over-synchronisation, a property of the network and not of C — R ≤ sigmoid(2) ≈ 0.881 keeps C below
0.95). Otherwise the state follows C by the constitution's lower bounds (DORMANT 0, FRAGMENTED 0.3, EMERGING 0.5,
CONSCIOUS 0.8): the highest bound C reaches.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np


def sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


def _unit(x: float) -> float:
    return min(max(x, 0.0), 1.0) if math.isfinite(x) else 0.0


def reflection(meta_accuracy: float) -> float:
    return sigmoid(4.0 * _unit(meta_accuracy) - 2.0)


def differentiation(purpose: np.ndarray) -> float:
    """Normalised Shannon entropy of the purpose vector taken as a distribution (negatives count as 0). A zero
    vector has no purpose to differentiate: D = 0. Fewer than two entries: D = 0 (log 1 = 0 would divide)."""
    p = np.clip(np.nan_to_num(np.asarray(purpose, dtype=np.float64).ravel(), nan=0.0, posinf=0.0), 0.0, None)
    n = p.size  # normalise by log N of the whole vector: zero entries are undifferentiated spaces, not absent
    total = float(p.sum())
    if n < 2 or total <= 0.0:
        return 0.0
    p = p[p > 0] / total
    return _unit(float(-(p * np.log(p)).sum() / math.log(n)))


def consciousness(r: float, meta_accuracy: float, purpose: np.ndarray) -> dict[str, float]:
    i = _unit(r)
    rr = reflection(meta_accuracy)
    d = differentiation(purpose)
    return {"C": _unit(i * rr * d), "I": i, "R": rr, "D": d}


def state(c: float, bounds: Mapping[str, float], r: float | None = None) -> str:
    """HYPERSYNC when `r` is given and strictly above its bound (D14); otherwise the state whose lower bound is
    the highest one C reaches (bounds as in the constitution; HYPERSYNC is not reachable through C), each bound
    inclusive. Without `r` (older callers) C is classified alone and HYPERSYNC needs C strictly above its bound."""
    hyper = bounds.get("HYPERSYNC")
    if r is not None and hyper is not None and math.isfinite(r) and r > hyper:
        return "HYPERSYNC"
    c = _unit(c)
    ordered = sorted(((n, b) for n, b in bounds.items() if r is None or n != "HYPERSYNC"), key=lambda kv: kv[1])
    current = ordered[0][0]
    for name, lo in ordered:
        if c > lo or (c == lo and name != "HYPERSYNC"):
            current = name
    return current
