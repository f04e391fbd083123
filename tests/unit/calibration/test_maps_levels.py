"""The calibration map, temperature fitting, the decision cost and ATC's levels 1, 3 and 4 against references."""

from __future__ import annotations

import numpy as np
import pytest
from calibration_synthetic import stream
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from contextgraph.calibration import bayes, levels, maps
from contextgraph.calibration.metrics import calibration_report


@settings(max_examples=100, deadline=None)
@given(st.floats(0.05, 0.95), st.floats(0.1, 10.0), st.floats(0.1, 0.9))
def test_the_map_passes_the_target_at_theta(theta: float, t: float, q: float) -> None:
    assert maps.calibrated([theta], theta, t, q)[0] == pytest.approx(q, abs=1e-9)
    s = np.linspace(0.01, 0.99, 50)
    p = maps.calibrated(s, theta, t, q)
    assert np.all(np.diff(p) >= 0) and np.all((p >= 0) & (p <= 1))


def test_temperature_fit_recovers_the_generator() -> None:
    s, y = stream(20000, 0.8, 0.4, 0.5, seed=1)
    t = maps.fit_temperature(s, y, 0.8, 0.5, 0.05, 20.0)
    assert t == pytest.approx(0.4, rel=0.1)
    # equal to a brute-force grid minimum of the NLL
    grid = np.exp(np.linspace(np.log(0.05), np.log(20.0), 2000))
    brute = grid[int(np.argmin([maps.nll(s, y, 0.8, g, 0.5) for g in grid]))]
    assert t == pytest.approx(brute, rel=0.01)


def test_temperature_scaling_lowers_ece() -> None:
    s, y = stream(5000, 0.8, 0.3, 0.5, seed=2)
    before = calibration_report(maps.calibrated(s, 0.8, 1.0, 0.5), y).ece
    t = maps.fit_temperature(s, y, 0.8, 0.5, 0.05, 20.0)
    after = calibration_report(maps.calibrated(s, 0.8, t, 0.5), y).ece
    assert after < before / 2


def test_decision_cost_by_hand() -> None:
    s, y = [0.2, 0.6, 0.9, 0.4], [1.0, 0.0, 1.0, 0.0]
    # θ = 0.5: 0.2 is a false negative (1 − q), 0.6 a false positive (q)
    assert maps.decision_cost(s, y, 0.5, 0.25) == pytest.approx((0.75 + 0.25) / 4)
    assert maps.best_threshold_reference(s, y, 0.5, 0.0, 1.0) in (0.2, 0.6, 0.9, 0.0, 1.0)


@pytest.mark.parametrize("q", [0.25, 0.5, 0.75])
def test_level1_converges_to_the_known_optimum_and_stays_in_bounds(q: float) -> None:
    s, y = stream(30000, 0.82, 0.3, q, seed=3)
    theta, drift, seen = 0.70, 0.0, []
    for si, yi in zip(s, y):
        step = levels.ewma_step(theta, drift, si, yi, q, alpha=0.1, bandwidth=0.05, step=0.02, lo=0.6, hi=0.9)
        theta, drift = step.theta, step.drift
        seen.append(theta)
    assert min(seen) >= 0.6 and max(seen) <= 0.9
    # a constant-step EWMA keeps moving around its fixed point (σ ≈ 0.02 here): its time average sits there,
    # within the kernel's smoothing bias (≤ 0.02 for q ≠ 0.5, where P(y | s) curves across the bandwidth)
    assert float(np.mean(seen[-10000:])) == pytest.approx(0.82, abs=0.025)


def test_level1_holds_its_bounds_when_the_optimum_is_outside() -> None:
    s, y = stream(5000, 0.95, 0.3, 0.5, seed=4)
    theta, drift = 0.7, 0.0
    for si, yi in zip(s, y):
        step = levels.ewma_step(theta, drift, si, yi, 0.5, alpha=0.1, bandwidth=0.05, step=0.02, lo=0.6, hi=0.9)
        theta, drift = step.theta, step.drift
        assert 0.6 <= theta <= 0.9
    assert theta == pytest.approx(0.9, abs=0.01)


def test_arm_posteriors_match_a_per_pair_loop() -> None:
    s, y = stream(300, 0.8, 0.5, 0.25, seed=5)
    arms = np.linspace(0.6, 0.9, 7)
    a, b = levels.arm_posteriors(s, y, 0.25, arms)
    for k, theta in enumerate(arms):
        ra = rb = 1.0
        for si, yi in zip(s, y):
            cost = 0.25 if (si >= theta and yi == 0) else 0.75 if (si < theta and yi == 1) else 0.0
            r = 1 - cost / 0.75
            ra, rb = ra + r, rb + 1 - r
        assert a[k] == pytest.approx(ra) and b[k] == pytest.approx(rb)


def test_thompson_picks_the_arm_nearest_the_optimum() -> None:
    s, y = stream(5000, 0.8, 0.3, 0.5, seed=6)
    result = levels.thompson_choice(s, y, 0.5, 0.6, 0.9, arms=31, draws=2000, rng=np.random.default_rng(0))
    assert result.theta == pytest.approx(0.8, abs=0.03)
    assert result.theta == pytest.approx(maps.best_threshold_reference(s, y, 0.5, 0.6, 0.9), abs=0.03)
    assert sum(result.chosen_share) == pytest.approx(1.0)


def test_expected_improvement_by_formula() -> None:
    from scipy.stats import norm
    mu, sigma, best, xi = np.array([0.5, 0.2]), np.array([0.1, 0.0]), 0.4, 0.01
    ei = bayes.expected_improvement(mu, sigma, best, xi)
    z = (best - 0.5 - xi) / 0.1
    assert ei[0] == pytest.approx((best - 0.5 - xi) * norm.cdf(z) + 0.1 * norm.pdf(z))
    assert ei[1] == 0.0


def test_gp_minimize_finds_a_quadratic_minimum() -> None:
    result = bayes.gp_minimize(lambda x: float((x[0] - 0.3) ** 2 + (x[1] + 1) ** 2), [(0, 1), (-2, 2)], initial=5,
                               iterations=20, candidates=512, rng=np.random.default_rng(0))
    assert result.x[0] == pytest.approx(0.3, abs=0.08) and result.x[1] == pytest.approx(-1, abs=0.15)
    assert result.evaluations == 25


def test_level4_nll_search_agrees_with_a_gradient_reference() -> None:
    s, y = stream(4000, 0.78, 0.4, 0.5, seed=7)

    def nll(x: np.ndarray) -> float:
        return maps.nll(s, y, float(x[0]), float(np.exp(x[1])), 0.5)

    reference = minimize(nll, x0=[0.75, 0.0], bounds=[(0.6, 0.9), (np.log(0.05), np.log(20))], method="L-BFGS-B")
    found = bayes.gp_minimize(nll, [(0.6, 0.9), (np.log(0.05), np.log(20))], initial=6, iterations=20,
                              candidates=512, rng=np.random.default_rng(17), start=(0.75, 0.0))
    assert found.value <= reference.fun + 0.002
    assert found.x[0] == pytest.approx(reference.x[0], abs=0.02)
    assert found.x[0] == pytest.approx(0.78, abs=0.03)
