"""The retry window behind store_memory's idempotence: content and session find the id stored for them, for the
window's length, for at most `limit` stores."""

from contextgraph.services.memory.store_retries import RecentStores


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_same_content_and_session_find_their_id_within_the_window():
    clock = Clock()
    recent = RecentStores(120.0, 10, clock)
    recent.remember("the deploy failed", "s1", "a" * 32)
    assert recent.recent("the deploy failed", "s1") == "a" * 32
    assert recent.recent("the deploy failed", "s2") is None  # another session stores its own
    assert recent.recent("the deploy failed!", "s1") is None
    clock.now += 119
    assert recent.recent("the deploy failed", "s1") == "a" * 32
    clock.now += 2
    assert recent.recent("the deploy failed", "s1") is None


def test_a_newer_store_of_the_same_content_replaces_the_older_and_the_oldest_go_first():
    clock = Clock()
    recent = RecentStores(120.0, 2, clock)
    recent.remember("x", "s", "1" * 32)
    recent.remember("x", "s", "2" * 32)
    assert recent.recent("x", "s") == "2" * 32
    recent.remember("y", "s", "3" * 32)
    recent.remember("z", "s", "4" * 32)  # over the limit: the oldest, x, is forgotten
    assert recent.recent("x", "s") is None and recent.recent("z", "s") == "4" * 32


def test_a_session_and_content_cannot_be_confused_by_where_they_are_cut():
    recent = RecentStores(120.0, 10)
    recent.remember("b c", "a", "1" * 32)
    recent.remember("b\0c", "a", "2" * 32)
    assert recent.recent("c", "a b") is None and recent.recent("c", "a\0b") is None
