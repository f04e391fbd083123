"""Per-memory binding (SPEC §9): how well a candidate memory agrees with the current context across spaces.

Agreement in a space is the candidate's standing among the operation's candidates in that space's own score
(`rank_agreement`): 1 for the best, 0 for the worst. Raw similarities are not comparable across spaces (cosine,
dot products, Jaccard overlaps, Hamming), which is why retrieval fuses ranks (RRF) and not scores; binding on
standings asks the same question of every space: does it put this memory near the top?

r_m measures how unanimous the spaces are, not which way: thirteen spaces that all put a memory last bind as
tightly as thirteen that put it first. The mean phase ψ_m tells the two apart (ψ_m < π/2: the verdict leans
to agreement), and the workspace admits only memories bound on the agreeing side (`agrees`).

Each space's agreement aᵢ ∈ [0, 1] becomes a phase θᵢ = π(1 − aᵢ): full agreement sits at 0, none at π. r_m is
the order parameter of those phases, so r_m ≈ 1 when every space agrees (or every space disagrees alike — a
consistent verdict binds as well; the workspace ranks by r_m × importance × alignment, so the agreement level
itself still counts there).
"""

from __future__ import annotations

import math

import numpy as np

from contextgraph.gwt.kuramoto import order_parameter


def rank_agreement(score: float, reference: np.ndarray) -> float:
    """How many reference scores `score` beats, over N − 1: the best of N → 1, the worst → 0 (a score from
    outside the reference that beats them all is clipped to 1). One reference score, or none → 1."""
    ref = np.nan_to_num(np.asarray(reference, dtype=np.float64).ravel(), nan=-np.inf)
    if ref.size <= 1:
        return 1.0
    s = float(np.nan_to_num(score, nan=-np.inf))
    return float(min(1.0, np.count_nonzero(ref < s) / (ref.size - 1)))


def binding_phases(agreements: np.ndarray) -> np.ndarray:
    a = np.clip(np.nan_to_num(np.asarray(agreements, dtype=np.float64), nan=0.0), 0.0, 1.0)
    return math.pi * (1.0 - a)


def binding_r(agreements: np.ndarray) -> float:
    """r_m for one memory's agreements (1-d), or 0 for none."""
    return order_parameter(binding_phases(agreements))[0]


def binding(agreements: np.ndarray) -> tuple[float, float]:
    """(r_m, ψ_m) for one memory's agreements; none → (0, π/2)."""
    a = np.asarray(agreements, dtype=np.float64).ravel()
    if a.size == 0:
        return 0.0, math.pi / 2
    return order_parameter(binding_phases(a))


def agrees(psi: float) -> bool:
    """The spaces' mean verdict is agreement: the mean phase lies on the a > ½ side (θ < π/2)."""
    return psi < math.pi / 2


def binding_r_batch(agreements: np.ndarray) -> np.ndarray:
    """r_m for each row of an [m, 13] agreement matrix."""
    return binding_batch(agreements)[0]


def binding_batch(agreements: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(r_m, ψ_m) for each row of an [m, 13] agreement matrix."""
    a = np.asarray(agreements, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] == 0 or a.shape[1] == 0:
        n = a.shape[0] if a.ndim == 2 else 0
        return np.zeros(n), np.full(n, math.pi / 2)
    z = np.exp(1j * binding_phases(a)).mean(axis=1)
    return np.clip(np.abs(z), 0.0, 1.0), np.mod(np.angle(z), 2 * math.pi)
