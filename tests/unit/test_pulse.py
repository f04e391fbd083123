import pytest

from contextgraph.constitution import constitution
from contextgraph.services.engine.cognition import CognitiveState
from contextgraph.utl.pulse import PulseRules, pulse

RULES = PulseRules.from_constitution(constitution())
FIELDS = {"entropy", "coherence", "learning_score", "quadrant", "suggested_action"}


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.mark.parametrize(("e", "c", "quadrant", "action"), [
    (0.2, 0.8, "Open", "direct_recall"),
    (0.8, 0.2, "Blind", "trigger_dream"),
    (0.2, 0.2, "Hidden", "get_neighborhood"),
    (0.8, 0.8, "Unknown", "epistemic_action"),
])
def test_johari_to_action(e, c, quadrant, action):
    p = pulse(e, c, 0.5, RULES, now=0.0, workspace_empty_since=None, high_entropy_since=None)
    assert set(p) == FIELDS
    assert (p["quadrant"], p["suggested_action"]) == (quadrant, action)


def test_empty_workspace_for_five_seconds_suggests_epistemic_action():
    args = dict(entropy=0.2, coherence=0.8, learning_score=0.5, rules=RULES, high_entropy_since=None)
    assert pulse(now=104.9, workspace_empty_since=100.0, **args)["suggested_action"] == "direct_recall"
    assert pulse(now=105.0, workspace_empty_since=100.0, **args)["suggested_action"] == "epistemic_action"


def test_sustained_high_entropy_suggests_dream_and_wins():
    args = dict(entropy=0.9, coherence=0.8, learning_score=0.5, rules=RULES, workspace_empty_since=0.0)
    assert pulse(now=299.0, high_entropy_since=0.0, **args)["suggested_action"] == "epistemic_action"
    assert pulse(now=300.0, high_entropy_since=0.0, **args)["suggested_action"] == "trigger_dream"


@pytest.mark.parametrize(("entropy", "empty_since", "high_since", "expected"), [
    (0.8, None, None, "epistemic_action"),  # Blind asks for a dream: its stand-in while a dream is useless
    (0.9, 0.0, 0.0, "epistemic_action"),  # sustained entropy passed over, the empty workspace decides
    (0.9, None, 0.0, "epistemic_action"),  # sustained entropy passed over, then Blind, then the stand-in
    (0.2, None, 0.0, "direct_recall"),  # sustained entropy passed over, the quadrant's own action
])
def test_no_dream_is_suggested_while_one_would_change_nothing(entropy, empty_since, high_since, expected):
    args = dict(entropy=entropy, coherence=0.2 if entropy > 0.5 and empty_since is None else 0.8, learning_score=0.5,
                rules=RULES, now=1000.0, workspace_empty_since=empty_since, high_entropy_since=high_since)
    assert pulse(**args, dream_blocked=True)["suggested_action"] == expected
    assert pulse(**args)["suggested_action"] == "trigger_dream"  # each case asks for one when it would help


def test_fresh_state_is_the_empty_store():
    clock = Clock()
    state = CognitiveState(constitution(), clock=clock)
    p = state.pulse()
    # an empty store teaches nothing yet: C = 0 makes L = 0 (D22; the sigmoid form read 0.5)
    assert p == {"entropy": 1.0, "coherence": 0.0, "learning_score": 0.0, "quadrant": "Blind",
                 "suggested_action": "trigger_dream"}
    clock.now += 5.0  # the workspace has held nothing since start-up
    assert state.pulse()["suggested_action"] == "epistemic_action"
    state.workspace_occupied(True)
    assert state.pulse()["suggested_action"] == "trigger_dream"


def test_record_moves_the_averages_and_starts_the_entropy_timer():
    clock = Clock()
    state = CognitiveState(constitution(), clock=clock)
    state.workspace_occupied(True)
    for _ in range(30):  # many familiar, well-connected memories
        state.record([0.1] * 13, [0.9] * 13, memory_count=10)
    p = state.pulse()
    assert p["entropy"] < 0.15 and p["coherence"] > 0.85
    assert (p["quadrant"], p["suggested_action"]) == ("Open", "direct_recall")
    assert p["learning_score"] < 0.25  # D22: what is already known teaches little (the sigmoid form read > 0.5)
    assert state.high_entropy_since is None
    for _ in range(30):  # a run of novel, unconnected material
        state.record([1.0] * 13, [0.0] * 13, memory_count=40)
    started = state.high_entropy_since
    assert started == clock.now
    clock.now += 300.0
    assert state.pulse()["suggested_action"] == "trigger_dream"


def test_record_refuses_wrong_lengths():
    state = CognitiveState(constitution())
    with pytest.raises(ValueError):
        state.record([0.5] * 12, [0.5] * 13, memory_count=1)
