"""Kuramoto kernels against naive references and the properties of SPEC §9 / issue 4."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextgraph.constitution import constitution
from contextgraph.gwt import kuramoto as kur

HZ = constitution()["gwt"]["kuramoto"]["natural_frequencies_hz"]
OMEGA = kur.natural_frequencies(HZ)


def naive_derivative(theta, omega, k):
    n = len(theta)
    return np.array([omega[i] + k / n * sum(math.sin(theta[j] - theta[i]) for j in range(n)) for i in range(n)])


def naive_order(theta):
    z = sum(complex(math.cos(t), math.sin(t)) for t in theta) / len(theta)
    return abs(z), math.atan2(z.imag, z.real) % (2 * math.pi)


def test_natural_frequencies_are_normalised_to_a_mean_of_one_rad_per_second():
    assert OMEGA.shape == (13,)
    assert OMEGA.mean() == pytest.approx(1.0)  # SPEC D13: f/mean(f) in rad/s, no 2π
    assert OMEGA[8] / OMEGA[5] == pytest.approx(80 / 4)  # ratios kept
    assert np.all(kur.natural_frequencies([0, 0]) == 0) and kur.natural_frequencies([]).size == 0


@pytest.mark.parametrize("seed", range(5))
def test_mean_field_derivative_equals_the_naive_double_sum(seed):
    rng = np.random.default_rng(seed)
    theta = rng.uniform(0, 2 * math.pi, 13)
    k = rng.uniform(0, 10)
    assert np.allclose(kur.derivative(theta, OMEGA, k), naive_derivative(theta, OMEGA, k), atol=1e-12)
    r, psi = kur.order_parameter(theta)
    nr, npsi = naive_order(theta)
    assert r == pytest.approx(nr) and psi == pytest.approx(npsi)


def test_euler_steps_match_a_naive_integration():
    theta = np.random.default_rng(1).uniform(0, 2 * math.pi, 13)
    ours, steps = kur.advance(theta, OMEGA, 3.0, 0.5, max_steps=1000)
    naive = theta.copy()
    for _ in range(50):
        naive = naive + 0.01 * naive_derivative(naive, OMEGA, 3.0)
    assert steps == 50
    assert np.allclose(np.exp(1j * ours), np.exp(1j * naive), atol=1e-9)


def test_identical_phases_have_r_one():
    r, psi = kur.order_parameter(np.full(13, 1.25))
    assert r == pytest.approx(1.0) and psi == pytest.approx(1.25)
    assert kur.phase_spread(r) == pytest.approx(0.0, abs=1e-6)


def test_zero_coupling_with_spread_frequencies_stays_unsynchronised():
    theta = np.random.default_rng(2).uniform(0, 2 * math.pi, 13)
    trajectory = kur.simulate_r(theta, OMEGA, 0.0, 20.0)
    assert trajectory.mean() < 0.45 and trajectory[-500:].mean() < 0.45


def test_large_coupling_with_identical_frequencies_synchronises():
    theta = np.random.default_rng(3).uniform(0, 2 * math.pi, 13)
    trajectory = kur.simulate_r(theta, np.full(13, 2 * math.pi), 10.0, 5.0)
    assert trajectory[-1] > 0.999
    assert kur.predict_r(theta, np.full(13, 2 * math.pi), 10.0) > 0.99


def test_more_coupling_predicts_more_synchrony():
    theta = np.random.default_rng(4).uniform(0, 2 * math.pi, 13)
    assert kur.predict_r(theta, OMEGA, 10.0, 5.0) > kur.predict_r(theta, OMEGA, 0.0, 5.0) + 0.2


def test_coupling_is_clamped():
    assert kur.clamp_coupling(-1) == 0.0 and kur.clamp_coupling(11) == 10.0 and kur.clamp_coupling(3.5) == 3.5
    assert kur.clamp_coupling(float("nan")) == 0.0 and kur.clamp_coupling(float("inf")) == 10.0


def test_lazy_advance_is_bounded():
    theta = np.zeros(13)
    _, steps = kur.advance(theta, OMEGA, 2.0, 3600.0, max_steps=100)
    assert steps == 100
    for seconds in (0.0, -1.0, float("nan"), float("inf")):
        out, steps = kur.advance(theta, OMEGA, 2.0, seconds, max_steps=100)
        assert steps == 0 and np.all(np.isfinite(out))


def test_a_memory_pulls_each_space_toward_its_own_phase():
    """D23: a memory's per-space agreement moves its space's phase (θᵢ,m = π·ΔSᵢ, D19). Memories whose spaces
    agree (all familiar, or all new) synchronise the network; a memory some spaces know and others do not splits
    it."""
    theta = np.random.default_rng(5).uniform(0, 2 * math.pi, 13)
    agreeing = theta
    for _ in range(20):
        agreeing = kur.pull(agreeing, kur.memory_phases([0.9] * 13), 0.3)
    assert kur.order_parameter(agreeing)[0] > 0.99
    split = agreeing
    for _ in range(20):
        split = kur.pull(split, kur.memory_phases([0.0] * 6 + [1.0] * 7), 0.3)
    assert kur.order_parameter(split)[0] < 0.2
    one = kur.pull(np.zeros(13), np.full(13, 1.0), 0.3)
    assert np.allclose(one, 0.3)  # gain of the shorter arc
    across = kur.pull(np.full(13, 0.1), np.full(13, 2 * math.pi - 0.1), 0.5)
    assert np.allclose(kur.wrap(across), 0.0, atol=1e-12)  # through 0, not the long way round


def test_relax_and_contract():
    theta = np.random.default_rng(6).uniform(0, 2 * math.pi, 13)
    rest = kur.contract(theta, 0.94)
    assert kur.order_parameter(rest)[0] == pytest.approx(0.94, abs=1e-6)
    assert np.allclose(kur.wrap(kur.relax(theta, rest, 0.0) - rest), 0.0)
    assert np.allclose(kur.wrap(kur.relax(theta, rest, 1.0) - theta), 0.0)
    half = kur.relax(theta, rest, 0.5)
    assert np.allclose(kur.wrap(half - rest), 0.5 * kur.wrap(theta - rest))
    assert np.allclose(kur.contract(rest, 0.5), rest)  # already more synchronised
    turned = kur.contract(theta, 0.94, about=math.pi / 2)
    r, psi = kur.order_parameter(turned)
    assert r == pytest.approx(0.94, abs=1e-6) and psi == pytest.approx(math.pi / 2)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=0, max_size=13),
       st.floats(allow_nan=True, allow_infinity=True))
def test_no_nan_or_infinity_for_any_input(values, k):
    theta = np.nan_to_num(np.array(values, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    r, psi = kur.order_parameter(theta)
    assert 0.0 <= r <= 1.0 and math.isfinite(psi)
    assert 0.0 <= kur.phase_spread(r) <= math.pi
    omega = np.full(theta.size, 2 * math.pi)
    out, _ = kur.advance(theta, omega, k, 0.1, 20)
    assert np.all(np.isfinite(out))
    pulled = kur.pull(theta, kur.memory_phases([float("nan")] * theta.size), float("nan"))
    relaxed = kur.relax(theta, np.zeros(theta.size), float("inf"))
    assert np.all(np.isfinite(pulled)) and np.all(np.isfinite(relaxed))
    assert np.all(np.isfinite(kur.contract(theta, float("nan"))))
    assert kur.order_parameter(np.array([]))[0] == 0.0 and kur.phase_spread(0.0) == math.pi


# --- r(K) on the spec frequencies (SPEC D13): simulated time, never the wall clock ---------------------------------


def _constitution_curve():
    from contextgraph.constitution import constitution

    return constitution()["gwt"]["kuramoto"]["measured_r"]


def test_r_of_k_follows_the_measured_curve():
    ks = [0.0, 1.0, 2.0, 3.0, 10.0]
    r = kur.measure_r(OMEGA, ks, seconds=150.0, trials=6, seed=5)
    assert 0.2 < r[0] < 0.35  # unsynchronised: ≈ the mean |Σ e^{iθ}|/13 of random phases
    assert 0.5 < r[1] < 0.7  # the default K = 1: partly synchronised at rest
    assert 0.78 < r[2] < 0.9
    assert r[3] > 0.9 and r[4] > 0.95  # K = 10 holds the network above HYPERSYNC's 0.95
    assert np.all(np.diff(r) > 0)


def test_the_constitution_curve_is_what_the_network_does():
    curve = _constitution_curve()
    ks = [k for k, _ in curve]
    measured = kur.measure_r(OMEGA, ks, seconds=150.0, trials=6, seed=9)
    for (k, stated), got in zip(curve, measured):
        assert got == pytest.approx(stated, abs=0.05), f"K={k}"
    from contextgraph.constitution import constitution

    assert constitution()["gwt"]["kuramoto"]["coupling"]["default"] == 1.0


def test_predicted_r_interpolates_the_measured_curve():
    curve = _constitution_curve()
    theta = np.random.default_rng(8).uniform(0, 2 * math.pi, 13)
    for k, r in curve:
        assert kur.predict_r(theta, OMEGA, k, curve=curve) == pytest.approx(r)
    assert kur.predict_r(theta, OMEGA, 0.0, curve=curve) == pytest.approx(curve[0][1])
    assert kur.predict_r(theta, OMEGA, 1.25, curve=curve) == pytest.approx((0.595 + 0.754) / 2, abs=1e-6)
    assert kur.predict_r(theta, OMEGA, 99.0, curve=curve) == pytest.approx(curve[-1][1])  # K clamped to 10
    ks = np.linspace(0, 10, 41)
    assert np.all(np.diff([kur.predict_r(theta, OMEGA, k, curve=curve) for k in ks]) >= 0)
    assert kur.predict_r(theta, OMEGA, 10.0, curve=curve) > 0.95
    assert 0.2 < kur.predict_r(theta, OMEGA, 0.0, curve=curve) < 0.35


def test_the_live_network_reaches_hypersync_at_k_10_and_not_at_k_0():
    """Integrated lazily (advance) over simulated time: at K = 10 r locks above 0.95, at K = 0 it wanders
    around 0.25-0.3."""
    theta0 = np.random.default_rng(12).uniform(0, 2 * math.pi, 13)
    hot, _ = kur.advance(theta0, OMEGA, 10.0, 30.0, max_steps=10_000)
    assert kur.order_parameter(hot)[0] > 0.95
    cold = theta0
    rs = []
    for _ in range(60):
        cold, _ = kur.advance(cold, OMEGA, 0.0, 5.0, max_steps=10_000)
        rs.append(kur.order_parameter(cold)[0])
    assert 0.15 < float(np.mean(rs)) < 0.45
