"""`contextgraph migrate --from lmdb:///… --to postgresql://…`: copy an LMDB store into an empty PostgreSQL
database exactly (ids, seqs, the whole operation log, session positions, fingerprint bytes, edges, tombstones,
reversal records, lineage, triples, the engine's documents), resumable, with the counts verified at the end.

The log is copied in seq windows, each one PostgreSQL transaction that also records how far the copy got (the
`migration` row of `documents`): a migration killed midway resumes after the last window that committed. The
smaller tables follow in one last transaction, written as upserts so that repeating it changes nothing; then the
seq counter is set, the HNSW indexes built (dropped for the copy: one build is far cheaper than a graph
insertion per row) and the copy verified: equal counts table by table, and the destination's consistency walk.
A PgStore refuses to open a database whose migration has not finished (its counter would hand out seqs the
copy still has to write). The source is read in short LMDB read transactions and should not be written while it
is copied; if it is, the verification says so.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg import sql

from contextgraph.errors import StorageError
from contextgraph.storage.codec import decode_fingerprint, decode_record
from contextgraph.storage.lmdb_graph import GraphTxn as LmdbGraphTxn
from contextgraph.storage.lmdb_keys import U64, decode_oplog, read_counter, seq_key
from contextgraph.storage.lmdb_store import LmdbStore
from contextgraph.storage.postgres import vectors
from contextgraph.storage.postgres.schema import HNSW_SPACES, fingerprint_dims, hnsw_index_name, hnsw_index_sql
from contextgraph.storage.postgres.store import MIGRATION_DOC, PgStore

Progress = Callable[[int, int], None]
WINDOW = 512  # oplog seqs per transaction
_DOC = b"doc:"


@dataclass
class MigrationReport:
    source: str
    resumed_from: int  # the seq the copy resumed after (0: a fresh copy)
    counts: dict[str, int] = field(default_factory=dict)  # table → rows, equal on both sides
    seconds: float = 0.0


def _lmdb_counts(src: LmdbStore) -> dict[str, int]:
    with src.env.begin() as txn:
        counts = {name: txn.stat(src._db[name])["entries"]
                  for name in ("memories", "fingerprints", "oplog", "edges_out", "tombstones", "reversals",
                               "lineage", "triples")}
        meta = list(txn.cursor(db=src._db["meta"]).iternext(values=False))
    counts["sessions"] = sum(1 for k in meta if bytes(k).startswith(b"session:"))
    counts["documents"] = sum(1 for k in meta if bytes(k).startswith(_DOC))
    counts["edges"] = counts.pop("edges_out")
    return counts


_PG_COUNTS = {"memories": "SELECT count(*) FROM memories", "fingerprints": "SELECT count(*) FROM fingerprints",
              "oplog": "SELECT count(*) FROM oplog", "edges": "SELECT count(*) FROM edges",
              "tombstones": "SELECT count(*) FROM tombstones", "reversals": "SELECT count(*) FROM reversals",
              "lineage": "SELECT count(DISTINCT id) FROM lineage", "triples": "SELECT count(*) FROM triples",
              "sessions": "SELECT count(*) FROM sessions",
              "documents": f"SELECT count(*) FROM documents WHERE name <> '{MIGRATION_DOC}'"}


def _pg_counts(cur: psycopg.Cursor) -> dict[str, int]:
    out = {}
    for name, query in _PG_COUNTS.items():
        row = cur.execute(query).fetchone()  # type: ignore[arg-type]  # module-constant SQL
        out[name] = int(row[0]) if row else 0
    return out


def _session_key(raw: bytes) -> str:
    """The PostgreSQL session key of an LMDB one (the name, or a SHA-256 digest of a name over 256 bytes)."""
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return "sha256:" + raw.hex()


def _copy_window(src: LmdbStore, cur: psycopg.Cursor, dst: PgStore, start: int, end: int) -> None:
    """The oplog entries and live memories with seqs in (start, end]."""
    db = src._db
    with src.env.begin() as txn:
        entries = []
        cursor = txn.cursor(db=db["oplog"])
        if cursor.set_range(seq_key(start + 1)):
            for k, v in cursor:
                seq = U64.unpack(k)[0]
                if seq > end:
                    break
                entries.append((seq, *decode_oplog(bytes(v))))
        memories = []
        cursor = txn.cursor(db=db["fingerprints"])
        if cursor.set_range(seq_key(start + 1)):
            for k, blob in cursor:
                if U64.unpack(k)[0] > end:
                    break
                mid = txn.get(k, db=db["seqs"])
                raw = None if mid is None else txn.get(mid, db=db["memories"])
                if raw is None:
                    raise StorageError(f"the source store is inconsistent at seq {U64.unpack(k)[0]}: run "
                                       "`contextgraph doctor` on it")
                memories.append((decode_record(raw), bytes(raw), bytes(blob)))
    cur.executemany("INSERT INTO oplog (seq, op, memory_id, memory_seq, spaces) VALUES (%s, %s, %s, %s, %s)",
                    [(seq, op, mid, mseq, list(spaces)) for seq, op, mseq, mid, spaces in entries])
    for record, raw, blob in memories:
        fingerprint = decode_fingerprint(blob)
        cur.execute("INSERT INTO memories (id, seq, session, created_at, record) VALUES (%s, %s, %s, %s, %s)",
                    (record.id, record.seq, record.session, record.created_at, raw))
        cur.execute("INSERT INTO fingerprints (seq, blob) VALUES (%s, %s)", (record.seq, blob))
        vectors.insert_rows(cur, record.seq, fingerprint, dst.space_types(cur))


def _copy_rest(src: LmdbStore, cur: psycopg.Cursor) -> int:
    """Sessions, edges, tombstones, reversals, lineage, triples and documents (upserts); returns the counter."""
    db = src._db
    with src.env.begin() as txn:
        counter = read_counter(txn, db["meta"])
        meta = [(bytes(k), bytes(v)) for k, v in txn.cursor(db=db["meta"])]
        graph = LmdbGraphTxn(txn, db)
        tombstones = [(mid, graph.get_tombstone(mid)) for mid, _ in graph.tombstones()]
        reversals = [(bytes(k).decode(), bytes(v).decode()) for k, v in txn.cursor(db=db["reversals"])]
        lineage = [(bytes(k).decode(), json.loads(bytes(v))) for k, v in txn.cursor(db=db["lineage"])]
        triples = [(bytes(k).decode(), bytes(v)) for k, v in txn.cursor(db=db["triples"])]
        edges = [bytes(v).decode() for v in txn.cursor(db=db["edges_out"]).iternext(keys=False)]
    last = {k[len(b"last:session:"):]: v.decode() for k, v in meta if k.startswith(b"last:session:")}
    sessions = [(_session_key(k[8:]), U64.unpack(v)[0], last.get(k[8:])) for k, v in meta if k.startswith(b"session:")]
    cur.executemany("INSERT INTO sessions (session, count, last_id) VALUES (%s, %s, %s) ON CONFLICT (session) DO "
                    "UPDATE SET count = excluded.count, last_id = excluded.last_id", sessions)
    rows = [(e["source"], e["target"], e["type"], raw) for raw in edges for e in [json.loads(raw)]]
    cur.executemany("INSERT INTO edges (source, target, type, edge) VALUES (%s, %s, %s, %s) ON CONFLICT "
                    "(source, target, type) DO UPDATE SET edge = excluded.edge", rows)
    cur.executemany("INSERT INTO tombstones (id, doc, blob) VALUES (%s, %s, %s) ON CONFLICT (id) DO UPDATE SET "
                    "doc = excluded.doc, blob = excluded.blob",
                    [(mid, json.dumps(t[0], separators=(",", ":")), t[1]) for mid, t in tombstones if t])
    cur.executemany("INSERT INTO reversals (hash, doc) VALUES (%s, %s) ON CONFLICT (hash) DO UPDATE SET "
                    "doc = excluded.doc", reversals)
    cur.execute("DELETE FROM lineage")
    cur.executemany("INSERT INTO lineage (id, pos, event) VALUES (%s, %s, %s)",
                    [(mid, pos, json.dumps(event, separators=(",", ":")))
                     for mid, events in lineage for pos, event in enumerate(events)])
    cur.executemany("INSERT INTO triples (id, blob) VALUES (%s, %s) ON CONFLICT (id) DO UPDATE SET "
                    "blob = excluded.blob", triples)
    cur.executemany("INSERT INTO documents (name, doc) VALUES (%s, %s) ON CONFLICT (name) DO UPDATE SET "
                    "doc = excluded.doc", [(k[len(_DOC):].decode(), v.decode()) for k, v in meta if k.startswith(_DOC)])
    cur.execute("UPDATE store SET next_seq = %s", (counter,))
    return counter


def _state(cur: psycopg.Cursor) -> dict | None:
    row = cur.execute("SELECT doc FROM documents WHERE name = %s", (MIGRATION_DOC,)).fetchone()
    return None if row is None else json.loads(row[0])


def _set_state(cur: psycopg.Cursor, state: dict) -> None:
    cur.execute("INSERT INTO documents (name, doc) VALUES (%s, %s) ON CONFLICT (name) DO UPDATE SET doc = "
                "excluded.doc", (MIGRATION_DOC, json.dumps(state)))


def migrate_lmdb_to_postgres(source_home: Path, url: str, progress: Progress | None = None,
                             window: int = WINDOW) -> MigrationReport:
    """Copy the LMDB store of the data directory `source_home` into the database at `url` (see the module)."""
    started = time.perf_counter()
    src = LmdbStore(source_home / "store", readonly=True)
    try:
        dst = PgStore(url, allow_unfinished_migration=True)
        try:
            return _migrate(src, dst, progress, window, started)
        finally:
            dst.close()
    finally:
        src.close()


def _migrate(src: LmdbStore, dst: PgStore, progress: Progress | None, window: int, started: float
             ) -> MigrationReport:
    state = dst.run_write(_state)
    if state is None:
        if dst.count() or dst.last_seq() or dst.run_write(lambda cur: cur.execute(
                "SELECT 1 FROM oplog LIMIT 1").fetchone()):
            raise StorageError(f"{dst.where} already holds a ContextGraph store; migrate into an empty database")
        state = {"source_store_id": src.store_id, "copied_seq": 0, "done": False}
        dst.run_write(lambda cur: _set_state(cur, state))
    elif state["source_store_id"] != src.store_id:
        raise StorageError(f"{dst.where} already holds a ContextGraph store (copied from store "
                           f"{state['source_store_id']}, not this one); migrate into an empty database")
    report = MigrationReport(source=str(src.path), resumed_from=int(state["copied_seq"]))
    first = next(iter(src.scan()), None)
    if first is not None:
        dst.ensure_spaces(fingerprint_dims(first[1]))
    # Bulk loading into an HNSW index costs a graph insertion per row; building each index once at the end is
    # several times faster. Until then (an interrupted copy too) the database refuses to serve, so no search
    # meets a missing index.
    dst.run_write(lambda cur: [cur.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(hnsw_index_name(space)))
                               for space in dst.space_types()])
    last = src.last_seq()
    position = int(state["copied_seq"])
    if progress:
        progress(position, last)
    while position < last:
        end = min(position + window, last)

        def copy(cur: psycopg.Cursor, start: int = position, stop: int = end) -> None:
            _copy_window(src, cur, dst, start, stop)
            _set_state(cur, {**state, "copied_seq": stop})

        dst.run_write(copy)
        position = end
        if progress:
            progress(position, last)

    def finish(cur: psycopg.Cursor) -> None:
        _copy_rest(src, cur)
        cur.execute("SET LOCAL maintenance_work_mem = '512MB'")  # an HNSW build in memory is far faster
        for space, (_dim, sql_type) in sorted(dst.space_types().items()):
            if space in HNSW_SPACES:
                cur.execute(hnsw_index_sql(space, sql_type))
        _set_state(cur, {**state, "copied_seq": last, "done": True})

    dst.run_write(finish)
    want, got = _lmdb_counts(src), dst.run_write(_pg_counts)
    if want != got or src.last_seq() != dst.last_seq():
        differ = {k: (want.get(k), got.get(k)) for k in want if want.get(k) != got.get(k)}
        raise StorageError(f"the copy does not match its source (source, copy): {differ}; was the source written "
                           "during the migration? Run it again into an empty database")
    problems = dst.check()
    if problems:
        raise StorageError(f"the copy is inconsistent: {problems[:5]}")
    report.counts, report.seconds = got, time.perf_counter() - started
    return report
