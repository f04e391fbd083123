"""E2 temporal_recent: random Fourier features of the timestamp whose dot product approximates a Laplace kernel,
averaged over four time scales:  z(t₁)·z(t₂) ≈ mean over τ of exp(−|t₁ − t₂| / τ),  τ ∈ {hour, day, week, month}.

Why it works (Rahimi & Recht): exp(−|Δ|/τ) is the Fourier transform of a Cauchy density with scale 1/τ, so with
ω drawn from that density E[cos(ωΔ)] = exp(−|Δ|/τ), and [cos ωt, sin ωt]·[cos ωt', sin ωt'] = cos(ω(t − t')).
Each scale gets K = 64 frequencies (128 features). They are drawn stratified: |ω| = tan(πu/2)/τ with one u in each
of the K equal slices of (0, 1), jittered by a fixed-seed generator; the kernel is even, so only |ω| matters.
Measured against independent draws this halves the error (mean |error| ≈ 0.02 per scale for Δ up to several τ).
The seed is fixed so every process computes identical vectors. z(t)·z(t) = 1 exactly."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from contextgraph.embedders.axes import Axis, monotone
from contextgraph.embedders.base import MemoryInput
from contextgraph.fingerprint import SPACES, Kind
from contextgraph.vectors import dot_scores, sinusoid_features, sinusoid_phases

SCALES_S = (3_600.0, 86_400.0, 604_800.0, 2_592_000.0)  # hour, day, week, 30-day month
FREQUENCIES_PER_SCALE = 64
SEED = 20_251_102
# Timestamps are measured from here before multiplying by ω: the kernel is shift-invariant, and phases of
# ω·1.7e9 would lose float precision for the fastest frequencies.
EPOCH_S = 1_700_000_000.0


def frequencies(seed: int = SEED) -> np.ndarray:
    """float64 [len(SCALES_S), K]: the angular frequencies (rad/s) of each scale's block."""
    rng = np.random.default_rng(seed)
    k = FREQUENCIES_PER_SCALE
    rows = []
    for tau in SCALES_S:
        u = (np.arange(k) + rng.random(k)) / k  # one point in each stratum of (0, 1)
        rows.append(np.tan(np.pi * u / 2) / tau)  # quantiles of the half-Cauchy with scale 1/τ
    return np.array(rows)


_OMEGA = frequencies().reshape(-1)  # [S·K], scale-major, as the embedder lays them out
# Each block's dot is a mean over its K frequencies (1/K), and the blocks are averaged (1/S).
_AMPLITUDE = np.full(_OMEGA.shape, np.sqrt(1.0 / _OMEGA.size))
_DECODE_RATIO = 8.0  # each frequency decode_times walks is at least this many times the one before


def _decode_chain(omega: np.ndarray, ratio: float = _DECODE_RATIO) -> list[int]:
    """The frequencies decode_times walks, slowest to fastest: from the slowest, each next one at least `ratio`
    times faster, and the fastest last. A step is safe while the time known so far times the next frequency is
    well under π; from float32 phases (~1e-7 rad) the time after a step is known to ~1e-7/ω, so any ratio below
    ~10⁶ would do, and the fastest frequency fixes the time to microseconds."""
    order = np.argsort(omega).tolist()
    chain = [order[0]]
    for j in order[1:-1]:
        if omega[j] >= ratio * omega[chain[-1]]:
            chain.append(j)
    return chain + [order[-1]]


_CHAIN = _decode_chain(_OMEGA)


def decode_times(vectors: np.ndarray) -> np.ndarray:
    """float64 [n]: the timestamps that E2 vectors ([n, dim] or [dim]) were made from, read back from their phases
    (the timeline index keeps these 8 bytes instead of the 512 floats). The slowest frequency's phase fixes the
    time within its period (decades: see tests); each faster one on the chain then fixes its own whole number of
    turns from the estimate so far and sharpens it. To a few microseconds from float32 vectors, so encode_times
    of the result gives back the stored vectors to float32 rounding (the timeline index re-scores on them)."""
    omega = _OMEGA
    phases = np.atleast_2d(sinusoid_phases(vectors))
    order = _CHAIN
    t = phases[:, order[0]] / omega[order[0]]
    for j in order[1:]:
        turns = np.round((omega[j] * t - phases[:, j]) / (2.0 * np.pi))
        t = (phases[:, j] + 2.0 * np.pi * turns) / omega[j]
    return t + EPOCH_S


def encode_times(timestamps: np.ndarray) -> np.ndarray:
    """float32 [n, dim]: the E2 vectors of these timestamps (the embedder's own; the timeline index re-scores its
    pools on them, made from the times decode_times reads back, instead of reading the stored vectors)."""
    t = np.asarray(timestamps, dtype=np.float64).reshape(-1, 1) - EPOCH_S
    return sinusoid_features(t * _OMEGA, _AMPLITUDE)


def _recency(gap: np.ndarray) -> np.ndarray:
    return -gap


# E2's kernel falls with |Δt|, so ordering by −|Δt| finds its nearest (decode_times gives the one coordinate)
AXES = (Axis(None, _recency, monotone(_recency)),)


def exact_kernel(delta_s: np.ndarray) -> np.ndarray:
    """The kernel E2 approximates: mean over the scales of exp(−|Δ|/τ)."""
    delta = np.abs(np.asarray(delta_s, dtype=np.float64))[..., None]
    return np.exp(-delta / np.array(SCALES_S)).mean(axis=-1)


class TemporalRecentEmbedder:
    space = 2
    name = SPACES[1].name
    kind: Kind = "dense"
    dim = 2 * FREQUENCIES_PER_SCALE * len(SCALES_S)
    method = (
        f"random Fourier features of a Laplace kernel at {len(SCALES_S)} scales (hour, day, week, month), "
        f"{FREQUENCIES_PER_SCALE} stratified Cauchy frequencies each, seed {SEED}"
    )

    def embed_times(self, timestamps: np.ndarray) -> np.ndarray:
        return encode_times(timestamps)

    def embed_batch(self, items: Sequence[MemoryInput]) -> list[np.ndarray]:
        return list(self.embed_times(np.array([item.timestamp for item in items], dtype=np.float64)))

    def similarity(self, query: np.ndarray, docs: Sequence[np.ndarray]) -> np.ndarray:
        return dot_scores(query, docs)
