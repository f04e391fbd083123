"""Alignment drift: the mean alignment of the memories written in each time window, its least-squares slope
(per window), and the memories that pull the latest window away from the star's own baseline."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Windows:
    starts: np.ndarray  # [w] window start times
    means: np.ndarray  # [w] mean alignment (nan where the window is empty)
    counts: np.ndarray  # [w]
    slope: float  # change of mean alignment per window (0 with fewer than two non-empty windows)


def windows(times: np.ndarray, alignments: np.ndarray, end: float, span: float, n_windows: int) -> Windows:
    """Split [end − span, end] into n_windows equal windows and average the alignments falling in each."""
    t = np.asarray(times, dtype=np.float64)
    a = np.asarray(alignments, dtype=np.float64)
    width = span / n_windows
    starts = end - span + width * np.arange(n_windows)
    idx = np.floor((t - (end - span)) / width).astype(np.int64)
    inside = (idx >= 0) & (idx < n_windows) if len(t) else np.zeros(0, dtype=bool)
    counts = np.bincount(idx[inside], minlength=n_windows)
    sums = np.bincount(idx[inside], weights=a[inside], minlength=n_windows)
    means = np.divide(sums, counts, out=np.full(n_windows, np.nan), where=counts > 0)
    present = np.flatnonzero(counts > 0)
    slope = 0.0
    if len(present) >= 2:
        slope = float(np.polyfit(present.astype(np.float64), means[present], 1)[0])  # least squares
    return Windows(starts, means, counts, slope)


def severity(drop: float, bounds: dict[str, float]) -> str:
    """none / low / medium / high by how far the latest mean alignment fell below the baseline."""
    if drop >= bounds["high"]:
        return "high"
    if drop >= bounds["medium"]:
        return "medium"
    if drop >= bounds["low"]:
        return "low"
    return "none"
