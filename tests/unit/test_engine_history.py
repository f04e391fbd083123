"""services.history: the bounded engine history behind the dashboard's History panel, against naive references
(numpy's percentiles on the same latencies, rates recomputed by hand), its bounds, and its persistence round
trip (the LMDB round trip is in tests/integration/test_engine_history_store.py)."""

import json
import math
from collections import deque

from hypothesis import given, settings
from hypothesis import strategies as st

from contextgraph.constitution import constitution
from contextgraph.services.engine.cognition import CognitiveState
from contextgraph.services.engine.history import SAMPLE_FIELDS, EngineHistory, rates_between


class FakeClock:
    def __init__(self, t: float = 1_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def make(clock=None, max_samples=None, latency_window=None):
    c = constitution()
    cognition = CognitiveState(c, clock=lambda: 0.0)  # a frozen network: r does not move between reads
    history = EngineHistory(c, cognition, wall_clock=clock or FakeClock())
    if max_samples is not None:  # small bounds, so the test sees them reached
        history.samples = deque(maxlen=max_samples)
    if latency_window is not None:
        history.latencies = {k: deque(maxlen=latency_window) for k in history.latencies}
    return history, cognition


PULSE = {"entropy": 0.4, "coherence": 0.6, "learning_score": 0.55, "quadrant": "Open", "suggested_action": "x"}


def test_samples_are_throttled_and_carry_the_pulse_and_r():
    clock = FakeClock()
    history, cognition = make(clock)
    history.record_call("store_memory", 12.0, True, PULSE)
    history.record_call("search_graph", 3.0, True, {**PULSE, "entropy": 0.9})  # same instant: no second sample
    assert len(history.samples) == 1
    clock.t += history.sample_seconds
    history.record_call("search_graph", 4.0, True, {**PULSE, "entropy": 0.9})
    view = history.view()
    cols = view["samples"]
    assert cols["entropy"] == [0.4, 0.9] and cols["coherence"] == [0.6, 0.6]
    assert cols["r"][0] == round(cognition.network.read().r, 6)
    assert cols["stores"] == [1, 1] and cols["searches"] == [0, 2]
    assert view["rates_per_minute"]["search"] == [None, round(2 * 60 / history.sample_seconds, 3)]
    assert view["calls"]["search"]["total"] == 2 and view["calls"]["store"]["total"] == 1


def test_other_tools_count_nothing_but_may_sample():
    history, _ = make()
    history.record_call("get_memetic_status", 1.0, True, PULSE)
    assert history.counts == {"store": 0, "search": 0}
    assert len(history.samples) == 1


def test_a_failed_call_counts_as_an_error():
    history, _ = make()
    history.record_call("store_memory", 2.0, False, PULSE)
    assert history.view()["calls"]["store"]["errors"] == 1


def test_non_finite_pulse_takes_no_sample():
    history, _ = make()
    assert not history.maybe_sample({**PULSE, "entropy": float("nan")})
    assert not history.samples


def test_bounded_samples_and_latencies():
    clock = FakeClock()
    history, _ = make(clock, max_samples=5, latency_window=3)
    for i in range(20):
        clock.t += 10
        history.record_call("store_memory", float(i), True, PULSE)
    assert len(history.samples) == 5 and history.samples[-1][0] == clock.t
    assert [ms for _, ms in history.latencies["store"]] == [17.0, 18.0, 19.0]
    assert history.counts["store"] == 20  # the total is not bounded, only what is kept


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(0.01, 5_000, allow_nan=False), min_size=1, max_size=60))
def test_percentiles_match_numpy_on_the_kept_latencies(latencies):
    import numpy as np

    history, _ = make()
    for ms in latencies:
        history.record_call("search_graph", ms, True, None)
    kept = latencies[-history.latencies["search"].maxlen:]
    got = history.view()["calls"]["search"]["latency_ms"]
    for p in history.percentiles:
        assert math.isclose(got[f"p{p:g}"], round(float(np.percentile(kept, p)), 3), abs_tol=1e-3)


def test_recent_rates_count_calls_inside_each_window():
    clock = FakeClock(10_000.0)
    history, _ = make(clock)
    for dt in (700, 300, 30, 5):  # seconds before "now"
        clock.t = 10_000.0 - dt
        history.record_call("store_memory", 1.0, True, None)
    clock.t = 10_000.0
    per_minute = history.view()["calls"]["store"]["per_minute"]
    assert per_minute["60s"] == 2 * 60 / 60  # the calls 30 s and 5 s ago
    assert per_minute["600s"] == round(3 * 60 / 600, 3)


@given(st.lists(st.tuples(st.floats(0.1, 100), st.integers(0, 50)), max_size=30))
def test_rates_between_is_the_naive_difference_quotient(steps):
    times, counts, t, n = [], [], 0.0, 0
    for dt, dn in steps:
        t, n = t + dt, n + dn
        times.append(t)
        counts.append(float(n))
    rates = rates_between(times, counts)
    assert len(rates) == len(times)
    for i in range(1, len(times)):
        expected = (counts[i] - counts[i - 1]) * 60 / (times[i] - times[i - 1])
        assert math.isclose(rates[i], round(expected, 3), abs_tol=1e-3)


def test_a_counter_that_went_back_has_no_rate():
    assert rates_between([0.0, 10.0], [5.0, 1.0]) == [None, None]


def test_doc_round_trip_is_json_and_exact():
    clock = FakeClock()
    history, _ = make(clock)
    for i in range(4):
        clock.t += 6
        history.record_call("store_memory" if i % 2 else "search_graph", 1.5 * i, i != 2, PULSE)
    doc = json.loads(json.dumps(history.to_doc()))
    assert not history.dirty
    restored, _ = make(clock)
    restored.load_doc(doc)
    assert list(restored.samples) == list(history.samples)
    assert restored.counts == history.counts and restored.errors == history.errors
    assert {k: list(v) for k, v in restored.latencies.items()} == {k: list(v) for k, v in history.latencies.items()}
    assert restored.view() == history.view()


def test_malformed_doc_entries_are_skipped():
    history, _ = make()
    good = [1.0] * len(SAMPLE_FIELDS)
    history.load_doc({"samples": [good, [1.0, 2.0], "x", [None] * len(SAMPLE_FIELDS)],
                      "latencies": {"store": [[1.0, 2.0], [1.0], "x"]}, "counts": {"store": 3}})
    assert list(history.samples) == [tuple(good)]
    assert list(history.latencies["store"]) == [(1.0, 2.0)]
    assert history.counts == {"store": 3, "search": 0}
