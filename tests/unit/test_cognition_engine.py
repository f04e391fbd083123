"""The engine state: the pulse reads the live Kuramoto phase spread, records drive the oscillators (the agent's
clock, D23: nothing moves between operations until the network relaxes toward rest), and meta-accuracy follows
the operations."""

import math

import numpy as np
import pytest

from contextgraph.constitution import constitution
from contextgraph.gwt import kuramoto as kur
from contextgraph.services.engine.cognition import CognitiveState
from contextgraph.utl import learning


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_operations_whose_spaces_agree_synchronise_and_split_ones_desynchronise():
    state = CognitiveState(constitution(), clock=Clock())
    for _ in range(10):
        state.record([0.1] * 13, [0.9] * 13, memory_count=10)
    synced = state.network.read().r
    assert synced > 0.95
    for _ in range(10):  # half the spaces know each memory, the others do not
        state.record([0.0] * 6 + [1.0] * 7, [0.5] * 13, memory_count=11)
    assert state.network.read().r < 0.3 < synced


def test_learning_score_uses_the_live_phase_spread():
    state = CognitiveState(constitution(), clock=Clock())
    for _ in range(5):
        state.record([0.6] * 13, [0.7] * 13, memory_count=3)
    snap = state.snapshot()
    phi = kur.phase_spread(state.network.read().r)
    assert snap["phase_spread"] == pytest.approx(phi)
    expected = learning.learning_score(snap["delta_s"], snap["delta_c"], state.tau, 0.7, 0.3, 1.0, phi)
    assert state.pulse()["learning_score"] == pytest.approx(expected, abs=1e-4)
    # scatter the phases by hand: same ΔS/ΔC, different φ, different score
    state.network._phases = np.linspace(0, 2 * math.pi, 13, endpoint=False) + 0.01 * np.arange(13)
    state.network._r, _ = kur.order_parameter(state.network._phases)
    assert state.pulse()["learning_score"] != pytest.approx(expected, abs=1e-3)


def test_the_network_holds_between_operations_then_relaxes_toward_rest():
    """D23: the wall-clock network was back to oscillator noise ~2 s after any operation (r 0.30-0.86 at rest)."""
    clock = Clock()
    state = CognitiveState(constitution(), clock=clock)
    rest = constitution()["gwt"]["kuramoto"]["rest"]
    assert state.network.read().r == pytest.approx(rest["r"], abs=1e-6)  # a fresh engine is at rest
    for _ in range(8):
        state.record([0.0] * 6 + [1.0] * 7, [0.5] * 13, memory_count=5)
    after = state.network.read()
    ic = state.snapshot()["identity_continuity"]
    clock.now += 60.0
    held = state.network.read()
    assert held.phases == after.phases and held.r == after.r
    assert state.pulse() and state.snapshot()["identity_continuity"] == ic
    clock.now += rest["hold_seconds"] - 60.0 + rest["half_life_seconds"]  # held, then one half-life
    net = state.network
    expected = kur.relax(np.asarray(after.phases), net.rest_phases, 0.5)
    assert np.allclose(net.read().phases, expected)
    clock.now += 50 * rest["half_life_seconds"]
    assert net.read().r == pytest.approx(rest["r"], abs=1e-4)


def test_a_fresh_engine_is_healthy_not_critical():
    """A freshly imported store read identity continuity 0.117 "Critical" from oscillator noise."""
    from contextgraph.gwt import consciousness as cs
    from contextgraph.gwt import ego

    c = constitution()
    state = CognitiveState(c, clock=Clock())
    assert ego.identity_status(state.snapshot()["identity_continuity"], state.identity_bounds) == "Healthy"
    r = state.network.read().r
    assert cs.state(0.0, c["gwt"]["consciousness_states"], r) == "DORMANT"  # at rest, not HYPERSYNC


def test_meta_accuracy_has_a_prior_then_follows_predictions():
    state = CognitiveState(constitution(), clock=Clock())
    assert state.meta_accuracy == 0.5
    for _ in range(20):
        state.record([0.3] * 13, [0.8] * 13, memory_count=5)
    steady = state.meta_accuracy
    assert 0.0 <= steady <= 1.0 and steady > 0.9  # a steady stream is predictable


def test_observe_memory_count_moves_the_lifecycle():
    state = CognitiveState(constitution(), clock=Clock())
    state.observe_memory_count(600)
    assert state.lifecycle.stage == "maturity"


def test_ego_trajectory_meta_scores_and_requests():
    from contextgraph.gwt import ego

    state = CognitiveState(constitution(), clock=Clock())
    for i in range(7):
        state.record([0.9] * 13, [0.1 + 0.1 * (i % 2)] * 13, memory_count=i + 1)
    snap = state.snapshot()
    assert len(snap["trajectory"]) == 7 and len(snap["meta_scores"]) == 7
    # identity continuity is cos(PV_t, PV_t-1) × r, with r the network's order parameter after the operation
    _, last_pv, last_ic = snap["trajectory"][-1]
    assert last_pv == [round(v, 6) for v in snap["delta_c"]]
    assert 0.0 <= last_ic <= state.network.read().r + 1e-6
    assert all(0.0 < m < 1.0 for m in snap["meta_scores"])
    # a dream is requested once per fall into Critical, never twice in a row
    dreams = [r for r in snap["requests"] if r["kind"] == "dream"]
    statuses = [ego.identity_status(ic, state.identity_bounds) for _, _, ic in snap["trajectory"]]
    falls = sum(1 for a, b in zip(["Healthy"] + statuses, statuses) if a != "Critical" and b == "Critical")
    assert len(dreams) == falls
    assert all(r["applied"] is False for r in snap["requests"])


def test_engine_document_round_trip():
    state = CognitiveState(constitution(), clock=Clock())
    for i in range(3):
        state.record([0.2 * i] * 13, [0.5] * 13, memory_count=i + 1)
    doc = state.to_doc()
    assert state.dirty is False
    restored = CognitiveState(constitution(), clock=Clock())
    restored.load_doc(doc)
    a, b = state.snapshot(), restored.snapshot()
    for key in ("delta_s", "delta_c", "operations", "memory_count", "meta_scores", "coherence_history",
                "trajectory", "identity_continuity", "recent_actions"):
        assert a[key] == b[key], key
    saved, loaded = state.network.to_doc(), restored.network.to_doc()
    assert (saved["phases"], saved["coupling"]) == (loaded["phases"], loaded["coupling"])
    assert loaded["idle_seconds"] == pytest.approx(saved["idle_seconds"], abs=1.0)  # plus the wall time since
    fresh = CognitiveState(constitution(), clock=Clock())
    fresh.load_doc({"version": 99})  # an unknown layout is ignored, not misread
    assert fresh.snapshot()["operations"] == 0


def test_a_loaded_engine_counts_the_time_since_it_was_saved_as_idle():
    """The CLI and hook path start one process per call: the time between calls is idle time, so the network
    holds, then relaxes, as a server's would; a clock that went backwards owes nothing."""
    wall = Clock()
    state = CognitiveState(constitution(), clock=Clock(), wall_clock=wall)
    state.record([0.0] * 6 + [1.0] * 7, [0.6] * 13, memory_count=1)
    doc = state.to_doc()
    saved = np.asarray(doc["network"]["phases"])
    rest = constitution()["gwt"]["kuramoto"]["rest"]
    for offset, factor in ((5.0, 1.0), (-30.0, 1.0), (rest["hold_seconds"] + rest["half_life_seconds"], 0.5)):
        again = CognitiveState(constitution(), clock=Clock(), wall_clock=lambda o=offset: wall.now + o)
        again.load_doc(doc)
        net = again.network
        assert np.allclose(net.read().phases, kur.relax(saved, net.rest_phases, factor)), offset


def test_operations_bring_their_own_learning_score_and_prediction():
    """D19: the pulse's L is the average of the operations' own L; MetaScore compares the engine's prediction
    L̂ (from the neighbours, before scoring) with that L."""
    state = CognitiveState(constitution(), clock=Clock())
    state.record([0.5] * 13, [0.6] * 13, memory_count=1, learning_score=0.52, predicted_learning_score=0.50)
    assert state.pulse()["learning_score"] == pytest.approx(0.52, abs=1e-4)
    assert state.meta_scores[-1] == pytest.approx(1 / (1 + math.exp(-2 * (0.50 - 0.52))))
    assert state.meta_accuracy == pytest.approx(1 - 0.02)
    alpha = float(constitution().get("pulse.ewma_alpha"))
    state.record([0.9] * 13, [0.3] * 13, memory_count=2, learning_score=0.50, predicted_learning_score=0.56)
    assert state.pulse()["learning_score"] == pytest.approx((1 - alpha) * 0.52 + alpha * 0.50, abs=1e-4)
    assert state.meta_accuracy == pytest.approx(1 - (0.02 + 0.06) / 2)
    restored = CognitiveState(constitution(), clock=Clock())
    restored.load_doc(state.to_doc())
    assert restored.pulse()["learning_score"] == state.pulse()["learning_score"]
