"""Bayesian optimisation with a Gaussian-process surrogate and expected improvement (ATC level 4, Meta-UTL's λ
search): scikit-learn's GaussianProcessRegressor (Matérn 5/2 + white noise, normalised targets) models the
objective over a box; each iteration evaluates the candidate (of a random sample of the box) with the highest

    EI(x) = (f* − μ(x) − ξ)·Φ(z) + σ(x)·φ(z),   z = (f* − μ(x) − ξ) / σ(x)

for minimisation, f* the best value seen. Seeded: the same inputs give the same answer."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

# scipy and scikit-learn are imported by the functions that use them: together they take ~0.7 s to import, which
# `contextgraph serve` would otherwise spend before answering tools/list (docs/budgets.md#cpu-budgets).


@dataclass(frozen=True, slots=True)
class BayesResult:
    x: tuple[float, ...]
    value: float
    evaluations: int
    history: tuple[tuple[tuple[float, ...], float], ...]


def expected_improvement(mu: np.ndarray, sigma: np.ndarray, best: float, xi: float) -> np.ndarray:
    """EI for minimisation; 0 where σ = 0."""
    from scipy.stats import norm

    sigma = np.asarray(sigma, dtype=np.float64)
    improvement = best - np.asarray(mu, dtype=np.float64) - xi
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(sigma > 0, improvement / sigma, 0.0)
    return np.where(sigma > 0, improvement * norm.cdf(z) + sigma * norm.pdf(z), 0.0)


def gp_minimize(objective: Callable[[np.ndarray], float], bounds: Sequence[tuple[float, float]], *,
                initial: int, iterations: int, candidates: int, rng: np.random.Generator, xi: float = 0.01,
                start: Sequence[float] | None = None) -> BayesResult:
    """Minimise `objective` over the box `bounds`: `initial` random points (plus `start`, e.g. the current
    setting, so the answer is never worse than it), then `iterations` EI-chosen ones."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

    box = np.asarray(bounds, dtype=np.float64)
    lo, hi = box[:, 0], box[:, 1]
    span = np.where(hi > lo, hi - lo, 1.0)
    xs = [lo + rng.random(len(box)) * (hi - lo) for _ in range(max(initial, 1))]
    if start is not None:
        xs.insert(0, np.clip(np.asarray(start, dtype=np.float64), lo, hi))
    ys = [float(objective(x)) for x in xs]
    # one length scale per dimension (ARD); sklearn's stub types it as a float
    scales: Any = np.full(len(box), 0.2)
    kernel = ConstantKernel(1.0, (1e-3, 1e3)) * Matern(length_scale=scales, length_scale_bounds=(1e-2, 1e1),
                                                       nu=2.5) + WhiteKernel(1e-4, (1e-8, 1e-1))
    for _ in range(iterations):
        unit = (np.asarray(xs) - lo) / span  # the GP works in the unit box
        gp = GaussianProcessRegressor(kernel=kernel, normalize_y=True, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            gp.fit(unit, np.asarray(ys))
        pool = rng.random((candidates, len(box)))
        mu, sigma = cast(tuple[np.ndarray, np.ndarray], gp.predict(pool, return_std=True))
        ei = expected_improvement(mu, sigma, min(ys), xi)
        x = lo + pool[int(np.argmax(ei))] * span
        xs.append(x)
        ys.append(float(objective(x)))
    best = int(np.argmin(ys))
    return BayesResult(tuple(float(v) for v in xs[best]), ys[best], len(ys),
                       tuple((tuple(float(v) for v in x), y) for x, y in zip(xs, ys)))
