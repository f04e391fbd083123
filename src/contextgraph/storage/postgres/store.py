"""base.MemoryStore on PostgreSQL with pgvector (docs/storage.md): the source of truth for several servers on several
hosts. The schema is in schema.py; what a memory's searchable rows are, in vectors.py; the graph transaction, in
graph.py; the search over them (candidate generation in SQL), in search.py.

Every write is one transaction under the store's advisory write lock (schema.WRITE_LOCK), committed with
PostgreSQL's synchronous commit, so it is durable when the call returns and a memory is either wholly present
(record, fingerprint of all 13 spaces, vector rows, postings, put entry) or wholly absent. Reads are single
statements, or one REPEATABLE READ transaction under `graph_read`. Thread-safe: each call borrows a pooled
connection.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import psycopg

from contextgraph.errors import InvalidFingerprint, StorageError
from contextgraph.fingerprint import SPACES, Fingerprint, Vector
from contextgraph.log import get_logger
from contextgraph.storage.base import Edge, MemoryRecord, NewTriple, OplogEntry
from contextgraph.storage.codec import (
    decode_columns,
    decode_fingerprint,
    decode_record,
    decode_triples,
    encode_fingerprint,
    encode_record,
    encode_triples,
)
from contextgraph.storage.fingerprint_columns import FingerprintColumns
from contextgraph.storage.postgres import schema
from contextgraph.storage.postgres.check import consistency_problems
from contextgraph.storage.postgres.connect import POOL_MAX, connect, open_pool, redact
from contextgraph.storage.postgres.graph import PgGraphTxn, next_seq

_log = get_logger("storage")
_ALL_SPACES = frozenset(s.id for s in SPACES)
_SCAN_CHUNK = 256
T = TypeVar("T")


def session_key(session: str) -> str:
    # a btree entry holds at most ~2.7 KB and a client may name its session anything (as LMDB's key limit)
    return session if len(session.encode()) <= 256 else "sha256:" + hashlib.sha256(session.encode()).hexdigest()


MIGRATION_DOC = "migration"  # the state of a `contextgraph migrate` into this database (migrate.py)


class PgStore:
    def __init__(self, url: str, pool_size: int = POOL_MAX, allow_unfinished_migration: bool = False) -> None:
        self.url = url
        self.where = redact(url)
        with connect(url) as conn:
            try:
                schema.migrate(conn, uuid.uuid4().hex)
            except psycopg.Error as exc:
                raise StorageError(f"cannot prepare the ContextGraph schema at {self.where}: {exc}") from exc
        self._pool = open_pool(url, pool_size)
        self._types: dict[int, tuple[int, str]] = {}
        row = self._read(lambda cur: cur.execute("SELECT store_id FROM store").fetchone())
        self.store_id = str(row[0]) if row else ""
        migration = self.get_document(MIGRATION_DOC)
        if migration is not None and not migration.get("done") and not allow_unfinished_migration:
            self.close()
            raise StorageError(f"a migration into {self.where} has not finished; run the same `contextgraph "
                               "migrate` again to complete it before serving this database")

    # --- lifecycle ---------------------------------------------------------------------------------------------
    def close(self) -> None:
        self._pool.close()

    def __enter__(self) -> PgStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- transactions ------------------------------------------------------------------------------------------
    def _write(self, fn: Callable[[psycopg.Cursor], T]) -> T:
        """Run `fn` in one transaction holding the write lock; commit (durable) or roll everything back."""
        try:
            with self._pool.connection() as conn, conn.transaction(), conn.cursor(binary=True) as cur:
                cur.execute("SELECT pg_advisory_xact_lock(%s)", (schema.WRITE_LOCK,))
                return fn(cur)
        except psycopg.Error as exc:
            raise StorageError(f"store write failed ({self.where}): {exc}") from exc

    def run_write(self, fn: Callable[[psycopg.Cursor], T]) -> T:
        """One transaction under the write lock on a raw cursor (the migration's batches)."""
        return self._write(fn)

    def _read(self, fn: Callable[[psycopg.Cursor], T], snapshot: bool = False) -> T:
        """`fn` on a pooled connection. A read is safe to repeat, so a connection the server dropped (it restarted
        since the pool opened it) costs one retry on a fresh one, not an error: the pool discards a connection
        that comes back broken. A write is never repeated: whether it committed is unknown."""
        try:
            return self._read_once(fn, snapshot)
        except psycopg.OperationalError as exc:
            _log.warning("a pooled connection was lost; reading again on a fresh one", error=str(exc))
        except psycopg.Error as exc:
            raise StorageError(f"store read failed ({self.where}): {exc}") from exc
        try:
            return self._read_once(fn, snapshot)
        except psycopg.Error as exc:
            raise StorageError(f"store read failed ({self.where}): {exc}") from exc

    def _read_once(self, fn: Callable[[psycopg.Cursor], T], snapshot: bool) -> T:
        with self._pool.connection() as conn:
            # binary results: a fingerprint blob arrives as its bytes, not as hex text twice its size
            if not snapshot:
                with conn.cursor(binary=True) as cur:
                    return fn(cur)
            with conn.transaction(), conn.cursor(binary=True) as cur:
                cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                return fn(cur)

    def connection(self):
        """A pooled, configured connection (context manager), for the search in search.py."""
        return self._pool.connection()

    def space_types(self, cur: psycopg.Cursor | None = None) -> dict[int, tuple[int, str]]:
        """space → (dimension, SQL type) of the vector tables, cached (they never change once made). Inside a
        transaction, pass its cursor: borrowing a second pooled connection there could wait on the pool."""
        if len(self._types) < len(schema.VECTOR_SPACES):
            self._types = (schema.known_spaces(cur.connection) if cur is not None
                           else self._read(lambda c: schema.known_spaces(c.connection)))
        return self._types

    def _ensure_spaces(self, fingerprint: Fingerprint) -> None:
        self.ensure_spaces(schema.fingerprint_dims(fingerprint))

    def ensure_spaces(self, dims: dict[int, int]) -> None:
        """Make the vector tables of a fingerprint with these dimensions, or check them against those made."""
        types = self.space_types()
        if len(types) < len(schema.VECTOR_SPACES):
            try:
                with self._pool.connection() as conn:
                    self._types = schema.ensure_space_tables(conn, dims)
            except psycopg.Error as exc:
                raise StorageError(f"cannot create the vector tables ({self.where}): {exc}") from exc
        else:
            schema.check_dims(types, dims)

    # --- writes ------------------------------------------------------------------------------------------------
    def put(self, record: MemoryRecord, fingerprint: Fingerprint, edges: Sequence[Edge] = (),
            temporal: Callable[[str, str], Edge] | None = None, triples: Sequence[NewTriple] = ()) -> MemoryRecord:
        missing = _ALL_SPACES - fingerprint.keys()
        if missing:
            raise InvalidFingerprint(
                f"fingerprint lacks spaces {sorted(missing)}: all 13 are stored or none", missing=sorted(missing))
        blob = encode_fingerprint(fingerprint)  # outside the transaction: keep the write lock short
        triples_blob = encode_triples(triples) if triples else None
        self._ensure_spaces(fingerprint)
        key = session_key(record.session)

        def txn_fn(cur: psycopg.Cursor) -> MemoryRecord:
            g = PgGraphTxn(cur, self.space_types)
            if g.exists(record.id):
                raise StorageError(f"memory {record.id} already exists", memory_id=record.id)
            seq = next_seq(cur)
            row = cur.execute("SELECT count, last_id FROM sessions WHERE session = %s", (key,)).fetchone()
            position, previous = (int(row[0]), row[1]) if row else (0, None)
            # what the writes depend on, read first in one round trip: which edges' other ends are live
            linked = previous if temporal is not None and previous is not None else None
            live = g.existing({edge.other(record.id) for edge in edges} | ({linked} if linked else set()))
            stored = dataclasses.replace(record, seq=seq, session_position=position)
            # then ~30 writes sent without waiting for each answer (psycopg's pipeline mode): a round trip each,
            # a context switch to the server and back, was most of a store's commit on two loaded cores. An
            # error still surfaces inside the transaction, which then rolls back whole.
            with cur.connection.pipeline():
                cur.execute("INSERT INTO sessions (session, count, last_id) VALUES (%s, 1, %s) ON CONFLICT "
                            "(session) DO UPDATE SET count = sessions.count + 1, last_id = excluded.last_id",
                            (key, record.id))
                g.insert_memory(stored, blob, fingerprint)
                if temporal is not None and linked in live:
                    g.put_edge(temporal(linked, record.id))
                for edge in edges:
                    if edge.other(record.id) in live:
                        g.put_edge(edge)
                g.append_lineage(record.id, {"event": "created", "at": record.created_at, "seq": seq})
                if triples_blob is not None:
                    cur.execute("INSERT INTO triples (id, blob) VALUES (%s, %s)", (record.id, triples_blob))
            return stored

        return self._write(txn_fn)

    def delete(self, memory_id: str) -> bool:
        def txn_fn(cur: psycopg.Cursor) -> bool:
            g = PgGraphTxn(cur, self.space_types)
            if not g.exists(memory_id):
                return False
            g.delete_memory(memory_id)
            return True

        return self._write(txn_fn)

    def update(self, record: MemoryRecord) -> MemoryRecord:
        return self._write(lambda cur: PgGraphTxn(cur, self.space_types).update(record))

    def rewrite_spaces(self, updates: Mapping[str, Mapping[int, Vector]]) -> list[str]:
        """Replace some spaces of stored fingerprints and their vector rows, one "rewrite" oplog entry per memory,
        all in one transaction (a bad vector anywhere changes nothing); ids not live are skipped."""
        def txn_fn(cur: psycopg.Cursor) -> list[str]:
            g = PgGraphTxn(cur, self.space_types)
            return [mid for mid, new in updates.items() if g.rewrite_spaces(mid, new)]

        return self._write(txn_fn) if updates else []

    def touch(self, seqs: Sequence[int], now: float | None = None) -> None:
        if not seqs:
            return
        when = time.time() if now is None else now
        times = Counter(int(s) for s in seqs)  # a seq named twice is two accesses, as in LMDB

        def txn_fn(cur: psycopg.Cursor) -> None:
            rows = cur.execute("SELECT id, record FROM memories WHERE seq = ANY(%s) ORDER BY seq",
                               (list(times),)).fetchall()  # absent: deleted since the search found it
            updates = []
            for mid, raw in rows:
                old = decode_record(raw)
                new = dataclasses.replace(old, access_count=old.access_count + times[old.seq], last_accessed=when)
                updates.append((encode_record(new), mid))
            if updates:
                cur.executemany("UPDATE memories SET record = %s WHERE id = %s", updates)

        self._write(txn_fn)

    def put_document(self, name: str, doc: dict) -> None:
        raw = json.dumps(doc, separators=(",", ":"))
        self._write(lambda cur: cur.execute("INSERT INTO documents (name, doc) VALUES (%s, %s) ON CONFLICT (name) "
                                            "DO UPDATE SET doc = excluded.doc", (name, raw)))

    def graph_write(self, fn: Callable[[PgGraphTxn], T]) -> T:
        """Run `fn` with a GraphTxn in ONE transaction under the write lock: a curation operation's changes commit
        together or not at all, and no other server writes between its reads and its writes."""
        return self._write(lambda cur: fn(PgGraphTxn(cur, self.space_types)))

    def graph_read(self, fn: Callable[[PgGraphTxn], T]) -> T:
        return self._read(lambda cur: fn(PgGraphTxn(cur, self.space_types)), snapshot=True)

    # --- reads -------------------------------------------------------------------------------------------------
    def get(self, memory_id: str) -> MemoryRecord | None:
        row = self._read(lambda cur: cur.execute("SELECT record FROM memories WHERE id = %s",
                                                 (memory_id,)).fetchone())
        return None if row is None else decode_record(row[0])

    def get_by_seq(self, seqs: Sequence[int]) -> list[MemoryRecord | None]:
        if not seqs:
            return []
        rows = self._read(lambda cur: cur.execute("SELECT seq, record FROM memories WHERE seq = ANY(%s)",
                                                  ([int(s) for s in seqs],)).fetchall())
        found = {int(seq): raw for seq, raw in rows}
        return [decode_record(found[s]) if s in found else None for s in seqs]

    def fingerprints(self, seqs: Sequence[int], spaces: Sequence[int] | None = None) -> list[Fingerprint | None]:
        wanted = None if spaces is None else frozenset(spaces)
        return [None if blob is None else decode_fingerprint(blob, wanted, copy=wanted is not None)
                for blob in self._fingerprint_blobs(seqs)]

    def fingerprint_columns(self, seqs: Sequence[int], spaces: Sequence[int]) -> FingerprintColumns:
        return decode_columns(seqs, self._fingerprint_blobs(seqs), spaces)

    def _fingerprint_blobs(self, seqs: Sequence[int]) -> list[bytes | None]:
        """The stored fingerprint bytes of `seqs`, in order (None: no such memory), in one query."""
        if not seqs:
            return []
        rows = self._read(lambda cur: cur.execute("SELECT seq, blob FROM fingerprints WHERE seq = ANY(%s)",
                                                  ([int(s) for s in seqs],)).fetchall())
        found = {int(seq): bytes(blob) for seq, blob in rows}
        return [found.get(s) for s in seqs]

    def _scalar(self, query: str, params: Sequence[Any] = ()) -> Any:
        row = self._read(lambda cur: cur.execute(query, params).fetchone())  # type: ignore[arg-type]
        return None if row is None else row[0]

    def count(self) -> int:
        return int(self._scalar("SELECT count(*) FROM memories"))

    def session_count(self, session: str) -> int:
        value = self._scalar("SELECT count FROM sessions WHERE session = %s", (session_key(session),))
        return 0 if value is None else int(value)

    def last_seq(self) -> int:
        return int(self._scalar("SELECT next_seq - 1 FROM store"))

    def oplog_since(self, seq: int, limit: int | None = None) -> list[OplogEntry]:
        rows = self._read(lambda cur: cur.execute(
            "SELECT seq, op, memory_id, memory_seq, spaces FROM oplog WHERE seq > %s ORDER BY seq LIMIT %s",
            (seq, limit)).fetchall())
        # a rewrite names its spaces; the other entries keep the four fields every version of OplogEntry has
        return [OplogEntry(int(s), str(op), str(mid), int(ms), *((tuple(int(x) for x in sp),) if sp else ()))
                for s, op, mid, ms, sp in rows]

    def scan(self, spaces: Sequence[int] | None = None) -> Iterator[tuple[MemoryRecord, Fingerprint]]:
        """Every live memory in seq order, in chunks of one short read each (no snapshot pinned for a long scan)."""
        wanted = None if spaces is None else frozenset(spaces)
        after = 0
        while True:
            rows = self._read(lambda cur, after=after: cur.execute(
                "SELECT m.record, f.blob FROM memories m JOIN fingerprints f ON f.seq = m.seq WHERE m.seq > %s "
                "ORDER BY m.seq LIMIT %s", (after, _SCAN_CHUNK)).fetchall())
            if not rows:
                return
            chunk = [(decode_record(raw), decode_fingerprint(bytes(blob), wanted, copy=wanted is not None))
                     for raw, blob in rows]
            after = chunk[-1][0].seq
            yield from chunk

    def live_triples(self) -> list[tuple[str, str, str, str, Any, Any]]:
        rows = self._read(lambda cur: cur.execute(
            "SELECT t.id, t.blob FROM triples t JOIN memories m ON m.id = t.id ORDER BY t.id").fetchall())
        return [(str(mid), *triple) for mid, blob in rows for triple in decode_triples(bytes(blob))]

    def triples_of(self, memory_id: str) -> list[tuple[str, str, str, Any, Any]]:
        blob = self._scalar("SELECT blob FROM triples WHERE id = %s", (memory_id,))
        return [] if blob is None else decode_triples(bytes(blob))

    def triple_count(self) -> int:
        return int(self._scalar("SELECT count(*) FROM triples"))

    def get_document(self, name: str) -> dict | None:
        raw = self._scalar("SELECT doc FROM documents WHERE name = %s", (name,))
        return None if raw is None else json.loads(raw)

    def check(self) -> list[str]:
        """Problems found by a full consistency walk (empty when sound): for tests and `contextgraph doctor`."""
        return self._read(consistency_problems, snapshot=True)
