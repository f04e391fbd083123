"""graph.causal: the strongest chains over cause → effect links against a brute-force enumeration of simple
paths, cycles never followed, backward chains written in causal order, and the E5 link rule."""

import itertools
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from contextgraph.graph.causal import CausalLink, best_chains, e5_link_strength


def brute_force(links, start, max_hops, backward=False):
    adjacency = {}
    for link in links:
        a, b = (link.effect, link.cause) if backward else (link.cause, link.effect)
        adjacency.setdefault(a, []).append((b, link.strength))
    best = {}

    def walk(node, path, score):
        if len(path) - 1 == max_hops:
            return
        for nxt, strength in adjacency.get(node, ()):
            if nxt in path:
                continue
            s = score * strength
            if nxt not in best or s > best[nxt]:
                best[nxt] = s
            walk(nxt, [*path, nxt], s)

    walk(start, [start], 1.0)
    best.pop(start, None)
    return best


@st.composite
def graphs(draw):
    n = draw(st.integers(2, 7))
    nodes = [f"n{i}" for i in range(n)]
    pairs = draw(st.lists(st.tuples(st.sampled_from(nodes), st.sampled_from(nodes)), max_size=18, unique=True))
    strengths = draw(st.lists(st.floats(0.05, 1.0), min_size=len(pairs), max_size=len(pairs)))
    links = [CausalLink(a, b, s, "edge") for (a, b), s in zip(pairs, strengths) if a != b]
    return links, draw(st.sampled_from(nodes)), draw(st.integers(1, 5)), draw(st.booleans())


@given(graphs())
@settings(max_examples=300, deadline=None)
def test_best_chains_equal_brute_force(case):
    links, start, hops, backward = case
    got = best_chains(links, start, hops, backward)
    want = brute_force(links, start, hops, backward)
    assert set(got) == set(want)
    strength = {(link.cause, link.effect): link.strength for link in links}
    for node, (score, path) in got.items():
        assert math.isclose(score, want[node], rel_tol=1e-9)
        assert len(path) - 1 <= hops and len(set(path)) == len(path)
        assert path[-1 if backward else 0] == start and path[0 if backward else -1] == node
        assert math.isclose(math.prod(strength[(a, b)] for a, b in itertools.pairwise(path)), score, rel_tol=1e-9)


def test_chain_through_b_and_cycle_not_followed():
    links = [CausalLink("A", "B", 0.8, "edge"), CausalLink("B", "C", 0.7, "e5"), CausalLink("C", "A", 0.9, "edge")]
    forward = best_chains(links, "A", 5)
    assert forward["C"] == (0.8 * 0.7, ["A", "B", "C"])
    assert "A" not in forward  # the way back to the start is a cycle, not a result
    backward = best_chains(links, "C", 5, backward=True)
    assert backward["A"][1] == ["A", "B", "C"]  # causal order, cause first


def test_e5_link_rule():
    assert e5_link_strength(0.7, 0.2, min_cosine=0.5, min_margin=0.2, discount=0.8) == 0.7 * 0.8
    assert e5_link_strength(0.45, 0.0, min_cosine=0.5, min_margin=0.2, discount=0.8) is None  # too weak
    assert e5_link_strength(0.8, 0.7, min_cosine=0.5, min_margin=0.2, discount=0.8) is None  # both ways: a restatement
