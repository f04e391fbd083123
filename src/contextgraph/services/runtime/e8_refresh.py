"""E8 (graph) refreshed when a memory's edges change (docs/spaces.md#e8-graph).

E8 is one message-passing round: the memory's own E1 mixed with the edge-weighted mean of its neighbours' E1
(embedders.e08_graph.mix). At store time the only neighbours known are the ones named in link_to; the automatic
Semantic and Causal edges, curation's merges and links, and a forgotten neighbour all change the neighbourhood
afterwards. Every such change queues the memories at both ends here; the queue is drained in the background, a
batch at a time, on the store's one writer thread (docs/architecture.md), each batch recomputed from the current
edges and stored E1 vectors and written with MemoryStore.rewrite_spaces: one transaction per batch that replaces
E8 alone and logs a rewrite entry, so every process's E8 index re-indexes it on its next catch-up. A crash
mid-batch leaves every fingerprint of the batch as it was.

Bounded: at most `max_pending` memories wait (beyond that the oldest requests are dropped and counted: their E8
is refreshed again at their next edge change), and a batch of `batch` runs before anything queued behind it on
the writer, so a store_memory never waits behind more than one batch. Temporal edges (a session's previous
memory) say nothing about content and are left out of the neighbourhood (`edge_types`)."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from itertools import islice
from typing import Any

import numpy as np

from contextgraph.embedders.e08_graph import mix
from contextgraph.errors import StorageError
from contextgraph.log import get_logger
from contextgraph.storage.base import Edge, GraphTxn, MemoryRecord, MemoryStore
from contextgraph.storage.writer import Writer

GRAPH, SEMANTIC = 8, 1
_log = get_logger("storage")


class EdgeWatch:
    """A GraphTxn that notes the memories at both ends of every edge it puts or deletes (a deleted memory's edges
    included), so that a curation operation can queue their E8 refresh after it commits."""

    def __init__(self, g: GraphTxn) -> None:
        self._g = g
        self.touched: dict[str, None] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._g, name)

    def _note(self, edges: Iterable[Edge]) -> None:
        for edge in edges:
            self.touched.update({edge.source: None, edge.target: None})

    def put_edge(self, edge: Edge) -> None:
        self._g.put_edge(edge)
        self._note([edge])

    def delete_edge(self, edge: Edge) -> None:
        self._g.delete_edge(edge)
        self._note([edge])

    def delete_memory(self, memory_id: str) -> tuple[MemoryRecord, bytes, list[Edge]]:
        removed = self._g.delete_memory(memory_id)
        self._note(removed[2])
        return removed


class E8Refresher:
    def __init__(self, settings: Mapping[str, Any]) -> None:
        self.batch = int(settings["batch"])
        self.max_pending = int(settings["max_pending"])
        self.edge_types = frozenset(settings["edge_types"])
        self._pending: dict[str, None] = {}  # insertion-ordered: the oldest request first
        self._lock = threading.Lock()
        self._scheduled = False
        self.refreshed = 0  # memories whose E8 was rewritten
        self.dropped = 0  # requests dropped at the bound

    @property
    def pending(self) -> int:
        return len(self._pending)

    def enqueue(self, store: MemoryStore, writer: Writer, memory_ids: Iterable[str]) -> None:
        """Queue these memories' E8 for a refresh and make sure a drain is scheduled on the writer."""
        with self._lock:
            for memory_id in memory_ids:
                self._pending.pop(memory_id, None)
                self._pending[memory_id] = None
            while len(self._pending) > self.max_pending:
                del self._pending[next(iter(self._pending))]
                self.dropped += 1
            if self._scheduled or not self._pending:
                return
            self._scheduled = True
        try:
            writer.submit_future(self._drain, store, writer)
        except StorageError:  # the writer is closing: what is queued waits for the memories' next edge change
            with self._lock:
                self._scheduled = False

    def _drain(self, store: MemoryStore, writer: Writer) -> None:
        """One batch, on the writer thread; then the next batch goes to the back of the writer's queue."""
        with self._lock:
            ids = list(islice(self._pending, self.batch))
            for memory_id in ids:
                del self._pending[memory_id]
        try:
            self.refresh_now(store, ids)
        except Exception:  # a failed batch changes nothing (one transaction); its memories wait for a later change
            _log.exception("E8 refresh failed", memories=len(ids))
        finally:
            with self._lock:
                self._scheduled = False
        self.enqueue(store, writer, ())

    def refresh_now(self, store: MemoryStore, memory_ids: Iterable[str]) -> list[str]:
        """Recompute and rewrite these memories' E8 (in the caller's thread; the writer's, for a drain); returns
        the ids whose E8 changed."""
        updates = self.vectors(store, memory_ids)
        done = store.rewrite_spaces(updates) if updates else []
        self.refreshed += len(done)
        return done

    def vectors(self, store: MemoryStore, memory_ids: Iterable[str]) -> dict[str, dict[int, np.ndarray]]:
        """{id: {8: new E8}} for the live memories among `memory_ids` whose E8 differs from the stored one."""
        ids = list(dict.fromkeys(memory_ids))
        types = self.edge_types

        def read(g: GraphTxn) -> dict[str, tuple[int, list[tuple[float, int]]]]:
            out: dict[str, tuple[int, list[tuple[float, int]]]] = {}
            for memory_id in ids:
                record = g.get(memory_id)
                if record is None:
                    continue
                neighbours = []
                for edge in g.edges(memory_id):
                    other = g.get(edge.other(memory_id)) if edge.type in types else None
                    if other is not None and other.id != memory_id:
                        neighbours.append((float(edge.weight), other.seq))
                out[memory_id] = (record.seq, neighbours)
            return out

        graph = store.graph_read(read)
        if not graph:
            return {}
        seqs = list(dict.fromkeys([s for s, _ in graph.values()] + [n for _, ns in graph.values() for _, n in ns]))
        vectors = dict(zip(seqs, store.fingerprints(seqs, spaces=[SEMANTIC, GRAPH])))
        updates: dict[str, dict[int, np.ndarray]] = {}
        for memory_id, (seq, neighbours) in graph.items():
            own = vectors.get(seq)
            if own is None:
                continue
            context = [(w, np.asarray(fp[SEMANTIC])) for w, n in neighbours if (fp := vectors.get(n)) is not None]
            fresh = mix(np.asarray(own[SEMANTIC]), context).astype(np.float32)
            if not np.allclose(fresh, np.asarray(own[GRAPH]), atol=1e-6):
                updates[memory_id] = {GRAPH: fresh}
        return updates
