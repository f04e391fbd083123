"""gwt.neuromodulators and services.neuromodulation: bounds, decay to the baselines, events, the read-only
acetylcholine, persistence, and the identity at the baselines."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextgraph.constitution import constitution
from contextgraph.errors import InvalidParams, NeuromodError
from contextgraph.gwt.neuromodulators import Bounds, decayed, moved, reward_to_dopamine
from contextgraph.retrieval.modulation import NEUTRAL
from contextgraph.services.engine.neuromodulation import NeuromodulationService

B = Bounds("dopamine", "beta", 1.0, 5.0, 2.0, 600.0)


@given(st.floats(1.0, 5.0), st.floats(0.0, 10_000.0))
def test_decay_matches_the_closed_form(level, elapsed):
    expected = 2.0 + (level - 2.0) * math.pow(0.5, elapsed / 600.0)
    assert decayed(level, 100.0, 100.0 + elapsed, B) == pytest.approx(expected, abs=1e-12)


def test_decay_halves_the_distance_each_half_life_and_clamps():
    assert decayed(4.0, 0.0, 600.0, B) == pytest.approx(3.0)
    assert decayed(9.0, 0.0, 0.0, B) == 5.0


@given(st.floats(1.0, 5.0), st.floats(-10.0, 10.0))
def test_moves_stay_in_bounds_and_report_what_was_applied(level, delta):
    new, applied = moved(level, delta, B)
    assert 1.0 <= new <= 5.0 and new == pytest.approx(level + applied)


def test_reward_to_dopamine_is_spec_10():
    assert reward_to_dopamine(0.5, 0.2, 0.1) == pytest.approx(0.1)
    assert reward_to_dopamine(-0.5, 0.2, 0.1) == pytest.approx(-0.05)
    assert reward_to_dopamine(0.0, 0.2, 0.1) == 0.0


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def service():
    clock = FakeClock()
    return NeuromodulationService(constitution(), clock=clock), clock


def test_at_the_baselines_the_modulation_is_exactly_neutral():
    s, _ = service()
    assert s.modulation() == NEUTRAL
    state = s.state()
    assert set(state) == {"dopamine", "serotonin", "noradrenaline", "acetylcholine", "at_baseline",
                          "last_search_effect", "recent_changes"}
    for m in (state[name] for name in ("dopamine", "serotonin", "noradrenaline", "acetylcholine")):
        assert {"level", "min", "max", "baseline"} <= set(m) and m["level"] == m["baseline"]


def test_events_move_the_right_modulators_and_decay_back():
    s, clock = service()
    applied = s.workspace_enter("abc")
    assert s.level("dopamine") == pytest.approx(2.2) and "+0.2" in applied
    s.empty_search()
    assert s.level("noradrenaline") == pytest.approx(1.1)
    s.steering_reward(-1.0)
    assert s.level("dopamine") == pytest.approx(2.1)
    request = {"kind": "introspective_dream", "acetylcholine": "raise"}
    s.meta_low(request)
    assert s.level("acetylcholine") == pytest.approx(0.0015) and request["acetylcholine_applied"] > 0
    clock.t += 600.0  # one dopamine half-life
    assert s.level("dopamine") == pytest.approx(2.05)
    assert s.modulation().score_exponent == pytest.approx(2.05 / 2.0)


def test_adjust_clamps_and_acetylcholine_is_read_only():
    s, _ = service()
    change = s.adjust("serotonin", 0.9)
    assert change["new"] == 1.0 and change["clamped"] and change["applied"] == pytest.approx(0.5)
    assert s.modulation().weight_exponent == pytest.approx(0.0)
    with pytest.raises(NeuromodError) as refused:
        s.adjust("acetylcholine", 0.0005)
    assert "read-only" in refused.value.message and refused.value.data["allowed"] == [
        "dopamine", "serotonin", "noradrenaline"]
    with pytest.raises(InvalidParams):
        s.adjust("oxytocin", 0.1)


def test_state_survives_a_round_trip():
    s, clock = service()
    s.adjust("dopamine", 1.0)
    doc = s.to_doc()
    assert not s.dirty
    t, _ = service()
    t._clock = clock
    t.load_doc(doc)
    assert t.level("dopamine") == pytest.approx(3.0) and t.history[-1]["source"] == "adjust_neuromodulator"
