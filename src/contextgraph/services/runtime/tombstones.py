"""The end of the recovery window (docs/tools.md): a forgotten or merged-away memory's tombstone keeps its exact
record, fingerprint and edges for 30 days; after that it is deleted for good, with the memory's relation
triples. The operation's reversal record shrinks to what a late restore_from_hash needs to say why it cannot
(-32011 with the deletion time), and the lineage (which holds no content) stays.

Run inside a curation write transaction and once when the store opens, so nothing outlives its window for
long even on a server that never curates again.
"""

from __future__ import annotations

from contextgraph.storage.base import GraphTxn


def expired_ids(g: GraphTxn, now: float, window_s: float) -> list[str]:
    return [memory_id for memory_id, _ in _expired(g, now, window_s)]


def _expired(g: GraphTxn, now: float, window_s: float) -> list[tuple[str, dict]]:
    return [(memory_id, doc) for memory_id, doc in g.tombstones() if now - float(doc["deleted_at"]) > window_s]


def purge_expired(g: GraphTxn, now: float, window_s: float) -> list[str]:
    """Delete every tombstone older than the window (in the caller's write transaction); returns their ids."""
    expired = _expired(g, now, window_s)
    for memory_id, doc in expired:
        g.delete_tombstone(memory_id)
        g.delete_triples(memory_id)
        h = doc.get("reversal_hash")
        op = g.get_reversal(h) if h else None
        if h and op is not None and "purged_at" not in op:
            g.put_reversal(h, {"op": op["op"], "at": op["at"], "ids": op.get("ids", []), "purged_at": now})
    return [memory_id for memory_id, _ in expired]
