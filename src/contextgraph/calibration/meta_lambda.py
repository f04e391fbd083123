"""Meta-UTL's λ adaptation (docs/engine.md#meta-utl) as pure functions.

The learning score L = sigmoid(g · λ_S·λ_C · X) (docs/utl.md: X = ΣτΔS·ΣτΔC·wₑ·cos φ, g the gain) is predicted
before a store (L̂) and measured after (L). When the prediction error |L − L̂| exceeds the threshold,

    λ_S ← clip(λ_S + α·(L − L̂), lo, hi),   λ_C = 1 − λ_S

(target L, actual L̂): an engine that under-predicts what operations teach weighs novelty more. Because this L
depends on λ only through λ_S·λ_C, an operation's L at another λ is exact from its recorded L and the λ it was
scored with: L(λ') = sigmoid(logit L · λ'(1 − λ') / (λ(1 − λ))). That lets the escalation's Bayesian search score
any λ on the recorded window: mean |L(λ) − L̂(λ)| + κ·(λ − λ_prior)², the prediction error with a Gaussian prior
on λ at the lifecycle value (without it the search would always shrink λ_S·λ_C to its minimum, which pulls every
L towards 0.5 and makes the prediction error small by making L uninformative).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from contextgraph.calibration.maps import logit, sigmoid


def lambda_step(lambda_s: float, error: float, alpha: float, error_threshold: float, lo: float,
                hi: float) -> float:
    """One operation's λ_S update; unchanged while |error| ≤ the threshold. error = L − L̂."""
    if not abs(error) > error_threshold:
        return float(np.clip(lambda_s, lo, hi))
    return float(np.clip(lambda_s + alpha * error, lo, hi))


def rescale(scores: Sequence[float] | np.ndarray, lambda_then: Sequence[float] | np.ndarray,
            lambda_now: float) -> np.ndarray:
    """Each L recomputed at λ_S = lambda_now from its value at λ_S = lambda_then (exact under the sigmoid form of L)."""
    then = np.asarray(lambda_then, dtype=np.float64)
    ratio = (lambda_now * (1.0 - lambda_now)) / np.maximum(then * (1.0 - then), 1e-9)
    return sigmoid(logit(scores) * ratio)


def lambda_objective(actual: Sequence[float] | np.ndarray, predicted: Sequence[float] | np.ndarray,
                     lambda_then: Sequence[float] | np.ndarray, lambda_s: float, prior: float,
                     prior_weight: float) -> float:
    if len(actual) == 0:
        return prior_weight * (lambda_s - prior) ** 2
    err = np.abs(rescale(actual, lambda_then, lambda_s) - rescale(predicted, lambda_then, lambda_s))
    return float(np.mean(err) + prior_weight * (lambda_s - prior) ** 2)


def accuracy(actual: Sequence[float] | np.ndarray, predicted: Sequence[float] | np.ndarray) -> float | None:
    """1 − mean |L − L̂| (the engine's meta_accuracy); None without operations."""
    if len(actual) == 0:
        return None
    return float(1.0 - np.mean(np.abs(np.asarray(actual, dtype=np.float64) - np.asarray(predicted, dtype=np.float64))))
