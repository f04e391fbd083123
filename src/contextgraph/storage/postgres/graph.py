"""The graph side of the PostgreSQL store inside one transaction (storage.base.GraphTxn): records, stored
fingerprint bytes, typed edges, tombstones, reversal records and lineage. Under `graph_write` the transaction
holds the store's write lock, so what it reads no other writer changes before it commits; every value returned
is a copy. Orders match the LMDB backend's (edges by the other end's id and type, tombstones by id)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator, Mapping, Sequence

import numpy as np
import psycopg
from psycopg import sql

from contextgraph.errors import DimensionMismatch, StorageError
from contextgraph.fingerprint import Vector, dense
from contextgraph.storage.base import EDGE_TYPES, Edge, MemoryRecord, NewTriple, recent_since
from contextgraph.storage.codec import (
    decode_fingerprint,
    decode_record,
    encode_fingerprint,
    encode_record,
    encode_triples,
)
from contextgraph.storage.postgres import vectors
from contextgraph.storage.postgres.schema import VECTOR_SPACES, ensure_space_tables, fingerprint_dims, space_table

_RECENT_CHUNK = 256


def _json(doc: object) -> str:
    return json.dumps(doc, separators=(",", ":"))


def edge_json(edge: Edge) -> str:
    return _json(dataclasses.asdict(edge))


def _edge(raw: str) -> Edge:
    return Edge(**json.loads(raw))


def _by_other(edges: list[Edge], end: Callable[[Edge], str]) -> list[Edge]:
    return sorted(edges, key=lambda e: (end(e), EDGE_TYPES.index(e.type)))


def next_seq(cur: psycopg.Cursor) -> int:
    """Take the next seq (the caller holds the write lock, so seqs are handed out in commit order)."""
    row = cur.execute("UPDATE store SET next_seq = next_seq + 1 RETURNING next_seq - 1").fetchone()
    if row is None:
        raise StorageError("the store is inconsistent: its seq counter is missing (contextgraph doctor checks it)")
    return int(row[0])


class PgGraphTxn:
    def __init__(self, cur: psycopg.Cursor, types: Callable[[psycopg.Cursor], dict[int, tuple[int, str]]]) -> None:
        self.cur = cur
        self._types = types  # (this transaction's cursor) → space → (dimension, SQL type) of the vector tables

    def _one(self, query: str, params: Sequence[object]) -> tuple | None:
        return self.cur.execute(query, params).fetchone()  # type: ignore[arg-type]  # module-constant SQL

    # memories
    def exists(self, memory_id: str) -> bool:
        return self._one("SELECT 1 FROM memories WHERE id = %s", (memory_id,)) is not None

    def existing(self, memory_ids: set[str]) -> set[str]:
        """Which of these ids are live memories, in one round trip."""
        if not memory_ids:
            return set()
        return {row[0] for row in self.cur.execute("SELECT id FROM memories WHERE id = ANY(%s)",
                                                    (list(memory_ids),)).fetchall()}

    def get(self, memory_id: str) -> MemoryRecord | None:
        row = self._one("SELECT record FROM memories WHERE id = %s", (memory_id,))
        return None if row is None else decode_record(row[0])

    def fingerprint_blob(self, seq: int) -> bytes | None:
        row = self._one("SELECT blob FROM fingerprints WHERE seq = %s", (seq,))
        return None if row is None else bytes(row[0])

    def update(self, record: MemoryRecord) -> MemoryRecord:
        old = self.get(record.id)
        if old is None:
            raise StorageError(f"memory {record.id} does not exist", memory_id=record.id)
        # seq and session_position belong to the store: an update cannot move a memory in the log
        new = dataclasses.replace(record, seq=old.seq, session_position=old.session_position)
        self.cur.execute("UPDATE memories SET record = %s WHERE id = %s", (encode_record(new), record.id))
        return new

    def insert_memory(self, record: MemoryRecord, blob: bytes, fingerprint: dict) -> None:
        """The rows of one live memory at record.seq: record, fingerprint, vectors, postings, its put entry."""
        self.cur.execute("INSERT INTO memories (id, seq, session, created_at, record) VALUES (%s, %s, %s, %s, %s)",
                         (record.id, record.seq, record.session, record.created_at, encode_record(record)))
        self.cur.execute("INSERT INTO fingerprints (seq, blob) VALUES (%s, %s)", (record.seq, blob))
        types = self._types(self.cur)
        if any(space not in types for space in VECTOR_SPACES):
            # the first memory of an empty store written by a graph transaction (a restore, a bulk import): make
            # the vector tables inside it (a savepoint, under the write lock it holds), committed with it or not
            types = ensure_space_tables(self.cur.connection, fingerprint_dims(fingerprint))
        vectors.insert_rows(self.cur, record.seq, fingerprint, types)
        self.cur.execute("INSERT INTO oplog (seq, op, memory_id, memory_seq) VALUES (%s, 'put', %s, %s)",
                         (record.seq, record.id, record.seq))

    def delete_memory(self, memory_id: str) -> tuple[MemoryRecord, bytes, list[Edge]]:
        """Remove a memory, its fingerprint, searchable rows and every edge touching it; returns what was removed."""
        record = self.get(memory_id)
        if record is None:
            raise StorageError(f"memory {memory_id} does not exist", memory_id=memory_id)
        blob = self.fingerprint_blob(record.seq)
        if blob is None:
            raise StorageError(f"the store is inconsistent: the fingerprint of {memory_id} is missing "
                               "(contextgraph doctor checks it)")
        edges = self.edges(memory_id)
        self.cur.execute("DELETE FROM edges WHERE source = %s OR target = %s", (memory_id, memory_id))
        self.cur.execute("DELETE FROM memories WHERE id = %s", (memory_id,))
        self.cur.execute("DELETE FROM fingerprints WHERE seq = %s", (record.seq,))
        vectors.delete_rows(self.cur, record.seq, decode_fingerprint(blob))
        self.cur.execute("INSERT INTO oplog (seq, op, memory_id, memory_seq) VALUES (%s, 'delete', %s, %s)",
                         (next_seq(self.cur), memory_id, record.seq))
        return record, blob, edges

    def restore_memory(self, record: MemoryRecord, blob: bytes) -> MemoryRecord:
        """Put a memory back with its id, fingerprint bytes and session position under a new seq (never reused)."""
        if self.exists(record.id):
            raise StorageError(f"memory {record.id} already exists", memory_id=record.id)
        restored = dataclasses.replace(record, seq=next_seq(self.cur))
        self.insert_memory(restored, blob, decode_fingerprint(blob))
        return restored

    def rewrite_spaces(self, memory_id: str, new_vectors: Mapping[int, Vector]) -> bool:
        """Replace `new_vectors`' spaces of a live memory's stored fingerprint (same kind and shape as stored) and
        their searchable rows, and log a "rewrite" entry naming them; False when the memory is not live. Raises,
        changing nothing the caller's transaction keeps, on a space stored otherwise or a vector of another shape."""
        record = self.get(memory_id)
        if record is None or not new_vectors:
            return False
        blob = self.fingerprint_blob(record.seq)
        if blob is None:
            raise StorageError(f"the store is inconsistent: the fingerprint of {memory_id} is missing")
        stored = decode_fingerprint(blob)
        for space, vector in new_vectors.items():
            old, new = stored.get(space), np.asarray(vector)
            if not isinstance(old, np.ndarray) or new.shape != old.shape or space not in VECTOR_SPACES + (12,):
                raise DimensionMismatch(
                    f"E{space} of {memory_id} is stored as {getattr(old, 'shape', 'absent')}, the rewrite gives "
                    f"{new.shape}", space=space, expected=list(getattr(old, "shape", ())), got=list(new.shape))
            stored[space] = new.astype(old.dtype)
        self.cur.execute("UPDATE fingerprints SET blob = %s WHERE seq = %s", (encode_fingerprint(stored), record.seq))
        types = self._types(self.cur)
        for space in sorted(new_vectors):
            if space in VECTOR_SPACES:
                self.cur.execute(sql.SQL("UPDATE {} SET v = %s WHERE seq = %s").format(space_table(space)),
                                 (vectors.as_param(space, dense(stored[space]), types[space][1]), record.seq))
        self.cur.execute("INSERT INTO oplog (seq, op, memory_id, memory_seq, spaces) VALUES (%s, 'rewrite', %s, %s, "
                         "%s)", (next_seq(self.cur), memory_id, record.seq, sorted(new_vectors)))
        return True

    def put_triples(self, memory_id: str, triples: Sequence[NewTriple]) -> None:
        self.cur.execute("INSERT INTO triples (id, blob) VALUES (%s, %s) ON CONFLICT (id) DO UPDATE "
                         "SET blob = excluded.blob", (memory_id, encode_triples(triples)))

    def delete_triples(self, memory_id: str) -> None:
        self.cur.execute("DELETE FROM triples WHERE id = %s", (memory_id,))

    def recent(self, limit: int, since: float | None, session: str | None) -> list[MemoryRecord]:
        """Newest stored first (the LMDB backend's selection, storage.base.recent_since), read in chunks."""
        return recent_since(self._newest_first(), limit, since, session)

    def _newest_first(self) -> Iterator[MemoryRecord]:
        below = None
        while True:
            rows = self.cur.execute(
                "SELECT record FROM memories WHERE (%s::bigint IS NULL OR seq < %s) ORDER BY seq DESC LIMIT %s",
                (below, below, _RECENT_CHUNK)).fetchall()
            if not rows:
                return
            for (raw,) in rows:
                record = decode_record(raw)
                below = record.seq
                yield record

    def ids_with_prefix(self, prefix: str, limit: int = 2) -> list[str]:
        rows = self.cur.execute("SELECT id FROM memories WHERE id >= %s ORDER BY id LIMIT %s",
                                (prefix, limit)).fetchall()
        out = []
        for (mid,) in rows:
            if not mid.startswith(prefix):
                break
            out.append(mid)
        return out

    # edges
    def put_edge(self, edge: Edge) -> None:
        self.cur.execute("INSERT INTO edges (source, target, type, edge) VALUES (%s, %s, %s, %s) "
                         "ON CONFLICT (source, target, type) DO UPDATE SET edge = excluded.edge",
                         (edge.source, edge.target, edge.type, edge_json(edge)))

    def delete_edge(self, edge: Edge) -> None:
        self.cur.execute("DELETE FROM edges WHERE source = %s AND target = %s AND type = %s",
                         (edge.source, edge.target, edge.type))

    def get_edge(self, source: str, target: str, type_: str) -> Edge | None:
        row = self._one("SELECT edge FROM edges WHERE source = %s AND target = %s AND type = %s",
                        (source, target, type_))
        return None if row is None else _edge(row[0])

    def edges_out(self, node: str) -> list[Edge]:
        rows = self.cur.execute("SELECT edge FROM edges WHERE source = %s", (node,)).fetchall()
        return _by_other([_edge(r[0]) for r in rows], lambda e: e.target)

    def edges_in(self, node: str) -> list[Edge]:
        rows = self.cur.execute("SELECT edge FROM edges WHERE target = %s", (node,)).fetchall()
        return _by_other([_edge(r[0]) for r in rows], lambda e: e.source)

    def edges(self, node: str) -> list[Edge]:
        """Every edge touching `node`, each once (a self-loop is both out and in)."""
        seen: dict[tuple[str, str, str], Edge] = {}
        for e in self.edges_out(node) + self.edges_in(node):
            seen[(e.source, e.target, e.type)] = e
        return list(seen.values())

    def edge_count(self) -> int:
        row = self._one("SELECT count(*) FROM edges", ())
        return int(row[0]) if row else 0

    # tombstones and reversals
    def put_tombstone(self, memory_id: str, doc: dict, blob: bytes) -> None:
        self.cur.execute("INSERT INTO tombstones (id, doc, blob) VALUES (%s, %s, %s) ON CONFLICT (id) DO UPDATE "
                         "SET doc = excluded.doc, blob = excluded.blob", (memory_id, _json(doc), blob))

    def get_tombstone(self, memory_id: str) -> tuple[dict, bytes] | None:
        row = self._one("SELECT doc, blob FROM tombstones WHERE id = %s", (memory_id,))
        return None if row is None else (json.loads(row[0]), bytes(row[1]))

    def delete_tombstone(self, memory_id: str) -> None:
        self.cur.execute("DELETE FROM tombstones WHERE id = %s", (memory_id,))

    def tombstones(self) -> Iterator[tuple[str, dict]]:
        rows = self.cur.execute("SELECT id, doc FROM tombstones ORDER BY id").fetchall()
        for mid, doc in rows:
            yield mid, json.loads(doc)

    def put_reversal(self, reversal_hash: str, doc: dict) -> None:
        self.cur.execute("INSERT INTO reversals (hash, doc) VALUES (%s, %s) ON CONFLICT (hash) DO UPDATE "
                         "SET doc = excluded.doc", (reversal_hash, _json(doc)))

    def get_reversal(self, reversal_hash: str) -> dict | None:
        if not reversal_hash or len(reversal_hash) > 128:
            return None
        row = self._one("SELECT doc FROM reversals WHERE hash = %s", (reversal_hash,))
        return None if row is None else json.loads(row[0])

    def delete_reversal(self, reversal_hash: str) -> None:
        self.cur.execute("DELETE FROM reversals WHERE hash = %s", (reversal_hash,))

    # lineage
    def lineage(self, memory_id: str) -> list[dict]:
        rows = self.cur.execute("SELECT event FROM lineage WHERE id = %s ORDER BY pos", (memory_id,)).fetchall()
        return [json.loads(r[0]) for r in rows]

    def append_lineage(self, memory_id: str, event: dict) -> None:
        self.cur.execute("INSERT INTO lineage (id, pos, event) SELECT %s, coalesce(max(pos) + 1, 0), %s "
                         "FROM lineage WHERE id = %s", (memory_id, _json(event), memory_id))
