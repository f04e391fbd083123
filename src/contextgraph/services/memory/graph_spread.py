"""Which stored memories the first hits of a search are linked to: what noradrenaline's exploration adds to the
candidates and spreads score along (docs/retrieval.md#neuromodulation-of-retrieval). Reads only; the scoring is
retrieval.modulation.spread.

Only links someone made on purpose are followed: Relational (link_to), Causal, Hierarchical, and any edge with a
provenance (a dream's link, an explicit "because"). Store-time Semantic edges join a memory to its nearest
neighbours by E1, which the candidates already hold and rank by their own similarity: spreading along them would
count that similarity twice (on benchmarks/bench_modulators.py's cases following them changed nothing either way).
Temporal edges join a session's memories in time, not in topic.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

FOLLOWED = frozenset({"Causal", "Hierarchical", "Relational"})
# the strongest links read per hit: an aroused search reads at most 15 hits' links, and a hub's hundreds of
# links would cost a read each and add candidates no one asked for
MAX_LINKS = 32


def followed(edge: Any) -> bool:
    return edge.type in FOLLOWED or (edge.type != "Temporal" and bool(edge.provenance))


def linked(store: Any, seqs: Sequence[int]) -> dict[int, list[tuple[int, float]]]:
    """seq → [(linked memory's seq, edge weight in [0, 1])] for each live memory of `seqs` (one graph read)."""
    live = [(seq, record.id) for seq, record in zip(seqs, store.get_by_seq(list(seqs))) if record is not None]

    def read(g: Any) -> dict[int, list[tuple[int, float]]]:
        out: dict[int, list[tuple[int, float]]] = {}
        for seq, memory_id in live:
            pairs = out.setdefault(seq, [])
            edges = sorted((e for e in g.edges(memory_id) if followed(e)), key=lambda e: -e.weight)[:MAX_LINKS]
            for edge in edges:
                other = g.get(edge.other(memory_id))
                if other is not None:
                    pairs.append((other.seq, min(1.0, max(0.0, float(edge.weight)))))
        return out

    return store.graph_read(read) if live else {}


def head_links(store: Any, fused: np.ndarray, seqs: Sequence[int], head: int) -> list[tuple[int, int, float]]:
    """(head row, linked row, weight) for the `head` best-fused candidates' links to other candidates."""
    rows = np.argsort(-fused, kind="stable")[:head].tolist()
    row_of = {seq: row for row, seq in enumerate(seqs)}
    links = linked(store, [seqs[row] for row in rows])
    return [(row, row_of[other], weight) for row in rows for other, weight in links.get(seqs[row], [])
            if other in row_of]
