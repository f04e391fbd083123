"""The 13-oscillator Kuramoto network (docs/engine.md#kuramoto-network), one oscillator per embedding space.

    dθᵢ/dt = ωᵢ + (K/N) Σⱼ sin(θⱼ − θᵢ)

We integrate the mean-field form (K/N) Σⱼ sin(θⱼ − θᵢ) = K·r·sin(ψ − θᵢ), which is the same sum rearranged
(r·e^{iψ} = (1/N) Σⱼ e^{iθⱼ}) but O(N) per step instead of O(N²); a test checks it against the naive double sum.
Forward Euler at dt = 10 ms: the natural rotation ωᵢ·dt is integrated exactly by any scheme, and the coupling
term moves a phase by at most K·dt ≤ 0.1 rad per step, where Euler's error is far below what the pulse reports.

Units (docs/engine.md): ωᵢ = fᵢ/mean(f) in rad/s, mean 1 rad/s, no 2π. Measured on the spec frequencies (time-averaged
r over long runs from random phases, `measure_r`): K=0 ≈ 0.25-0.3, K=1 ≈ 0.6, K=2 ≈ 0.84, K=3 ≈ 0.94,
K=10 ≈ 0.996. The constitution keeps that curve (gwt.kuramoto.measured_r) and `predict_r` reads it, so
adjust_coupling's predicted_r is the long-run value at the new K, not the transient of a 2-second simulation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

TWO_PI = 2.0 * math.pi


def natural_frequencies(hz: Sequence[float]) -> np.ndarray:
    """ω in rad/s: the spec's Hz normalised by their mean, so the mean is 1 rad/s (docs/decisions.md#d13: no factor 2π).
    The ratios stay (gamma 40 Hz vs theta 4 Hz …); 80 Hz becomes ≈3.2 rad/s, ≈0.03 rad per 10 ms step. With the
    old ×2π the spread of ω was 2π times larger and K ≤ 10 could not hold r above 0.8 on average."""
    f = np.asarray(hz, dtype=np.float64)
    if f.size == 0:
        return f
    mean = float(f.mean())
    if not math.isfinite(mean) or mean <= 0.0:
        return np.zeros_like(f)
    return f / mean


def clamp_coupling(k: float, lo: float = 0.0, hi: float = 10.0) -> float:
    if not math.isfinite(k):
        return lo if k != math.inf else hi
    return min(max(float(k), lo), hi)


def order_parameter(phases: np.ndarray) -> tuple[float, float]:
    """(r, ψ) of r·e^{iψ} = (1/N) Σ e^{iθ}. No oscillators → (0, 0). r is clipped to [0, 1] against rounding."""
    theta = np.asarray(phases, dtype=np.float64)
    if theta.size == 0:
        return 0.0, 0.0
    z = complex(np.cos(theta).mean(), np.sin(theta).mean())
    r = min(max(abs(z), 0.0), 1.0)
    psi = math.atan2(z.imag, z.real) % TWO_PI
    return r, psi


def phase_spread(r: float) -> float:
    """φ ∈ [0, π]: the circular standard deviation √(−2 ln r), clamped to π. It is 0 when every oscillator
    agrees and reaches π as synchrony vanishes, which is the range the learning score's cos φ expects (a desynchronised
    network turns the learning score's sign, a half-synchronised one, r ≈ 0.6, keeps cos φ ≈ 0.3)."""
    if not math.isfinite(r) or r <= 0.0:
        return math.pi
    if r >= 1.0:
        return 0.0
    return min(math.sqrt(-2.0 * math.log(r)), math.pi)


def derivative(phases: np.ndarray, omegas: np.ndarray, k: float) -> np.ndarray:
    theta = np.asarray(phases, dtype=np.float64)
    if theta.size == 0:
        return theta.copy()
    # r·sin(ψ − θᵢ) = r sinψ·cosθᵢ − r cosψ·sinθᵢ = S̄·cosθᵢ − C̄·sinθᵢ with C̄, S̄ the means of cos θ, sin θ:
    # the same number without a complex exponential or an arctangent (this runs in the pulse's path)
    c, s = np.cos(theta), np.sin(theta)
    return omegas + k * (s.mean() * c - c.mean() * s)


def step(phases: np.ndarray, omegas: np.ndarray, k: float, dt: float) -> np.ndarray:
    return (phases + dt * derivative(phases, omegas, k)) % TWO_PI


def advance(phases: np.ndarray, omegas: np.ndarray, k: float, seconds: float, max_steps: int,
            dt: float = 0.01) -> tuple[np.ndarray, int]:
    """Integrate `seconds` of dynamics, at most `max_steps` steps; returns (phases, steps taken).

    The engine integrates `operation_seconds` per memory operation (the agent's clock, docs/decisions.md#d23),
    never the wall-clock time between reads; the cap bounds any caller's cost."""
    theta = np.asarray(phases, dtype=np.float64) % TWO_PI
    if theta.size == 0 or not math.isfinite(seconds) or seconds <= 0.0 or dt <= 0.0:
        return theta, 0
    n = min(int(seconds / dt + 1e-9), max(int(max_steps), 0))  # 1e-9: 0.05 / 0.01 is 4.999…
    k = clamp_coupling(k)
    omegas = np.asarray(omegas, dtype=np.float64)
    for _ in range(n):
        theta = step(theta, omegas, k, dt)
    return theta, n


def simulate_r(phases: np.ndarray, omegas: np.ndarray, k: float, seconds: float, dt: float = 0.01,
               max_steps: int = 100_000) -> np.ndarray:
    """r after each step of a simulation from `phases` (a trajectory, for prediction and tests)."""
    theta = np.asarray(phases, dtype=np.float64) % TWO_PI
    n = min(int(max(seconds, 0.0) / dt), max_steps) if math.isfinite(seconds) else 0
    k = clamp_coupling(k)
    out = np.empty(n, dtype=np.float64)
    for i in range(n):
        theta = step(theta, omegas, k, dt)
        out[i] = order_parameter(theta)[0]
    return out


def predict_r(phases: np.ndarray, omegas: np.ndarray, k: float, seconds: float = 2.0, dt: float = 0.01,
              curve: Sequence[Sequence[float]] | None = None) -> float:
    """The r the network settles to at coupling K.

    With a measured `curve` ([[K, r], …], the constitution's gwt.kuramoto.measured_r): r interpolated
    linearly at K (clamped to the curve's ends) — the long-run time average, which is what "the r this K
    gives" means below the locking threshold, where r keeps oscillating with periods up to 2π/min(ω) ≈ 40 s.
    Without one: simulate `seconds` from the current phases and average r over the second half."""
    if curve is not None and len(curve):
        points = sorted((float(a), float(b)) for a, b in curve)
        ks = np.array([p[0] for p in points])
        rs = np.array([p[1] for p in points])
        return float(np.clip(np.interp(clamp_coupling(k), ks, rs), 0.0, 1.0))
    trajectory = simulate_r(phases, omegas, k, seconds, dt)
    if trajectory.size == 0:
        return order_parameter(phases)[0]
    return float(np.clip(trajectory[trajectory.size // 2:].mean(), 0.0, 1.0))


def measure_r(omegas: np.ndarray, couplings: Sequence[float], seconds: float = 200.0, trials: int = 8,
              dt: float = 0.02, seed: int = 0) -> np.ndarray:
    """Time-averaged r at each coupling: `trials` runs from seeded uniform random phases, integrated together
    (Heun's method, one [len(K)·trials, N] array), r averaged over the second half of `seconds` and over the
    trials. How the constitution's measured_r curve is made and checked (tests/unit/test_kuramoto.py)."""
    w = np.asarray(omegas, dtype=np.float64)
    ks = np.repeat(np.asarray([clamp_coupling(k) for k in couplings], dtype=np.float64), trials)[:, None]
    rng = np.random.default_rng(seed)
    theta = rng.uniform(0.0, TWO_PI, size=(ks.shape[0], w.size))

    def f(th: np.ndarray) -> np.ndarray:
        c, s = np.cos(th), np.sin(th)
        return w + ks * (s.mean(axis=1, keepdims=True) * c - c.mean(axis=1, keepdims=True) * s)

    n = max(int(seconds / dt), 2)
    total = np.zeros(ks.shape[0])
    counted = 0
    for i in range(n):
        k1 = f(theta)
        theta = theta + 0.5 * dt * (k1 + f(theta + dt * k1))
        if i >= n // 2:
            total += np.abs(np.exp(1j * theta).mean(axis=1))
            counted += 1
    return (total / counted).reshape(len(couplings), trials).mean(axis=1)


def wrap(x: np.ndarray) -> np.ndarray:
    """Angles to (−π, π]: the signed shorter arc."""
    return np.pi - (np.pi - np.asarray(x, dtype=np.float64)) % TWO_PI


def memory_phases(delta_s: Sequence[float]) -> np.ndarray:
    """A memory's own phase in each space (docs/decisions.md#d19): θᵢ = π(1 − aᵢ) with aᵢ = 1 − ΔSᵢ its agreement
    with what the space knows, so θᵢ = π·ΔSᵢ (NaN counts as novel). Spaces that agree about the memory (all
    familiar, or all new) share a phase; a memory some spaces know and others do not spreads them."""
    return math.pi * np.clip(np.nan_to_num(np.asarray(delta_s, dtype=np.float64), nan=1.0), 0.0, 1.0)


def pull(phases: np.ndarray, targets: np.ndarray, gain: float) -> np.ndarray:
    """Each oscillator moves `gain` ∈ [0, 1] of the shorter arc toward its target (a memory's phase in that
    space, docs/decisions.md#d23): an exponentially weighted circular mean of the recent memories' phases, so r
    says how far the spaces agreed about the session's recent memory work."""
    theta = np.asarray(phases, dtype=np.float64) % TWO_PI
    if theta.size == 0:
        return theta
    target = np.nan_to_num(np.asarray(targets, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    g = min(max(float(gain) if math.isfinite(gain) else 0.0, 0.0), 1.0)
    return (theta + g * wrap(target - theta)) % TWO_PI


def relax(phases: np.ndarray, rest: np.ndarray, factor: float) -> np.ndarray:
    """Every oscillator's offset from its rest phase scaled by `factor` ∈ [0, 1] (0.5^(t/half-life) for t idle
    seconds): the network drifts back to rest along the shorter arcs."""
    theta = np.asarray(phases, dtype=np.float64) % TWO_PI
    home = np.asarray(rest, dtype=np.float64)
    f = min(max(float(factor) if math.isfinite(factor) else 1.0, 0.0), 1.0)
    return (home + f * wrap(theta - home)) % TWO_PI


def contract(phases: np.ndarray, r: float, about: float | None = None, iterations: int = 60) -> np.ndarray:
    """`phases` drawn together about their mean phase ψ (each offset from ψ scaled by one factor, found by
    bisection) until their order parameter is `r` (phases already that synchronised keep their spread), then
    turned so that ψ = `about` when given. The network's rest configuration: the seeded phases at the agreement
    a store at rest holds, centred where a memory of typical novelty puts them (ΔS = ½: π/2), so every memory
    phase π·ΔS lies within a quarter turn of it and pulls the spaces the same way round."""
    theta = np.asarray(phases, dtype=np.float64) % TWO_PI
    target = min(max(float(r) if math.isfinite(r) else 1.0, 0.0), 1.0)
    if theta.size == 0:
        return theta
    psi = order_parameter(theta)[1]
    offsets = wrap(theta - psi)
    if order_parameter(theta)[0] >= target:
        return _turned(theta, about)
    lo, hi = 0.0, 1.0  # factor 0: all at ψ (r = 1); factor 1: as given (r below the target)
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        if order_parameter(psi + mid * offsets)[0] >= target:
            lo = mid
        else:
            hi = mid
    return _turned(psi + lo * offsets, about)


def _turned(phases: np.ndarray, about: float | None) -> np.ndarray:
    """`phases` rotated together so that their mean phase is `about` (None or NaN: as they are)."""
    if about is None or not math.isfinite(about):
        return np.asarray(phases, dtype=np.float64) % TWO_PI
    return (phases + float(about) - order_parameter(phases)[1]) % TWO_PI
