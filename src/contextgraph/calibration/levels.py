"""ATC's threshold-moving levels (docs/engine.md), each a pure function of recorded (score, outcome) pairs.

Level 1, EWMA drift (per observation): the cost's slope at θ is f(θ)·(P(y=1 | s=θ) − q); one observation
estimates it as K(s − θ)·(y − q) with a Gaussian kernel K of bandwidth h (only pairs near θ speak about θ). The
drift is the EWMA of those estimates and θ steps against it: θ ← clip(θ − step·drift). Positives near θ more
often than q lower θ, negatives raise it; the fixed point is P(y=1 | θ) = q.

Level 3, Thompson sampling over Beta(α, β): a grid of candidate thresholds (arms) within the bounds; each pair
rewards every arm with 1 − cost/max(q, 1 − q) (a right decision 1; α += r, β += 1 − r, the Bernoulli trick for
rewards in [0, 1]); the chosen arm is the one Thompson draws pick most often.

Level 4 (bayes.py): Bayesian optimisation of (θ, log T) on the NLL of the calibration map.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class EwmaStep:
    theta: float
    drift: float


def ewma_step(theta: float, drift: float, score: float, outcome: float, target: float, *, alpha: float,
              bandwidth: float, step: float, lo: float, hi: float) -> EwmaStep:
    """One observation's level-1 update; θ never leaves [lo, hi]. Scalar math, not numpy: every search result
    found again resolves its predictions through here, on the event loop (np.exp and np.clip on one float cost
    ~10 µs of wrapper each)."""
    u = (float(score) - theta) / bandwidth
    gradient = math.exp(-0.5 * u * u) * (float(outcome) - target)
    new_drift = (1.0 - alpha) * drift + alpha * gradient
    return EwmaStep(min(max(theta - step * new_drift, lo), hi), new_drift)


@dataclass(frozen=True, slots=True)
class ThompsonResult:
    theta: float
    arms: tuple[float, ...]
    alpha: tuple[float, ...]
    beta: tuple[float, ...]
    chosen_share: tuple[float, ...]  # the share of draws in which each arm sampled highest


def arm_posteriors(scores: Sequence[float] | np.ndarray, outcomes: Sequence[float] | np.ndarray, target: float,
                   arms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Beta(1 + Σr, 1 + Σ(1 − r)) per arm, r = 1 − cost/max(q, 1 − q) of the arm's decision on each pair."""
    s = np.asarray(scores, dtype=np.float64)[None, :]
    y = np.asarray(outcomes, dtype=np.float64)[None, :] >= 0.5
    positive = s >= arms[:, None]
    worst = max(target, 1.0 - target)
    cost = np.where(positive & ~y, target, 0.0) + np.where(~positive & y, 1.0 - target, 0.0)
    reward = 1.0 - cost / worst
    return 1.0 + reward.sum(axis=1), 1.0 + (1.0 - reward).sum(axis=1)


def thompson_choice(scores: Sequence[float] | np.ndarray, outcomes: Sequence[float] | np.ndarray, target: float,
                    lo: float, hi: float, *, arms: int, draws: int, rng: np.random.Generator) -> ThompsonResult:
    grid = np.linspace(lo, hi, arms)
    a, b = arm_posteriors(scores, outcomes, target, grid)
    samples = rng.beta(a[:, None], b[:, None], size=(arms, draws))
    chosen = np.bincount(np.argmax(samples, axis=0), minlength=arms) / draws
    best = int(np.argmax(chosen))
    return ThompsonResult(float(grid[best]), tuple(grid.tolist()), tuple(a.tolist()), tuple(b.tolist()),
                          tuple(chosen.tolist()))
