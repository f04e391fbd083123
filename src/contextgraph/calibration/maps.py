"""The calibration map of one threshold, and the cost its decisions incur (pure numpy/scipy).

Every threshold is a decision `score ≥ θ` with a target probability q: θ's optimum is the score at which the
probability of the outcome equals q — the Bayes threshold when a false positive costs q and a false negative
1 − q. The calibrated probability of a pair, for the threshold's current θ and temperature T, is

    p(s) = sigmoid((logit s − logit θ) / T + logit q)

so that p(θ) = q by construction: ATC's level 2 temperature scaling sigmoid(logit(p)/T), centred on the threshold.
Level 2 fits T with θ held; levels 1, 3 and 4 move θ towards the optimum (a better centre lowers ECE too).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

EPS = 1e-6  # scores are clipped to [ε, 1 − ε] before the logit: 0 and 1 map to large finite logits


def logit(x: np.ndarray | Sequence[float] | float) -> np.ndarray:
    v = np.clip(np.nan_to_num(np.asarray(x, dtype=np.float64), nan=0.5), EPS, 1.0 - EPS)
    return np.log(v / (1.0 - v))


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(z, dtype=np.float64)))  # overflow-free


def calibrated(scores: np.ndarray | Sequence[float], theta: float, temperature: float, target: float) -> np.ndarray:
    """p(s) for each score; T must be positive."""
    if not temperature > 0:
        raise ValueError(f"temperature must be positive (got {temperature})")
    return sigmoid((logit(scores) - logit(theta)) / temperature + logit(target))


def nll(scores: np.ndarray | Sequence[float], outcomes: np.ndarray | Sequence[float], theta: float,
        temperature: float, target: float) -> float:
    """Mean negative log-likelihood of the outcomes under p(s) (probabilities clipped to [ε, 1 − ε])."""
    p = np.clip(calibrated(scores, theta, temperature, target), EPS, 1.0 - EPS)
    y = np.asarray(outcomes, dtype=np.float64)
    return float(-np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p)))


def fit_temperature(scores: np.ndarray | Sequence[float], outcomes: np.ndarray | Sequence[float], theta: float,
                    target: float, t_min: float, t_max: float) -> float:
    """The T in [t_min, t_max] that minimises the NLL with θ held (bounded Brent search over log T)."""
    from scipy.optimize import minimize_scalar  # here, not at import: scipy would slow `serve`'s start-up

    s, y = np.asarray(scores, dtype=np.float64), np.asarray(outcomes, dtype=np.float64)
    if s.size == 0:
        return 1.0
    result = minimize_scalar(lambda log_t: nll(s, y, theta, float(np.exp(log_t)), target),
                             bounds=(float(np.log(t_min)), float(np.log(t_max))), method="bounded",
                             options={"xatol": 1e-4})
    return float(np.clip(np.exp(result.x), t_min, t_max))


def decision_cost(scores: np.ndarray | Sequence[float], outcomes: np.ndarray | Sequence[float], theta: float,
                  target: float) -> float:
    """Mean cost of deciding `score ≥ θ`: a false positive costs q, a false negative 1 − q."""
    s, y = np.asarray(scores, dtype=np.float64), np.asarray(outcomes, dtype=np.float64)
    if s.size == 0:
        return 0.0
    positive = s >= theta
    false_positive = np.where(positive & (y < 0.5), target, 0.0)
    false_negative = np.where(~positive & (y >= 0.5), 1.0 - target, 0.0)
    return float(np.mean(false_positive + false_negative))


def best_threshold_reference(scores: np.ndarray | Sequence[float], outcomes: np.ndarray | Sequence[float],
                             target: float, lo: float, hi: float) -> float:
    """The naive reference: the lowest-cost θ in [lo, hi] by trying every distinct score (and both bounds)."""
    s = np.asarray(scores, dtype=np.float64)
    candidates = np.unique(np.concatenate([[lo, hi], s[(s >= lo) & (s <= hi)]]))
    costs = [decision_cost(s, outcomes, float(t), target) for t in candidates]
    return float(candidates[int(np.argmin(costs))])
