import pytest

from contextgraph.errors import InvalidParams
from contextgraph.services.memory.scratchpad import ScratchpadLimits, Scratchpads

LIMITS = ScratchpadLimits(max_keys=3, max_key_chars=8, max_value_chars=20, max_total_chars=40, max_sessions=2)


def test_sessions_are_separate():
    pads = Scratchpads(LIMITS)
    pads.write("a", "k", "v1")
    pads.write("b", "k", "v2")
    assert pads.read("a", None) == {"k": "v1"}
    assert pads.read("b", "k") == {"k": "v2"}
    assert pads.read("a", "missing") == {}


def test_bounds():
    pads = Scratchpads(LIMITS)
    with pytest.raises(InvalidParams, match="at most 8"):
        pads.write("a", "k" * 9, "v")
    with pytest.raises(InvalidParams, match="at most 20"):
        pads.write("a", "k", "v" * 21)
    for key in ("k1", "k2", "k3"):
        pads.write("a", key, "v")
    with pytest.raises(InvalidParams, match="maximum of 3 keys"):
        pads.write("a", "k4", "v")
    pads.write("a", "k1", "overwrite is fine")  # replacing a key adds no key
    with pytest.raises(InvalidParams, match="at most 40"):
        pads.write("a", "k2", "x" * 20)
    assert pads.read("a", "k2") == {"k2": "v"}  # a refused write changes nothing


def test_clear_one_or_all():
    pads = Scratchpads(LIMITS)
    pads.write("a", "k1", "v")
    pads.write("a", "k2", "v")
    assert pads.clear("a", "k1") == 1
    assert pads.clear("a", "k1") == 0
    assert pads.clear("a", None) == 1
    assert pads.read("a", None) == {}


def test_least_recently_used_session_is_dropped():
    pads = Scratchpads(LIMITS)
    pads.write("a", "k", "v")
    pads.write("b", "k", "v")
    pads.read("a", None)  # a is now the most recent
    pads.write("c", "k", "v")
    assert pads.read("a", None) == {"k": "v"}
    assert pads.read("b", None) == {}
