"""A time space's vectors as a few coordinates: E2 encodes a time, E3 three phases (day, week, year), E4 two
positions (session, store), and each one's similarity is, or is ordered like, a sum over its axes of a kernel of
the gap on that axis. The embedders read the coordinates back from a vector (their `decode_*`) and declare their
axes here; the timeline index (storage.derived_index) keeps the coordinates instead of the vectors and finds a
query's nearest by walking each axis outward from the query (the threshold algorithm: `bound` says how close
anything beyond the walk can still be)."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np


class Axis(NamedTuple):
    period: float | None  # a circular axis wraps at this (E3's cycles: 2π); None for a line (time, positions)
    kernel: Callable[[np.ndarray], np.ndarray]  # gaps ≥ 0 → this axis's share of the closeness
    bound: Callable[[float], float]  # the most `kernel` can be at any gap ≥ g (non-increasing in g)


def gaps(query: np.ndarray, coordinates: np.ndarray, axes: tuple[Axis, ...]) -> np.ndarray:
    """float64 [n, axes]: |Δ| per axis between the query's coordinates [axes] and each row's, the short way
    round on a circular axis."""
    gap = np.abs(np.asarray(coordinates, dtype=np.float64) - query)
    for a, axis in enumerate(axes):
        if axis.period is not None:
            gap[:, a] %= axis.period
            gap[:, a] = np.minimum(gap[:, a], axis.period - gap[:, a])
    return gap


def closeness(query: np.ndarray, coordinates: np.ndarray, axes: tuple[Axis, ...]) -> np.ndarray:
    """float64 [n]: Σ over the axes of kernel(gap); higher is nearer."""
    gap = gaps(query, coordinates, axes)
    return np.sum([np.asarray(axis.kernel(gap[:, a]), dtype=np.float64) for a, axis in enumerate(axes)], axis=0)


def monotone(kernel: Callable[[np.ndarray], np.ndarray]) -> Callable[[float], float]:
    """The bound of a kernel that never rises with the gap: its own value there."""
    return lambda g: float(kernel(np.array([g]))[0])


def tabulated(values: np.ndarray, span: float) -> tuple[Callable[[np.ndarray], np.ndarray], Callable[[float], float]]:
    """(kernel, bound) from samples of a kernel at gaps 0 … span, evenly spaced: the kernel looks up the nearest
    sample, the bound the largest sample at or beyond the gap (a kernel that ripples, like a Fejér mixture)."""
    steps = len(values) - 1
    suffix_max = np.maximum.accumulate(values[::-1])[::-1]

    def index(g: np.ndarray) -> np.ndarray:
        return np.minimum(np.asarray(g, dtype=np.float64) * (steps / span) + 0.5, steps).astype(np.intp)

    def bound(g: float) -> float:
        # the sample below g too: the kernel's value between two samples is read from the nearer one
        return float(suffix_max[max(int(g * steps / span), 0)]) if g <= span else float(values[-1])

    return (lambda g: values[index(g)]), bound
