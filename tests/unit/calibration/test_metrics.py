"""ECE / MCE / Brier against a naive per-pair reference, and their properties."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextgraph.calibration.metrics import calibration_report


def naive(p: list[float], y: list[float], bins: int) -> tuple[float, float, float]:
    groups: dict[int, list[tuple[float, float]]] = {}
    for pi, yi in zip(p, y):
        b = min(int(pi * bins), bins - 1)
        groups.setdefault(b, []).append((pi, yi))
    ece, mce = 0.0, 0.0
    for members in groups.values():
        gap = abs(sum(m[0] for m in members) / len(members) - sum(m[1] for m in members) / len(members))
        ece += len(members) / len(p) * gap
        mce = max(mce, gap)
    brier = sum((pi - yi) ** 2 for pi, yi in zip(p, y)) / len(p)
    return ece, mce, brier


pairs = st.lists(st.tuples(st.floats(0.0, 1.0), st.sampled_from([0.0, 1.0])), min_size=1, max_size=200)


@settings(max_examples=200, deadline=None)
@given(pairs, st.integers(1, 20))
def test_matches_the_naive_reference(data: list[tuple[float, float]], bins: int) -> None:
    p, y = [d[0] for d in data], [d[1] for d in data]
    report = calibration_report(p, y, bins)
    ece, mce, brier = naive(p, y, bins)
    assert report.ece == pytest.approx(ece, abs=1e-12)
    assert report.mce == pytest.approx(mce, abs=1e-12)
    assert report.brier == pytest.approx(brier, abs=1e-12)
    assert report.pairs == len(p)
    assert 0.0 <= report.ece <= report.mce <= 1.0
    assert sum(b[3] for b in report.bins) == len(p)


def test_perfect_calibration_in_expectation_has_small_ece() -> None:
    rng = np.random.default_rng(0)
    p = rng.random(20000)
    y = (rng.random(20000) < p).astype(float)
    assert calibration_report(p, y).ece < 0.02


def test_overconfidence_is_measured() -> None:
    p = np.full(100, 0.9)
    y = np.r_[np.ones(50), np.zeros(50)]
    report = calibration_report(p, y)
    assert report.ece == pytest.approx(0.4)
    assert report.mce == pytest.approx(0.4)
    assert report.brier == pytest.approx(0.5 * 0.01 + 0.5 * 0.81)


def test_no_pairs_measure_nothing() -> None:
    report = calibration_report([], [])
    assert (report.ece, report.mce, report.brier, report.pairs) == (None, None, None, 0)


def test_one_falls_in_the_last_bin_and_lengths_must_match() -> None:
    assert calibration_report([1.0], [1.0], 10).bins[0][0] == pytest.approx(0.9)
    with pytest.raises(ValueError):
        calibration_report([0.5, 0.5], [1.0])
