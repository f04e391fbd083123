"""Meta-UTL's λ adaptation (docs/engine.md#meta-utl) as pure functions.

The learning score L = wₑ·max(0, cos φ)·S^λ_S·C^λ_C (docs/decisions.md#d22, λ_C = 1 − λ_S) is predicted before a
store (L̂) and measured after (L). When the prediction error |L − L̂| exceeds the threshold,

    λ_S ← clip(λ_S + α·(L − L̂), lo, hi),   λ_C = 1 − λ_S

(target L, actual L̂): an engine that under-predicts what operations teach weighs novelty more. An operation's L
at another λ follows from its recorded L, the λ it was scored with and d = ln S − ln C: L(λ') = L·e^{(λ' − λ)·d}
(exact while L is not clipped at 1). L depends on λ itself, not on λ_S·λ_C, so λ and 1 − λ score differently and
the escalation's Bayesian search can tell them apart: it scores any λ on the recorded window by mean |L(λ) − L̂(λ)|
+ κ·(λ − λ_prior)², the prediction error with a Gaussian prior on λ at the lifecycle value.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def lambda_step(lambda_s: float, error: float, alpha: float, error_threshold: float, lo: float,
                hi: float) -> float:
    """One operation's λ_S update; unchanged while |error| ≤ the threshold. error = L − L̂."""
    if not abs(error) > error_threshold:
        return float(np.clip(lambda_s, lo, hi))
    return float(np.clip(lambda_s + alpha * error, lo, hi))


_LOG_FLOOR = 1e-6  # S or C at 0 make L 0 at every λ strictly inside (0, 1): a finite log ratio keeps it so


def log_ratio(surprise: float, coherence: float) -> float:
    """d = ln S − ln C, each floored, so L(λ') = L(λ)·e^{(λ' − λ)·d} stays finite."""
    s = min(max(float(surprise), _LOG_FLOOR), 1.0) if np.isfinite(surprise) else _LOG_FLOOR
    c = min(max(float(coherence), _LOG_FLOOR), 1.0) if np.isfinite(coherence) else _LOG_FLOOR
    return float(np.log(s) - np.log(c))


def rescale(scores: Sequence[float] | np.ndarray, lambda_then: Sequence[float] | np.ndarray,
            lambda_now: float, log_ratios: Sequence[float] | np.ndarray) -> np.ndarray:
    """Each L recomputed at λ_S = lambda_now from its value at λ_S = lambda_then and its d = ln S − ln C (D22);
    clipped to [0, 1]."""
    then = np.asarray(lambda_then, dtype=np.float64)
    d = np.asarray(log_ratios, dtype=np.float64)
    with np.errstate(over="ignore"):
        return np.clip(np.asarray(scores, dtype=np.float64) * np.exp((lambda_now - then) * d), 0.0, 1.0)


def lambda_objective(actual: Sequence[float] | np.ndarray, predicted: Sequence[float] | np.ndarray,
                     lambda_then: Sequence[float] | np.ndarray, lambda_s: float, prior: float,
                     prior_weight: float, actual_ratios: Sequence[float] | np.ndarray | None = None,
                     predicted_ratios: Sequence[float] | np.ndarray | None = None) -> float:
    """mean |L(λ) − L̂(λ)| + κ·(λ − λ_prior)²; without log ratios an operation's L does not move with λ."""
    if len(actual) == 0:
        return prior_weight * (lambda_s - prior) ** 2
    zeros = np.zeros(len(actual))
    a = rescale(actual, lambda_then, lambda_s, zeros if actual_ratios is None else actual_ratios)
    p = rescale(predicted, lambda_then, lambda_s, zeros if predicted_ratios is None else predicted_ratios)
    return float(np.mean(np.abs(a - p)) + prior_weight * (lambda_s - prior) ** 2)


def accuracy(actual: Sequence[float] | np.ndarray, predicted: Sequence[float] | np.ndarray) -> float | None:
    """1 − mean |L − L̂| (the engine's meta_accuracy); None without operations."""
    if len(actual) == 0:
        return None
    return float(1.0 - np.mean(np.abs(np.asarray(actual, dtype=np.float64) - np.asarray(predicted, dtype=np.float64))))
