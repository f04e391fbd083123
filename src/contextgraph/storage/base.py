"""What the store keeps for one memory, and the protocol any backend (LMDB + local indexes by default, a
scale-out engine later) implements."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from contextgraph.fingerprint import Fingerprint


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


@dataclass(frozen=True, slots=True)
class Hit:
    seq: int
    score: float


class OplogEntry(NamedTuple):
    seq: int  # the entry's own position in the log
    op: str  # "put" | "delete"
    memory_id: str
    memory_seq: int  # the memory's seq (its index label): equal to `seq` for a put, earlier for a delete


class MemoryStore(Protocol):
    def put(self, record: MemoryRecord, fingerprint: Fingerprint, edges: Sequence[Edge] = (),
            temporal: Callable[[str, str], Edge] | None = None) -> MemoryRecord:
        """Commit record + complete fingerprint + oplog entry (+ its edges, the Temporal edge from the session's
        previous memory built by `temporal`, and a "created" lineage event) in one transaction; durable on
        return. Returns the record with `seq` (and `session_position`) assigned."""
        ...

    def get(self, memory_id: str) -> MemoryRecord | None: ...

    def get_by_seq(self, seqs: Sequence[int]) -> list[MemoryRecord | None]: ...

    def fingerprints(self, seqs: Sequence[int], spaces: Sequence[int] | None = None) -> list[Fingerprint | None]: ...

    def count(self) -> int: ...

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

    def touch(self, seqs: Sequence[int], now: float | None = None) -> None:
        """Count one access of each memory (access_count + 1, last_accessed = now), in one transaction."""
        ...

    def scan(self, spaces: Sequence[int] | None = None) -> Iterator[tuple[MemoryRecord, Fingerprint]]:
        """Every live memory with its fingerprint (or only its `spaces`), in seq order."""
        ...


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
    # Neurotransmitter modulation (SPEC §10): w_eff = weight·(1 + excitatory − inhibitory + 0.5·modulatory)
    excitatory: float = 0.0
    inhibitory: float = 0.0
    modulatory: float = 0.0
    amortized_shortcut: bool = False  # a dream-created direct edge standing for a multi-hop path
    steering_reward: float = 0.0  # in [-1, 1]
    created_at: float = 0.0

    def other(self, node: str) -> str:
        return self.target if node == self.source else self.source
