"""The modulators' effects as pure kernels (gwt.neuromodulators, retrieval.modulation) and the service events that
drive them (services.neuromodulation): noradrenaline's graph exploration, dopamine's boost of what was used, the
weak-search trigger, and the identity at rest."""

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextgraph.constitution import constitution
from contextgraph.gwt.neuromodulators import Bounds, spread_strength, use_boosts
from contextgraph.retrieval.modulation import NEUTRAL, Modulation, boost_of, favoured, spread
from contextgraph.services.engine.neuromodulation import NeuromodulationService

DA = Bounds("dopamine", "beta", 1.0, 5.0, 2.0, 600.0)


def test_exploration_is_off_at_and_below_the_baseline_and_grows_to_the_gain():
    assert spread_strength(1.0, 2.0, 1.0) == 0.0 and spread_strength(0.5, 2.0, 1.0) == 0.0
    assert spread_strength(1.25, 2.0, 1.0) == pytest.approx(0.25)
    assert spread_strength(2.0, 2.0, 0.7) == pytest.approx(0.7) and spread_strength(3.0, 2.0, 0.7) == pytest.approx(0.7)


def test_spread_gives_a_linked_candidate_its_best_hits_share_and_nothing_else_moves():
    fused = np.array([3.0, 2.0, 0.5, 0.1])
    out = spread(fused, [(0, 2, 1.0), (1, 2, 1.0), (0, 3, 0.5)], 0.25)
    assert out[0] == 3.0 and out[1] == 2.0  # unlinked rows keep their bytes
    assert out[2] == pytest.approx(0.5 + 0.25 * 3.0)  # the best link, not the sum of both
    assert out[3] == pytest.approx(0.1 + 0.25 * 0.5 * 3.0)
    assert spread(fused, [(0, 2, 1.0)], 0.0) is fused and spread(fused, [], 0.5) is fused


def test_spread_ignores_self_links_and_filtered_hits():
    fused = np.array([-np.inf, 1.0, 0.2])
    out = spread(fused, [(0, 2, 1.0), (1, 1, 1.0)], 1.0)
    assert out[1] == 1.0 and out[2] == 0.2


def test_use_boosts_need_dopamine_above_rest_and_fade_with_the_uses_age():
    uses = [("aaaa", 1000.0), ("bbbb", 400.0)]
    assert use_boosts(uses, 1000.0, 2.0, DA, 0.2, 0.5) == {}  # at rest: nothing
    assert use_boosts(uses, 1000.0, 1.5, DA, 0.2, 0.5) == {}  # below rest (a negative reward): nothing
    boosts = use_boosts(uses, 1000.0, 2.2, DA, 0.2, 0.5)
    assert boosts["aaaa"] == pytest.approx(0.5) and boosts["bbbb"] == pytest.approx(0.25)  # one half-life old
    assert use_boosts(uses, 1000.0, 2.1, DA, 0.2, 0.5)["aaaa"] == pytest.approx(0.25)


@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=8), st.floats(0.0, 1.0))
def test_a_boost_reorders_the_answer_but_keeps_its_set(scores, bound):
    ids = [f"{i:02d}" + "0" * 30 for i in range(len(scores))]
    order, boosted = favoured(ids, scores, {ids[-1][:8]: bound})
    assert sorted(order) == list(range(len(scores)))
    assert boosted == sorted(boosted, reverse=True)
    assert boosted[order.index(len(scores) - 1)] == pytest.approx(scores[-1] * (1 + bound))


def test_boost_of_matches_ids_and_citation_prefixes():
    assert boost_of("abcdef01" + "0" * 24, {"abcdef": 0.3, "ffff": 0.9}) == 0.3
    assert boost_of("12345678" + "0" * 24, {"abcdef": 0.3}) == 0.0


def test_neutral_means_no_exploration_and_no_boosts():
    assert NEUTRAL.neutral and not Modulation(spread=0.1).neutral and not Modulation(boosts={"a": 0.1}).neutral


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def searched(*similarities, notes=()):
    return SimpleNamespace(found=[SimpleNamespace(similarity=s) for s in similarities], modulation_notes=list(notes))


def test_a_weak_or_empty_search_arouses_noradrenaline_and_a_good_one_does_not():
    s = NeuromodulationService(constitution(), clock=FakeClock())
    s.after_search("q", searched(0.8, 0.5))
    assert s.modulation() == NEUTRAL
    s.after_search("q", searched(0.2, 0.1))  # below the relevance floor
    assert s.level("noradrenaline") == pytest.approx(1.0 + s.on_weak_search)
    assert s.modulation().spread == pytest.approx(s.explore_gain * s.on_weak_search)
    s.after_search("q", searched())
    assert s.level("noradrenaline") == pytest.approx(1.0 + s.on_weak_search + s.on_empty_search)
    s.after_search("q", searched(0.9, notes=["noradrenaline explored"]))
    assert s.state()["last_search_effect"] == "noradrenaline explored"


def test_a_use_raises_dopamine_and_boosts_that_memory_until_refuted_and_it_persists():
    clock = FakeClock()
    s = NeuromodulationService(constitution(), clock=clock)
    s.used("abcdef12")
    boosts = s.modulation().boosts
    assert s.level("dopamine") == pytest.approx(2.0 + s.on_use) and boosts == {"abcdef12": pytest.approx(s.use_bound)}
    assert s.state()["dopamine"]["effect"]["memories_boosted"] == 1
    restored = NeuromodulationService(constitution(), clock=clock)
    restored.load_doc(s.to_doc())
    assert restored.modulation().boosts == boosts
    s.refuted("abcdef12" + "0" * 24)  # judged by its full id: the prefix's use goes too
    assert s.modulation().boosts == {}
    clock.t += 6000.0  # ten dopamine half-lives: back at rest, nothing boosted
    assert restored.modulation().boosts == {}


def test_exploration_follows_deliberate_links_only_and_at_most_max_links_a_hit():
    from contextgraph.services.memory.graph_spread import MAX_LINKS, head_links, linked
    from contextgraph.storage.base import Edge

    records = {f"m{i}": SimpleNamespace(id=f"m{i}", seq=i) for i in range(100)}
    edges = {"m0": [Edge("m0", "m1", "Relational", 1.0), Edge("m0", "m2", "Semantic", 0.9),
                    Edge("m0", "m3", "Temporal", 1.0), Edge("m4", "m0", "Semantic", 0.5, provenance="dream"),
                    Edge("m0", "m5", "Causal", 0.7)],
             "m6": [Edge("m6", f"m{i}", "Relational", i / 100) for i in range(7, 100)]}
    graph = SimpleNamespace(edges=lambda node: edges.get(node, []), get=records.get)
    store = SimpleNamespace(get_by_seq=lambda seqs: [records[f"m{s}"] for s in seqs], graph_read=lambda fn: fn(graph))
    links = linked(store, [0, 6])
    assert sorted(links[0]) == [(1, 1.0), (4, 0.5), (5, 0.7)]  # not the store-time Semantic or Temporal edges
    assert len(links[6]) == MAX_LINKS and min(w for _, w in links[6]) == pytest.approx((100 - MAX_LINKS) / 100)
    fused = np.array([0.1, 0.2, 3.0, 0.4, 0.3, 0.5])  # rows are seqs 10..15; the best-fused is row 2 (seq 12)
    edges["m12"] = [Edge("m12", "m15", "Relational", 1.0), Edge("m12", "m50", "Relational", 1.0)]
    assert head_links(store, fused, [10, 11, 12, 13, 14, 15], 1) == [(2, 5, 1.0)]  # m50 is not a candidate
