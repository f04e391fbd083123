"""The graph side of the LMDB store inside one transaction: records, stored fingerprint bytes, typed edges (by
source and by target), tombstones, reversal records and lineage. storage.base.GraphTxn is its protocol."""

from __future__ import annotations

import dataclasses
import json
import struct
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import lmdb
import numpy as np

from contextgraph.errors import DimensionMismatch, StorageError
from contextgraph.fingerprint import Vector
from contextgraph.storage.base import Edge, MemoryRecord, NewTriple, recent_since
from contextgraph.storage.codec import (
    decode_fingerprint,
    decode_record,
    encode_fingerprint,
    encode_record,
    encode_triples,
)
from contextgraph.storage.lmdb_keys import encode_rewrite, next_seq, present, seq_key

# --- the graph: edges, tombstones, reversals, lineage -----------------------------------------------------------

_TYPE_BYTE = {t: bytes([i]) for i, t in enumerate(("Semantic", "Temporal", "Causal", "Hierarchical", "Relational"))}
_U32 = struct.Struct(">I")


def _edge_json(edge: Edge) -> bytes:
    return json.dumps(dataclasses.asdict(edge), separators=(",", ":")).encode()


def _edge_from(raw: bytes | memoryview) -> Edge:
    return Edge(**json.loads(bytes(raw)))


class GraphTxn:
    """The graph operations inside one LMDB transaction (write or read). Every value returned is a copy.
    Memory deletes and restores write oplog entries, so every process's indexes catch up."""

    def __init__(self, txn: lmdb.Transaction, db: dict[str, Any]) -> None:
        self.txn = txn
        self.db = db

    # memories
    def exists(self, memory_id: str) -> bool:
        return self.txn.get(memory_id.encode(), db=self.db["ids"]) is not None

    def get(self, memory_id: str) -> MemoryRecord | None:
        raw = self.txn.get(memory_id.encode(), db=self.db["memories"])
        return None if raw is None else decode_record(raw)

    def fingerprint_blob(self, seq: int) -> bytes | None:
        raw = self.txn.get(seq_key(seq), db=self.db["fingerprints"])
        return None if raw is None else bytes(raw)

    def update(self, record: MemoryRecord) -> MemoryRecord:
        old = self.get(record.id)
        if old is None:
            raise StorageError(f"memory {record.id} does not exist", memory_id=record.id)
        new = dataclasses.replace(record, seq=old.seq, session_position=old.session_position)
        self.txn.put(record.id.encode(), encode_record(new), db=self.db["memories"])
        return new

    def delete_memory(self, memory_id: str) -> tuple[MemoryRecord, bytes, list[Edge]]:
        """Remove a memory, its fingerprint and every edge touching it; returns exactly what was removed."""
        record = self.get(memory_id)
        if record is None:
            raise StorageError(f"memory {memory_id} does not exist", memory_id=memory_id)
        k = seq_key(record.seq)
        mid = memory_id.encode()
        blob = bytes(present(self.fingerprint_blob(record.seq), f"the fingerprint of {memory_id}"))
        edges = self.edges(memory_id)
        for edge in edges:
            self.delete_edge(edge)
        for key, name in ((mid, "memories"), (mid, "ids"), (k, "seqs"), (k, "fingerprints")):
            self.txn.delete(key, db=self.db[name])
        op_seq = next_seq(self.txn, self.db["meta"])
        self.txn.put(seq_key(op_seq), b"d" + k + mid, db=self.db["oplog"])
        return record, blob, edges

    def rewrite_spaces(self, memory_id: str, vectors: Mapping[int, Vector]) -> bool:
        """Replace `vectors`' spaces of a live memory's stored fingerprint (same kind and shape as stored) and log
        a "rewrite" entry naming them; False when the memory is not live. Raises, changing nothing, on a space
        the fingerprint lacks or a vector of another shape."""
        record = self.get(memory_id)
        if record is None or not vectors:
            return False
        k = seq_key(record.seq)
        stored = decode_fingerprint(present(self.fingerprint_blob(record.seq), f"the fingerprint of {memory_id}"))
        for space, vector in vectors.items():
            old, new = stored.get(space), np.asarray(vector)
            if not isinstance(old, np.ndarray) or new.shape != old.shape:
                raise DimensionMismatch(
                    f"E{space} of {memory_id} is stored as {getattr(old, 'shape', 'absent')}, the rewrite gives "
                    f"{new.shape}", space=space, expected=list(getattr(old, "shape", ())), got=list(new.shape))
            stored[space] = new.astype(old.dtype)
        self.txn.put(k, encode_fingerprint(stored), db=self.db["fingerprints"])
        op_seq = next_seq(self.txn, self.db["meta"])
        self.txn.put(seq_key(op_seq), encode_rewrite(record.seq, sorted(vectors), memory_id), db=self.db["oplog"])
        return True

    def put_triples(self, memory_id: str, triples: Sequence[NewTriple]) -> None:
        self.txn.put(memory_id.encode(), encode_triples(triples), db=self.db["triples"])

    def delete_triples(self, memory_id: str) -> None:
        self.txn.delete(memory_id.encode(), db=self.db["triples"])

    def restore_memory(self, record: MemoryRecord, blob: bytes) -> MemoryRecord:
        """Put a memory back with its original id, fingerprint bytes and session position. It takes a new seq
        (a seq is a position in the oplog and is never reused), so the indexes see an ordinary put."""
        mid = record.id.encode()
        if self.exists(record.id):
            raise StorageError(f"memory {record.id} already exists", memory_id=record.id)
        seq = next_seq(self.txn, self.db["meta"])
        restored = dataclasses.replace(record, seq=seq)
        k = seq_key(seq)
        self.txn.put(mid, encode_record(restored), db=self.db["memories"])
        self.txn.put(k, blob, db=self.db["fingerprints"])
        self.txn.put(mid, k, db=self.db["ids"])
        self.txn.put(k, mid, db=self.db["seqs"])
        self.txn.put(k, b"p" + k + mid, db=self.db["oplog"])
        return restored

    def recent(self, limit: int, since: float | None, session: str | None) -> list[MemoryRecord]:
        """Newest stored first (walking seqs backwards): O(limit) reads without a session filter."""
        return recent_since(self._newest_first(), limit, since, session)

    def _newest_first(self) -> Iterator[MemoryRecord]:
        cursor = self.txn.cursor(db=self.db["seqs"])
        if not cursor.last():
            return
        for _k, mid in cursor.iterprev():
            yield decode_record(present(self.txn.get(mid, db=self.db["memories"]),
                                        f"the record of {bytes(mid).decode()}"))

    def ids_with_prefix(self, prefix: str, limit: int = 2) -> list[str]:
        cursor = self.txn.cursor(db=self.db["ids"])
        out: list[str] = []
        p = prefix.encode()
        if cursor.set_range(p):
            for k in cursor.iternext(values=False):
                k = bytes(k)
                if not k.startswith(p) or len(out) >= limit:
                    break
                out.append(k.decode())
        return out

    # edges
    def put_edge(self, edge: Edge) -> None:
        s, t, b = edge.source.encode(), edge.target.encode(), _TYPE_BYTE[edge.type]
        self.txn.put(s + t + b, _edge_json(edge), db=self.db["edges_out"])
        self.txn.put(t + s + b, b"", db=self.db["edges_in"])

    def delete_edge(self, edge: Edge) -> None:
        s, t, b = edge.source.encode(), edge.target.encode(), _TYPE_BYTE[edge.type]
        self.txn.delete(s + t + b, db=self.db["edges_out"])
        self.txn.delete(t + s + b, db=self.db["edges_in"])

    def get_edge(self, source: str, target: str, type_: str) -> Edge | None:
        raw = self.txn.get(source.encode() + target.encode() + _TYPE_BYTE[type_], db=self.db["edges_out"])
        return None if raw is None else _edge_from(raw)

    def _prefix(self, name: str, node: str) -> list[tuple[bytes, bytes]]:
        p = node.encode()
        cursor = self.txn.cursor(db=self.db[name])
        out = []
        if cursor.set_range(p):
            for k, v in cursor:
                k = bytes(k)
                if not k.startswith(p):
                    break
                out.append((k, bytes(v)))
        return out

    def edges_out(self, node: str) -> list[Edge]:
        return [_edge_from(v) for _k, v in self._prefix("edges_out", node)]

    def edges_in(self, node: str) -> list[Edge]:
        out = []
        for k, _v in self._prefix("edges_in", node):
            raw = self.txn.get(k[32:64] + k[:32] + k[64:], db=self.db["edges_out"])
            if raw is not None:
                out.append(_edge_from(raw))
        return out

    def edges(self, node: str) -> list[Edge]:
        """Every edge touching `node`, each once (a self-loop is both out and in)."""
        seen: dict[tuple[str, str, str], Edge] = {}
        for e in self.edges_out(node) + self.edges_in(node):
            seen[(e.source, e.target, e.type)] = e
        return list(seen.values())

    def edge_count(self) -> int:
        return self.txn.stat(self.db["edges_out"])["entries"]

    # tombstones and reversals
    def put_tombstone(self, memory_id: str, doc: dict, blob: bytes) -> None:
        head = json.dumps(doc, separators=(",", ":")).encode()
        self.txn.put(memory_id.encode(), _U32.pack(len(head)) + head + blob, db=self.db["tombstones"])

    def get_tombstone(self, memory_id: str) -> tuple[dict, bytes] | None:
        raw = self.txn.get(memory_id.encode(), db=self.db["tombstones"])
        return None if raw is None else _split_tombstone(bytes(raw))

    def delete_tombstone(self, memory_id: str) -> None:
        self.txn.delete(memory_id.encode(), db=self.db["tombstones"])

    def tombstones(self) -> Iterator[tuple[str, dict]]:
        for k, v in self.txn.cursor(db=self.db["tombstones"]):
            (n,) = _U32.unpack_from(v, 0)
            yield bytes(k).decode(), json.loads(bytes(v[4:4 + n]))

    def put_reversal(self, reversal_hash: str, doc: dict) -> None:
        self.txn.put(reversal_hash.encode(), json.dumps(doc, separators=(",", ":")).encode(),
                     db=self.db["reversals"])

    def get_reversal(self, reversal_hash: str) -> dict | None:
        if not reversal_hash or len(reversal_hash) > 128:
            return None
        raw = self.txn.get(reversal_hash.encode(), db=self.db["reversals"])
        return None if raw is None else json.loads(bytes(raw))

    def delete_reversal(self, reversal_hash: str) -> None:
        self.txn.delete(reversal_hash.encode(), db=self.db["reversals"])

    # lineage
    def lineage(self, memory_id: str) -> list[dict]:
        raw = self.txn.get(memory_id.encode(), db=self.db["lineage"])
        return [] if raw is None else json.loads(bytes(raw))

    def append_lineage(self, memory_id: str, event: dict) -> None:
        events = self.lineage(memory_id)
        events.append(event)
        self.txn.put(memory_id.encode(), json.dumps(events, separators=(",", ":")).encode(), db=self.db["lineage"])


def _split_tombstone(raw: bytes) -> tuple[dict, bytes]:
    (n,) = _U32.unpack_from(raw, 0)
    return json.loads(raw[4:4 + n]), raw[4 + n:]
