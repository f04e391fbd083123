"""Pure functions over plain values; no storage, no clock. Tested against naive references."""

from __future__ import annotations

import hashlib
import json
import math
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any


def effective_weight(base: float, excitatory: float = 0.0, inhibitory: float = 0.0, modulatory: float = 0.0) -> float:
    """Neuromodulated weight (docs/storage.md) w_eff = base·(1 + e − i + 0.5·m), clamped to [0, 1] so that a strongly
    inhibited edge never turns negative and an excited one never outweighs a certain one."""
    raw = base * (1.0 + excitatory - inhibitory + 0.5 * modulatory)
    return min(1.0, max(0.0, raw))


def reversal_hash(payload: Mapping[str, Any]) -> str:
    """A deterministic handle for one undoable operation: SHA-256 of the canonical JSON of what it changed
    (ids, kind, time). Canonical = sorted keys, no whitespace, so the same operation always hashes the same."""
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def neighbour_entropy(similarities: Sequence[float], empty: float = 1.0) -> float:
    """How unlike its neighbours a node is: 1 − mean similarity to its nearest neighbours (UTL's ΔS in E1),
    in [0, 1]. A node with no neighbours is maximally novel (`empty`)."""
    if not similarities:
        return empty
    mean = sum(min(1.0, max(0.0, s)) for s in similarities) / len(similarities)
    return 1.0 - mean


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return 0.0 if na == 0 or nb == 0 else dot / (na * nb)


def shortest_path(adjacency: Mapping[str, Sequence[str]], source: str, target: str, max_hops: int) -> list[str]:
    """Fewest-hop path source → target within max_hops edges (breadth first), or [] when there is none."""
    if source == target:
        return [source]
    parent: dict[str, str] = {source: source}
    frontier = deque([(source, 0)])
    while frontier:
        node, depth = frontier.popleft()
        if depth == max_hops:
            continue
        for nxt in adjacency.get(node, ()):
            if nxt in parent:
                continue
            parent[nxt] = node
            if nxt == target:
                path = [target]
                while path[-1] != source:
                    path.append(parent[path[-1]])
                return path[::-1]
            frontier.append((nxt, depth + 1))
    return []


def first_cycle(adjacency: Mapping[str, Sequence[str]], source: str, max_hops: int) -> list[str]:
    """A walk from `source` of at most max_hops edges that returns to a node already on it, ending with the
    repeated node (A→B→C→A gives [A, B, C, A]); [] when no such walk exists. Depth first, so the walk reported
    is the path up to the point where the cycle was detected."""
    stack: list[str] = [source]
    on_path = {source}

    def visit(node: str, depth: int) -> list[str]:
        if depth == max_hops:
            return []
        for nxt in adjacency.get(node, ()):
            if nxt in on_path:
                return [*stack, nxt]
            stack.append(nxt)
            on_path.add(nxt)
            found = visit(nxt, depth + 1)
            if found:
                return found
            stack.pop()
            on_path.discard(nxt)
        return []

    return visit(source, 0)
