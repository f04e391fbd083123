"""The SELF_EGO_NODE's identity continuity (docs/engine.md#ego-and-identity-continuity).

    IC = cos(PV_t, PV_{t−1}) × r

PV the system's purpose vector now and one operation ago, r the Kuramoto order parameter. A purpose that holds
its direction in a synchronised network keeps its identity; a purpose that swings, or a network that falls
apart, loses it. Purpose vectors are non-negative (per-space alignments or coherences), so the cosine is in
[0, 1]; the first point of a trajectory has no predecessor, and a predecessor of all zeros (the purpose of an
empty store) has no direction: both count as continuous (cos = 1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine clipped to [0, 1]; a zero vector has no direction → 0."""
    x = np.nan_to_num(np.asarray(a, dtype=np.float64))
    y = np.nan_to_num(np.asarray(b, dtype=np.float64))
    denom = float(np.linalg.norm(x) * np.linalg.norm(y))
    if denom <= 0.0:
        return 0.0
    return float(min(max(float(x @ y) / denom, 0.0), 1.0))


def identity_continuity(pv_now: Sequence[float], pv_previous: Sequence[float] | None, r: float) -> float:
    r = float(np.clip(np.nan_to_num(r), 0.0, 1.0))
    if pv_previous is None or not np.any(np.nan_to_num(np.asarray(pv_previous, dtype=np.float64))):
        return r  # no earlier purpose with a direction (the start, or an empty store's all-zero ΔC): nothing broke
    return cosine(pv_now, pv_previous) * r


def identity_status(ic: float, bounds: Mapping[str, float]) -> str:
    """Healthy above `healthy`; Critical below `critical` (requests a dream); Warning below `warning`; Stable in
    between. Boundaries: a value must pass `healthy` to be Healthy and fall below the others to be flagged. An
    unmeasurable value (NaN) is Critical: an identity that cannot be measured is not one to trust."""
    if ic != ic:
        return "Critical"
    if ic > bounds["healthy"]:
        return "Healthy"
    if ic < bounds["critical"]:
        return "Critical"
    if ic < bounds["warning"]:
        return "Warning"
    return "Stable"


def coherence_with_actions(purpose: Sequence[float], actions: Sequence[Sequence[float]]) -> float:
    """Mean cosine between the purpose vector and the per-space vectors of recent actions; none → 0."""
    if not len(actions):
        return 0.0
    return float(np.mean([cosine(purpose, a) for a in actions]))
