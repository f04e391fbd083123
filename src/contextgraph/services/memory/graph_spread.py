"""Which stored memories the first hits of a search are linked to: what noradrenaline's exploration adds to the
candidates and spreads score along (docs/retrieval.md#neuromodulation-of-retrieval). Reads only; the scoring is
retrieval.modulation.spread.

Temporal edges are not followed: a session's previous memory is next to a hit in time, not in topic, and every
stored memory has one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

FOLLOWED = frozenset({"Semantic", "Causal", "Hierarchical", "Relational"})


def linked(store: Any, seqs: Sequence[int]) -> dict[int, list[tuple[int, float]]]:
    """seq → [(linked memory's seq, edge weight in [0, 1])] for each live memory of `seqs` (one graph read)."""
    live = [(seq, record.id) for seq, record in zip(seqs, store.get_by_seq(list(seqs))) if record is not None]

    def read(g: Any) -> dict[int, list[tuple[int, float]]]:
        out: dict[int, list[tuple[int, float]]] = {}
        for seq, memory_id in live:
            pairs = out.setdefault(seq, [])
            for edge in g.edges(memory_id):
                other = g.get(edge.other(memory_id)) if edge.type in FOLLOWED else None
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
