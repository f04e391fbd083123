"""Causal inference kernels (docs/engine.md, omni_infer): the strength of a cause → effect link read from two memories'
E5 halves, and the strongest chains over a set of such links. Pure: plain values in, plain values out.

A link's strength is in (0, 1]; a chain's confidence is the product of its links' strengths (each link must hold
for the chain to hold, and treating them as independent is the simplest assumption that says so). Because every
strength is ≤ 1, going round a cycle never raises a chain's confidence, so the best walk of at most `max_hops`
links is a simple path: cycles are found separately (graph.kernels.first_cycle) and reported, never followed.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CausalLink:
    cause: str  # memory id
    effect: str  # memory id
    strength: float  # in (0, 1]
    via: str  # "edge": a stored Causal edge; "e5": inferred from the E5 halves (no edge stored)
    similarity: float = 0.0  # e5: the cause memory's effect half · the effect memory's cause half
    margin: float = 0.0  # e5: that similarity minus the reverse direction's


def e5_link_strength(effect_of_a: float, reverse: float, *, min_cosine: float, min_margin: float,
                     discount: float) -> float | None:
    """Strength of an inferred link a → b from `effect_of_a` = effect(a)·cause(b) and `reverse` = effect(b)·cause(a),
    or None when it is not a link: the match must reach `min_cosine` and beat the reverse direction by
    `min_margin` (a restatement of one cause and effect matches both ways and is no chain). An inferred link is
    worth `discount` of an equally similar stored edge: nobody, neither the auto-edge rules nor a curator, has
    vouched for it."""
    if effect_of_a < min_cosine or effect_of_a - reverse < min_margin:
        return None
    return max(1e-6, min(1.0, effect_of_a * discount))


def best_chains(links: Iterable[CausalLink], start: str, max_hops: int,
                backward: bool = False) -> dict[str, tuple[float, list[str]]]:
    """For every memory reachable from `start` in at most `max_hops` links, the most confident chain to it:
    node → (confidence, path). Forward follows cause → effect; `backward` follows effect → cause (the causes of
    `start`), and its paths are still written in causal order (cause first, `start` last).

    Max-product over walks of ≤ max_hops links by dynamic programming on the hop count (Bellman-Ford in
    −log space); with strengths ≤ 1 the best walk is a simple path. Ties keep the fewer hops."""
    adjacency: dict[str, list[tuple[str, float]]] = {}
    for link in links:
        a, b = (link.effect, link.cause) if backward else (link.cause, link.effect)
        adjacency.setdefault(a, []).append((b, link.strength))
    best: dict[str, tuple[float, list[str]]] = {start: (1.0, [start])}
    frontier = {start}
    for _ in range(max_hops):
        improved: dict[str, tuple[float, list[str]]] = {}
        for node in frontier:
            score, path = best[node]
            for nxt, strength in adjacency.get(node, ()):
                if nxt in path:
                    continue  # a cycle: never followed
                candidate = score * strength
                held = improved.get(nxt) or best.get(nxt)
                if held is None or candidate > held[0] + 1e-12:
                    improved[nxt] = (candidate, [*path, nxt])
        if not improved:
            break
        best.update(improved)
        frontier = set(improved)
    best.pop(start)
    if backward:
        return {node: (score, path[::-1]) for node, (score, path) in best.items()}
    return best


def chain_links(path: list[str], links: Mapping[tuple[str, str], CausalLink]) -> list[CausalLink]:
    """The links of a path written in causal order."""
    return [links[(a, b)] for a, b in itertools.pairwise(path)]


def confidence_of(chain: list[CausalLink]) -> float:
    return math.prod(link.strength for link in chain) if chain else 0.0
