"""What the store keeps for one memory, and the protocols any backend (LMDB + local indexes by default,
PostgreSQL later) implements: MemoryStore (the source of truth), GraphTxn (one transaction over its graph side)
and SearchIndexes (the per-space nearest-neighbour caches). tests/contract/test_storage.py holds every backend to
them."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple, Protocol, TypeVar

import numpy as np

from contextgraph.fingerprint import Fingerprint, Sparse, Vector
from contextgraph.storage.fingerprint_columns import FingerprintColumns

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    id: str  # 32 hex chars (uuid4)
    content: str  # after PII redaction
    rationale: str
    modality: str
    session: str
    created_at: float  # unix seconds
    importance: float = 0.5
    tags: tuple[str, ...] = ()
    links: tuple[str, ...] = ()  # ids given in link_to
    redactions: tuple[str, ...] = ()  # kinds of PII replaced before storage
    session_position: int = 0
    updated_at: float = 0.0
    access_count: int = 0
    last_accessed: float = 0.0
    seq: int = 0  # assigned by the store at commit: the memory's position in the operation log, its index label
    extra: dict = field(default_factory=dict)  # forward-compatible metadata (codec keeps unknown keys)


class OplogEntry(NamedTuple):
    seq: int  # the entry's own position in the log
    op: str  # "put" | "delete" | "rewrite" (some spaces of a stored fingerprint replaced: re-index them)
    memory_id: str
    memory_seq: int  # the memory's seq (its index label): equal to `seq` for a put, earlier for a delete
    spaces: tuple[int, ...] = ()  # a rewrite's spaces, ascending


class NewTriple(Protocol):
    """An E11 relation triple as the embedder states it (embedders.e11_entity.Triple), about to be stored."""

    head: str
    relation: str
    tail: str
    head_vector: np.ndarray
    tail_vector: np.ndarray


# A stored E11 triple as read back: (head, relation, tail, head vector, tail vector).
StoredTriple = tuple[str, str, str, np.ndarray, np.ndarray]


class GraphTxn(Protocol):
    """One transaction over the graph side of the store: records, fingerprints as stored bytes, edges,
    tombstones, reversal records and lineage. Read-only under `graph_read`; under `graph_write` every change
    commits together or not at all. Returned objects are copies the caller may keep."""

    def exists(self, memory_id: str) -> bool: ...
    def get(self, memory_id: str) -> MemoryRecord | None: ...
    def fingerprint_blob(self, seq: int) -> bytes | None: ...
    def update(self, record: MemoryRecord) -> MemoryRecord: ...

    def delete_memory(self, memory_id: str) -> tuple[MemoryRecord, bytes, list[Edge]]:
        """Remove a live memory (record, fingerprint, its edges; a "delete" oplog entry); returns what it was."""
        ...

    def restore_memory(self, record: MemoryRecord, blob: bytes) -> MemoryRecord:
        """Put a memory back (or a new merged one) under a fresh seq with its stored fingerprint bytes."""
        ...

    def put_triples(self, memory_id: str, triples: Sequence[NewTriple]) -> None: ...
    def delete_triples(self, memory_id: str) -> None: ...
    def recent(self, limit: int, since: float | None, session: str | None) -> list[MemoryRecord]: ...
    def ids_with_prefix(self, prefix: str, limit: int = 2) -> list[str]: ...
    def put_edge(self, edge: Edge) -> None: ...
    def delete_edge(self, edge: Edge) -> None: ...
    def get_edge(self, source: str, target: str, type_: str) -> Edge | None: ...
    def edges_out(self, node: str) -> list[Edge]: ...
    def edges_in(self, node: str) -> list[Edge]: ...
    def edges(self, node: str) -> list[Edge]: ...
    def edge_count(self) -> int: ...
    def put_tombstone(self, memory_id: str, doc: dict, blob: bytes) -> None: ...
    def get_tombstone(self, memory_id: str) -> tuple[dict, bytes] | None: ...
    def delete_tombstone(self, memory_id: str) -> None: ...
    def tombstones(self) -> Iterator[tuple[str, dict]]: ...
    def put_reversal(self, reversal_hash: str, doc: dict) -> None: ...
    def get_reversal(self, reversal_hash: str) -> dict | None: ...
    def delete_reversal(self, reversal_hash: str) -> None: ...
    def lineage(self, memory_id: str) -> list[dict]: ...
    def append_lineage(self, memory_id: str, event: dict) -> None: ...


# `recent(since=…)` walks seqs newest first, but seq order is not creation order: a restored memory and an imported
# line keep their old created_at under a new seq. So the walk skips older records instead of stopping at the first,
# and ends after this many in a row (a burst of restores or an import's batch is far shorter).
RECENT_OLDER_RUN = 1000


def recent_since(newest_first: Iterable[MemoryRecord], limit: int, since: float | None,
                 session: str | None) -> list[MemoryRecord]:
    """GraphTxn.recent's selection over a backend's records, newest stored first: up to `limit` of `session`
    (any without one) created at or after `since`, skipping older records until RECENT_OLDER_RUN come in a row."""
    out: list[MemoryRecord] = []
    older_run = 0
    for record in newest_first:
        if since is not None and record.created_at < since:
            older_run += 1
            if older_run >= RECENT_OLDER_RUN:
                break
            continue
        older_run = 0
        if session is None or record.session == session:
            out.append(record)
            if len(out) >= limit:
                break
    return out


class MemoryStore(Protocol):
    """The source of truth for one data directory. Every method is thread-safe; each write is one transaction,
    durable when it returns. Services depend on this protocol, never on a backend class."""

    def put(self, record: MemoryRecord, fingerprint: Fingerprint, edges: Sequence[Edge] = (),
            temporal: Callable[[str, str], Edge] | None = None, triples: Sequence[NewTriple] = ()) -> MemoryRecord:
        """Commit record + complete fingerprint + oplog entry (+ its edges to memories that exist, the Temporal
        edge from the session's previous memory built by `temporal`, its E11 triples and a "created" lineage
        event) in one transaction; durable on return. Returns the record with `seq` (and `session_position`)
        assigned."""
        ...

    def get(self, memory_id: str) -> MemoryRecord | None: ...

    def get_by_seq(self, seqs: Sequence[int]) -> list[MemoryRecord | None]: ...

    def fingerprints(self, seqs: Sequence[int], spaces: Sequence[int] | None = None) -> list[Fingerprint | None]: ...

    def fingerprint_columns(self, seqs: Sequence[int], spaces: Sequence[int]) -> FingerprintColumns:
        """`spaces` of the memories `seqs` as one column per space (those not found are left out): what
        retrieval's stage 3 scores, read without decoding a fingerprint per memory."""
        ...

    def count(self) -> int: ...

    def session_count(self, session: str) -> int:
        """How many memories `session` has stored (its next session_position)."""
        ...

    def oplog_since(self, seq: int, limit: int | None = None) -> list[OplogEntry]:
        """Entries with seq > `seq`, oldest first (at most `limit`)."""
        ...

    def last_seq(self) -> int:
        """The seq of the newest oplog entry; 0 for an empty store."""
        ...

    def delete(self, memory_id: str) -> bool:
        """Remove record + fingerprint and append a "delete" entry, in one transaction; False if absent."""
        ...

    def update(self, record: MemoryRecord) -> MemoryRecord:
        """Replace an existing record's metadata (same id and seq; the fingerprint is unchanged)."""
        ...

    def rewrite_spaces(self, updates: Mapping[str, Mapping[int, Vector]]) -> list[str]:
        """Replace some spaces of stored fingerprints ({memory id: {space: new vector}}; each vector of the kind
        and dimension stored), with one "rewrite" oplog entry per memory naming its spaces, so every process's
        indexes re-index them. All in one transaction: every listed memory is rewritten or none (a bad vector
        raises and changes nothing); ids not live are skipped. Records, seqs and the other spaces are unchanged.
        Returns the ids rewritten; durable on return."""
        ...

    def touch(self, seqs: Sequence[int], now: float | None = None) -> None:
        """Count one access of each memory (access_count + 1, last_accessed = now), in one transaction."""
        ...

    def scan(self, spaces: Sequence[int] | None = None) -> Iterator[tuple[MemoryRecord, Fingerprint]]:
        """Every live memory with its fingerprint (or only its `spaces`), in seq order."""
        ...

    def live_triples(self) -> list[tuple[str, str, str, str, np.ndarray, np.ndarray]]:
        """(memory id, head, relation, tail, h, t) of every live memory's triples."""
        ...

    def triples_of(self, memory_id: str) -> list[StoredTriple]: ...

    def triple_count(self) -> int:
        """Memories with triples stored (live or not): a cheap change counter for fitted models."""
        ...

    def put_document(self, name: str, doc: dict) -> None:
        """Keep one JSON document under `name` beside the memories (the engine state)."""
        ...

    def get_document(self, name: str) -> dict | None: ...

    def graph_write(self, fn: Callable[[GraphTxn], T]) -> T:
        """Run `fn` in ONE write transaction; `fn` must have no outside effects (it may be retried)."""
        ...

    def graph_read(self, fn: Callable[[GraphTxn], T]) -> T:
        """Run `fn` on one consistent read snapshot."""
        ...

    def check(self) -> list[str]:
        """Problems found by a full consistency walk (empty when sound)."""
        ...

    def close(self) -> None: ...


class SearchIndexes(Protocol):
    """The per-space nearest-neighbour indexes over the store: caches that catch up from its operation log."""

    applied_seq: int  # the newest oplog entry reflected

    def search(self, space: int, query: Vector, k: int, max_df: float = 1.0) -> list[tuple[int, float]]:
        """(seq, score) of the k nearest memories in `space`, best first."""
        ...

    def score_sparse(self, space: int, query: Sparse, docs: Sequence[Sparse]) -> np.ndarray: ...

    def sparse_idf(self, space: int, terms: np.ndarray) -> np.ndarray:
        """float64 BM25 idf of each term in a sparse space (the statistics score_sparse uses)."""
        ...

    def sizes(self) -> dict[int, int]: ...

    def apply(self, seq: int, fingerprint: Fingerprint) -> None: ...

    def catch_up(self, store: MemoryStore | None = None) -> int:
        """Apply the store's oplog since `applied_seq`; returns how many entries were applied."""
        ...

    def save(self, directory: Path | str) -> None: ...


EDGE_TYPES = ("Semantic", "Temporal", "Causal", "Hierarchical", "Relational")


@dataclass(frozen=True, slots=True)
class Edge:
    """A typed, directed edge between two memories. Symmetric relations (Semantic, Relational) are stored once,
    source → target, and traversed both ways; `direction` says how a reader should take it."""

    source: str
    target: str
    type: str  # one of EDGE_TYPES
    weight: float = 1.0  # base weight in [0, 1]
    confidence: float = 1.0  # in [0, 1]
    direction: str = "forward"  # "forward" (source → target) | "undirected"
    domain: str = "General"
    # Neurotransmitter modulation (docs/storage.md): w_eff = weight·(1 + excitatory − inhibitory + 0.5·modulatory)
    excitatory: float = 0.0
    inhibitory: float = 0.0
    modulatory: float = 0.0
    amortized_shortcut: bool = False  # a dream-created direct edge standing for a multi-hop path
    steering_reward: float = 0.0  # in [-1, 1]
    created_at: float = 0.0
    provenance: str = ""  # who made it when not the store's own rules: "dream" (a REM blind spot), "dream: shares
    # billing-api" (REM's shared-name link), "dream_shortcut" (a path's shortcut); or the evidence of an explicit
    # causal link, "cue: because" (services/memory/causal_links)

    def other(self, node: str) -> str:
        return self.target if node == self.source else self.source
