"""E2, E3, E4: pure functions of time and position — the kernels they claim."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from contextgraph.embedders.e02_temporal_recent import SCALES_S, TemporalRecentEmbedder, exact_kernel
from contextgraph.embedders.e03_temporal_periodic import TemporalPeriodicEmbedder, block_slices, cycle_phases
from contextgraph.embedders.e04_temporal_positional import TemporalPositionalEmbedder

T0 = datetime(2026, 3, 10, 9, 30, tzinfo=UTC).timestamp()


@pytest.mark.parametrize("scale_index", range(len(SCALES_S)))
def test_e2_approximates_the_laplace_kernel_at_each_scale(scale_index):
    e2 = TemporalRecentEmbedder()
    tau = SCALES_S[scale_index]
    rng = np.random.default_rng(7)
    t1 = T0 + rng.uniform(-3e7, 3e7, 400)
    delta = rng.exponential(tau, 400) * rng.choice([-1, 1], 400)  # differences on this scale, both signs
    z1, z2 = e2.embed_times(t1), e2.embed_times(t1 + delta)
    block = slice(128 * scale_index, 128 * (scale_index + 1))
    approx = len(SCALES_S) * np.sum(z1[:, block] * z2[:, block], axis=1)  # the block's own kernel estimate
    error = np.abs(approx - np.exp(-np.abs(delta) / tau))
    assert error.mean() < 0.04 and error.max() < 0.2, (error.mean(), error.max())
    # …and the whole vector approximates the mean over scales.
    whole_error = np.abs(np.sum(z1 * z2, axis=1) - exact_kernel(delta))
    assert whole_error.mean() < 0.03


def test_e2_norm_and_ordering():
    e2 = TemporalRecentEmbedder()
    z = e2.embed_times(np.array([T0, T0 + 60, T0 + 3 * 3600, T0 + 86400 * 20]))
    assert z.shape == (4, 512) and z.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(z, axis=1), 1.0, atol=1e-5)
    sims = e2.similarity(z[0], list(z[1:]))
    assert sims[0] > sims[1] > sims[2]


def test_e3_blocks_are_periodic():
    e3 = TemporalPeriodicEmbedder()
    base = e3.embed_time(T0)
    next_day = e3.embed_time(T0 + 86400)
    half_day = e3.embed_time(T0 + 43200)
    next_week = e3.embed_time(T0 + 7 * 86400)
    tod, dow = block_slices()["time_of_day"], block_slices()["day_of_week"]

    def cos(a, b):
        return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))

    assert cos(base[tod], next_day[tod]) > 0.999  # same clock time a day later
    assert cos(base[tod], half_day[tod]) < 0.2
    assert cos(base[dow], next_week[dow]) > 0.999
    assert e3.similarity(base, [next_day, half_day]).tolist()[0] > e3.similarity(base, [half_day])[0]
    assert base.shape == (512,) and base.dtype == np.float32
    assert abs(np.linalg.norm(base) - 1.0) < 1e-5


def test_e3_similarity_falls_off_gradually_in_the_day():
    e3 = TemporalPeriodicEmbedder()
    tod = block_slices()["time_of_day"]
    base = e3.embed_time(T0)[tod]
    sims = [float(base @ e3.embed_time(T0 + minutes * 60)[tod]) / float(base @ base) for minutes in (10, 30, 90, 240)]
    assert sims == sorted(sims, reverse=True) and sims[-1] > -0.2


def test_e3_phases_use_utc_calendar():
    monday_noon = datetime(2026, 1, 5, 12, 0, tzinfo=UTC).timestamp()
    tod, dow, doy = cycle_phases(monday_noon)
    assert tod == pytest.approx(np.pi)  # noon is half a day
    assert dow == pytest.approx(2 * np.pi * 0.5 / 7)  # Monday noon: half a day into the week
    assert doy == pytest.approx(2 * np.pi * 4.5 / 365)


def test_e4_nearby_positions_are_closer():
    e4 = TemporalPositionalEmbedder()
    v = e4.embed_positions(np.array([100, 101, 110, 200, 5000]), np.array([5000, 5001, 5010, 5100, 90000]))
    assert v.shape == (5, 512) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    sims = e4.similarity(v[0], list(v[1:]))
    assert list(sims) == sorted(sims, reverse=True)
    # Shift invariance: only the distance matters.
    w = e4.embed_positions(np.array([0, 1]), np.array([0, 1]))
    u = e4.embed_positions(np.array([40, 41]), np.array([700, 701]))
    assert float(w[0] @ w[1]) == pytest.approx(float(u[0] @ u[1]), abs=1e-5)
