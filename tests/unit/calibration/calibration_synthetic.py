"""A stream of (score, outcome) pairs with a known miscalibration, shared by the tests and the benchmark's idea:
P(y = 1 | s) = sigmoid((logit s − logit θ*)/T* + logit q), so the optimal threshold for target q is θ* exactly."""

from __future__ import annotations

import numpy as np

from contextgraph.calibration.maps import calibrated


def stream(n: int, theta_star: float, t_star: float, target: float, seed: int = 0,
           lo: float = 0.3, hi: float = 0.99) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    s = rng.uniform(lo, hi, n)
    y = (rng.random(n) < calibrated(s, theta_star, t_star, target)).astype(np.float64)
    return s, y
