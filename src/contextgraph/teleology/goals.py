"""The store's goals, and how stage 4 re-ranks by them (docs/retrieval.md#stage-4-purpose).

A goal is a theme of the store: the north star's cluster or any other cluster the clustering found (the
sub-goals). Each is kept as its E1 centroid (a unit vector) and the median E1 cosine of its members to that
centroid (`reference`). A memory's alignment to a goal is its E1 cosine to the centroid relative to that median,
capped at 1 (1: as close as a typical member); the same form as the star's 13-space alignment
(teleology.purpose.alignment), in the one space the goals were clustered in, so every goal is measured alike.

Re-ranking, not filtering: a query belongs to the goal it aligns with best, when that alignment reaches the pivot
(ATC's θ_warn); an off-goal query leaves the ranking as it is. For a query that belongs to a goal, each
candidate's fused score is multiplied by 1 + β·clip((a − θ) / max(θ, 1 − θ), −1, 1): bounded by ±β, so a
candidate that leads by more than that margin keeps its place, and none is ever removed."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Goal:
    id: str
    label: str
    centroid: np.ndarray  # [d] unit E1 vector
    reference: float  # median E1 cosine of the members to the centroid (> 0)
    size: int


@dataclass(frozen=True)
class GoalSet:
    goals: tuple[Goal, ...]

    def __len__(self) -> int:
        return len(self.goals)

    def matrix(self) -> tuple[np.ndarray, np.ndarray]:
        """([G, d] centroids, [G] references)."""
        return (np.stack([g.centroid for g in self.goals]).astype(np.float64),
                np.array([g.reference for g in self.goals], dtype=np.float64))

    def alignments(self, vectors: np.ndarray) -> np.ndarray:
        """[n, G]: each E1 vector's alignment to every goal, in [0, 1]."""
        return goal_alignments(vectors, *self.matrix())


def goal_alignments(vectors: np.ndarray, centroids: np.ndarray, references: np.ndarray) -> np.ndarray:
    """[n, G] = clip(cos(vᵢ, c_g) / ref_g, 0, 1) for E1 vectors `vectors` [n, d] (any length; zero rows give 0)."""
    v = np.atleast_2d(np.asarray(vectors, dtype=np.float64))
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    cos = (v / np.where(norms > 0, norms, 1.0)) @ np.asarray(centroids, dtype=np.float64).T
    return np.clip(cos / np.maximum(np.asarray(references, dtype=np.float64), 1e-6), 0.0, 1.0)


def query_goal(alignments: np.ndarray, pivot: float) -> int | None:
    """The goal a query belongs to (its alignments [G] to each goal): the best aligned one, when it reaches the
    pivot; None for an off-goal query (stage 4 then leaves its ranking alone). Ties go to the first (largest)."""
    a = np.asarray(alignments, dtype=np.float64)
    if a.size == 0:
        return None
    best = int(np.argmax(a))
    return best if a[best] >= pivot else None


def rerank_factors(alignments: np.ndarray, pivot: float, bound: float) -> np.ndarray:
    """Each candidate's multiplier 1 + β·clip((a − θ) / max(θ, 1 − θ), −1, 1), in [1 − β, 1 + β]: above the
    pivot a boost, below it a penalty, at most β either way (β = `bound`, in [0, 1))."""
    if not 0.0 <= bound < 1.0:
        raise ValueError("the re-rank bound must be in [0, 1)")
    a = np.asarray(alignments, dtype=np.float64)
    span = max(pivot, 1.0 - pivot, 1e-6)
    return 1.0 + bound * np.clip((a - pivot) / span, -1.0, 1.0)

