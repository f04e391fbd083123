"""Calibration quality of (confidence, outcome) pairs (get_calibration_metrics): ECE, MCE, Brier.

    ECE   = Σ_b (n_b / N) · |mean(p in b) − mean(y in b)|     over equal-width confidence bins b
    MCE   = max_b |mean(p in b) − mean(y in b)|                over the non-empty bins
    Brier = mean (p − y)²

p = 1.0 falls in the last bin. No pairs → every metric is None (nothing measured is not "perfect").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class CalibrationReport:
    ece: float | None
    mce: float | None
    brier: float | None
    pairs: int
    bins: tuple[tuple[float, float, float, int], ...]  # (lower edge, mean confidence, outcome rate, count)


def _as_arrays(confidence: Sequence[float] | np.ndarray,
               outcome: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p = np.clip(np.nan_to_num(np.asarray(confidence, dtype=np.float64).ravel(), nan=0.5), 0.0, 1.0)
    y = np.asarray(outcome, dtype=np.float64).ravel()
    if p.size != y.size:
        raise ValueError(f"{p.size} confidences for {y.size} outcomes")
    return p, y


def bin_index(p: np.ndarray, bins: int) -> np.ndarray:
    """Equal-width bin of each confidence in [0, 1]; 1.0 goes to the last bin."""
    if bins < 1:
        raise ValueError(f"bins must be at least 1 (got {bins})")
    return np.minimum((p * bins).astype(np.int64), bins - 1)


def calibration_report(confidence: Sequence[float] | np.ndarray, outcome: Sequence[float] | np.ndarray,
                       bins: int = 10) -> CalibrationReport:
    p, y = _as_arrays(confidence, outcome)
    n = p.size
    if n == 0:
        return CalibrationReport(None, None, None, 0, ())
    idx = bin_index(p, bins)
    counts = np.bincount(idx, minlength=bins)
    conf_sum = np.bincount(idx, weights=p, minlength=bins)
    out_sum = np.bincount(idx, weights=y, minlength=bins)
    filled = counts > 0
    mean_conf = conf_sum[filled] / counts[filled]
    rate = out_sum[filled] / counts[filled]
    gaps = np.abs(mean_conf - rate)
    ece = float(np.sum(counts[filled] / n * gaps))
    mce = float(gaps.max())
    brier = float(np.mean((p - y) ** 2))
    table = tuple((float(b / bins), float(c), float(r), int(k))
                  for b, c, r, k in zip(np.flatnonzero(filled), mean_conf, rate, counts[filled]))
    return CalibrationReport(ece, mce, brier, n, table)


def ece(confidence: Sequence[float] | np.ndarray, outcome: Sequence[float] | np.ndarray,
        bins: int = 10) -> float | None:
    return calibration_report(confidence, outcome, bins).ece
