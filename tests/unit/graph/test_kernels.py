"""Graph kernels against naive references: w_eff, reversal hashes, shortest path and cycle detection."""

import itertools
import random

import pytest

from contextgraph.graph.kernels import effective_weight, first_cycle, neighbour_entropy, reversal_hash, shortest_path


def test_effective_weight_formula_and_clamp():
    assert effective_weight(0.5) == 0.5
    assert effective_weight(0.5, excitatory=0.2, inhibitory=0.1, modulatory=0.4) == pytest.approx(0.5 * 1.3)
    assert effective_weight(0.8, excitatory=1.0) == 1.0  # never above certain
    assert effective_weight(0.8, inhibitory=2.0) == 0.0  # never negative


def test_reversal_hash_is_deterministic_and_order_free_over_keys():
    a = reversal_hash({"op": "forget", "ids": ["x"], "at": 1.5})
    b = reversal_hash({"at": 1.5, "ids": ["x"], "op": "forget"})
    assert a == b and len(a) == 64
    assert a != reversal_hash({"op": "forget", "ids": ["x"], "at": 1.6})


def test_neighbour_entropy():
    assert neighbour_entropy([]) == 1.0
    assert neighbour_entropy([1.0, 1.0]) == 0.0
    assert neighbour_entropy([0.2, 0.4]) == pytest.approx(0.7)


def _walks(adj, source, max_hops):
    """Every walk from source with ≤ max_hops edges (naive enumeration)."""
    walks = [[source]]
    out = [[source]]
    for _ in range(max_hops):
        walks = [w + [n] for w in walks for n in adj.get(w[-1], ())]
        out += walks
    return out


def _random_graph(rng, n, p):
    nodes = [str(i) for i in range(n)]
    return {a: [b for b in nodes if b != a and rng.random() < p] for a in nodes}


@pytest.mark.parametrize("seed", range(40))
def test_path_and_cycle_match_naive_reference(seed):
    rng = random.Random(seed)
    adj = _random_graph(rng, rng.randint(2, 6), rng.choice([0.15, 0.3, 0.5]))
    max_hops = rng.randint(1, 4)
    walks = _walks(adj, "0", max_hops)
    for target in adj:
        path = shortest_path(adj, "0", target, max_hops)
        simple_to_target = [w for w in walks if w[-1] == target and len(set(w)) == len(w)]
        if not simple_to_target:
            assert path == []
        else:
            assert len(path) == min(len(w) for w in simple_to_target)
            assert path[0] == "0" and path[-1] == target
            assert all(b in adj[a] for a, b in itertools.pairwise(path))
    cycle = first_cycle(adj, "0", max_hops)
    has_cycle = any(len(set(w)) < len(w) for w in walks)
    assert bool(cycle) == has_cycle
    if cycle:
        assert cycle[-1] in cycle[:-1] and len(cycle) - 1 <= max_hops
        assert all(b in adj[a] for a, b in itertools.pairwise(cycle))


def test_cycle_reports_the_walk_up_to_the_cycle():
    adj = {"A": ["B"], "B": ["C"], "C": ["A"]}
    assert first_cycle(adj, "A", 5) == ["A", "B", "C", "A"]
    assert first_cycle(adj, "A", 2) == []
    assert shortest_path(adj, "A", "C", 5) == ["A", "B", "C"]
    assert shortest_path(adj, "C", "B", 1) == []
