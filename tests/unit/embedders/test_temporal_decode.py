"""The time spaces read back: what E2, E3 and E4 vectors encode comes back from the vectors alone (the timeline
index keeps that instead of the vectors), and each space's closeness over its axes orders memories like the
space's own measure."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from contextgraph.embedders import e02_temporal_recent as e2
from contextgraph.embedders import e03_temporal_periodic as e3
from contextgraph.embedders import e04_temporal_positional as e4
from contextgraph.embedders.axes import closeness

NOW = 1_764_000_000.0
CENTURY_S = 100 * 365.25 * 86_400


@settings(max_examples=200, deadline=None)
@given(st.floats(-CENTURY_S / 2, CENTURY_S / 2))
def test_e2_decodes_its_time_to_microseconds_within_fifty_years(offset):
    """decode_times walks up to the fastest frequency, so encode_times of what it reads back is the stored vector
    to float32 rounding: what the timeline index re-scores its pools on."""
    t = NOW + offset
    stored = e2.TemporalRecentEmbedder().embed_times(np.array([t]))
    decoded = e2.decode_times(stored)
    assert abs(decoded[0] - t) < 1e-4
    assert np.abs(e2.encode_times(decoded) - stored).max() < 1e-7


@settings(max_examples=100, deadline=None)
@given(st.floats(-CENTURY_S / 4, CENTURY_S / 4))
def test_e3_decodes_the_phases_of_day_week_and_year(offset):
    t = NOW + offset
    stored = e3.TemporalPeriodicEmbedder().embed_time(t)
    decoded = e3.decode_phases(stored)
    gap = np.abs(decoded[0] - np.array(e3.cycle_phases(t)))
    assert np.all(np.minimum(gap, 2 * np.pi - gap) < 1e-5)
    assert np.abs(e3.encode_phases(decoded)[0] - stored).max() < 1e-6  # the 132nd harmonic scales the phase error


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 50_000), st.integers(0, 5_000_000))
def test_e4_decodes_whole_positions_below_its_periods(session, global_):
    v = e4.TemporalPositionalEmbedder().embed_positions(np.array([session]), np.array([global_]))
    assert e4.decode_positions(v)[0].tolist() == [session, global_]
    assert np.array_equal(e4.encode_positions(e4.decode_positions(v)), v)  # whole positions: the very vector


def test_e3_closeness_is_its_cosine():
    emb = e3.TemporalPeriodicEmbedder()
    rng = np.random.default_rng(0)
    times = NOW + rng.uniform(-3e7, 3e7, 500)
    vectors = np.stack([emb.embed_time(t) for t in times]).astype(np.float64)
    coords = e3.decode_phases(vectors)
    cosine = vectors @ vectors[0] / np.linalg.norm(vectors, axis=1) / np.linalg.norm(vectors[0])
    assert np.abs(closeness(coords[0], coords, e3.AXES) - cosine).max() < 3e-3


def _rank_agreement(closeness: np.ndarray, exact: np.ndarray, k: int, pool: int) -> float:
    """Share of the exact top k found among the `pool` best by closeness."""
    return len(set(np.argsort(-exact)[:k]) & set(np.argsort(-closeness)[:pool])) / k


def test_e2_and_e4_closeness_pools_hold_the_exact_nearest():
    rng = np.random.default_rng(1)
    n = 3_000
    # bursty sessions of 1-200 memories, hours to weeks apart: sessions reuse positions, times cluster
    lengths = rng.integers(1, 200, 60)
    starts = NOW - np.cumsum(rng.exponential(3 * 86_400, len(lengths)))
    times = np.concatenate([s + np.sort(rng.uniform(0, 3_600 * 4, n_)) for s, n_ in zip(starts, lengths)])[:n]
    session = np.concatenate([np.arange(n_) for n_ in lengths])[:n]
    global_ = np.arange(len(times))
    z2 = e2.TemporalRecentEmbedder().embed_times(times).astype(np.float64)
    z4 = e4.TemporalPositionalEmbedder().embed_positions(session, global_).astype(np.float64)
    c2, c4 = e2.decode_times(z2).reshape(-1, 1), e4.decode_positions(z4)
    for q in rng.choice(len(times), 40, replace=False):
        assert _rank_agreement(closeness(c2[q], c2, e2.AXES), z2 @ z2[q], 10, 64) == 1.0
        assert _rank_agreement(closeness(c4[q], c4, e4.AXES), z4 @ z4[q], 10, 64) == 1.0
