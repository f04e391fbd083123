"""The PostgreSQL backend's schema, in numbered migrations recorded in a version table, and the per-space vector
tables, made when the first fingerprint shows their dimensions (docs/spaces.md: dimensions follow the configured model,
so they cannot be fixed in a migration).

Everything lives in the schema `contextgraph` (one store per database; `DROP SCHEMA contextgraph CASCADE` removes
it). Tables:

    store            one row: store id, next_seq (the one counter puts and deletes share, as in LMDB)
    sessions         session key (the name, or a hash of a long one) → memories stored (the next
                     session_position) and the id of its latest memory
    memories         id, seq, session, created_at, the record (codec bytes: exact round trip, unknown keys kept)
    fingerprints     seq → the codec blob of all 13 spaces (the source of truth; E12's token vectors live only here)
    vec_eNN          seq → the space's vector, one table per vector space: vector(d) (halfvec(d) above
                     pgvector's 2000-dimension HNSW limit) for dense spaces, bit(d) for E9. HNSW-indexed for the
                     spaces searched by their own graph (HNSW_SPACES); the derived ones (E2-E4 ordered by their
                     timeline in the process, E8/E10 E1's candidates re-scored) need no graph, as with LMDB. Only
                     immutable vectors live here: mutable fields (importance, access counts, tombstone state)
                     stay in `memories`, so touching a memory never rewrites an HNSW-indexed row.
    sparse_postings  (space, term, seq) → term frequency and document length: E6/E13 are BM25-scored (D21) with
                     live df and avgdl, which a sparsevec HNSW index (inner product of stored weights) cannot do
    sparse_stats     space → live documents and their total length (avgdl without a scan)
    oplog            seq → put | delete of a memory (what caches in other processes catch up from)
    edges            (source, target, type) → the edge (JSON), with an index by target
    tombstones, reversals, lineage (append-only rows), triples, documents (the engine state)
    schema_version   the migrations applied

Writes take one transaction-scoped advisory lock (WRITE_LOCK), so writers across every server on the database
run one at a time, exactly as LMDB's single writer: seqs are handed out in commit order, and a curation
operation's reads and writes see no other writer in between. Reads never take it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import LiteralString, cast

import psycopg
from psycopg import sql

from contextgraph.errors import DimensionMismatch, StorageError
from contextgraph.fingerprint import Fingerprint, dense

SCHEMA = "contextgraph"
WRITE_LOCK = 0x0C6A_F00D  # pg_advisory_xact_lock key of the store's single writer
MIGRATION_LOCK = 0x0C6A_F00E
HNSW_DENSE_LIMIT = 2000  # pgvector's HNSW limit for vector; halfvec allows 4000
DENSE_OPS = {2: "vector_ip_ops"}  # E2's measure is the dot product; every other dense space is cosine
DENSE_SPACES = (1, 2, 3, 4, 5, 7, 8, 10, 11)
BINARY_SPACES = (9,)
SPARSE_SPACES = (6, 13)
VECTOR_SPACES = DENSE_SPACES + BINARY_SPACES
HNSW_SPACES = (1, 5, 7, 9, 11)  # as LMDB's graphs (storage/index_files.py), and E9's Hamming
DERIVED_SPACES = tuple(s for s in VECTOR_SPACES if s not in HNSW_SPACES)  # E2-E4, E8, E10: no graph to keep
HNSW_PARAMS = {"m": 16, "ef_construction": 200}  # the LMDB backend's hnswlib settings: equal recall
EF_SEARCH = 64

MIGRATIONS: tuple[tuple[int, str], ...] = (
    (1, """
CREATE TABLE store (one boolean PRIMARY KEY DEFAULT true CHECK (one), store_id text NOT NULL,
                    next_seq bigint NOT NULL);
CREATE TABLE sessions (session text PRIMARY KEY, count bigint NOT NULL, last_id text);
CREATE TABLE memories (id text COLLATE "C" PRIMARY KEY, seq bigint NOT NULL UNIQUE, session text NOT NULL,
                       created_at double precision NOT NULL, record bytea NOT NULL);
CREATE TABLE fingerprints (seq bigint PRIMARY KEY, blob bytea NOT NULL);
-- float arrays do not compress: store the blobs out of line as they are, no pglz pass on every read and write
ALTER TABLE fingerprints ALTER COLUMN blob SET STORAGE EXTERNAL;
CREATE TABLE oplog (seq bigint PRIMARY KEY, op text NOT NULL CHECK (op IN ('put', 'delete', 'rewrite')),
                    memory_id text NOT NULL, memory_seq bigint NOT NULL, spaces smallint[] NOT NULL DEFAULT '{}');
CREATE TABLE spaces (space smallint PRIMARY KEY, kind text NOT NULL, dim integer NOT NULL, sql_type text NOT NULL);
CREATE TABLE sparse_postings (space smallint NOT NULL, term integer NOT NULL, seq bigint NOT NULL,
                              tf real NOT NULL, dl double precision NOT NULL, PRIMARY KEY (space, term, seq));
CREATE INDEX sparse_postings_by_seq ON sparse_postings (seq);
CREATE TABLE sparse_stats (space smallint PRIMARY KEY, docs bigint NOT NULL, total_len double precision NOT NULL);
CREATE TABLE edges (source text NOT NULL, target text NOT NULL, type text NOT NULL, edge text NOT NULL,
                    PRIMARY KEY (source, target, type));
CREATE INDEX edges_by_target ON edges (target);
CREATE TABLE tombstones (id text COLLATE "C" PRIMARY KEY, doc text NOT NULL, blob bytea NOT NULL);
CREATE TABLE reversals (hash text PRIMARY KEY, doc text NOT NULL);
CREATE TABLE lineage (id text NOT NULL, pos integer NOT NULL, event text NOT NULL, PRIMARY KEY (id, pos));
CREATE TABLE triples (id text PRIMARY KEY, blob bytea NOT NULL);
CREATE TABLE documents (name text PRIMARY KEY, doc text NOT NULL);
"""),
    # the derived spaces' graphs: every put paid an HNSW insertion in each, and no search reads them any more
    (2, """
DROP INDEX IF EXISTS vec_e02_hnsw, vec_e03_hnsw, vec_e04_hnsw, vec_e08_hnsw, vec_e10_hnsw;
"""),
)
LATEST = MIGRATIONS[-1][0]


def migrate(conn: psycopg.Connection, store_id: str) -> int:
    """Create the pgvector extension and the schema, then apply the migrations the version table lacks, each in
    its own transaction, under an advisory lock (two servers starting at once do not both migrate). Returns the
    schema version. A database migrated by a newer version is refused, not touched."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(SCHEMA)))
        conn.execute(sql.SQL("SET LOCAL search_path = {}").format(search_path(conn)))
        conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version integer PRIMARY KEY, "
                     "applied_at timestamptz NOT NULL DEFAULT now())")
        row = conn.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()
        current = int(row[0]) if row else 0
        if current > LATEST:
            raise StorageError(f"the database's ContextGraph schema is version {current}; this version reads up to "
                               f"{LATEST}: upgrade ContextGraph", schema=current)
        for version, script in MIGRATIONS:
            if version > current:
                conn.execute(script)  # type: ignore[arg-type]  # trusted DDL of this module
                conn.execute("INSERT INTO schema_version (version) VALUES (%s)", (version,))
        conn.execute("INSERT INTO store (store_id, next_seq) VALUES (%s, 1) ON CONFLICT DO NOTHING", (store_id,))
    return LATEST


def search_path(conn: psycopg.Connection) -> sql.Composable:
    """The store's schema first, then wherever the vector extension's types live (public, or a managed
    service's `extensions` schema), then public."""
    row = conn.execute("SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'vector'").fetchone()
    names: list[str] = [SCHEMA, *([str(row[0])] if row else []), "public"]
    return sql.SQL(", ").join(sql.Identifier(n) for n in dict.fromkeys(names))


def space_table(space: int) -> sql.Identifier:
    return sql.Identifier(f"vec_e{space:02d}")


def column_type(space: int, dim: int) -> str:
    if space in BINARY_SPACES:
        return f"bit({dim})"
    return f"vector({dim})" if dim <= HNSW_DENSE_LIMIT else f"halfvec({dim})"


def _ops(space: int, sql_type: str) -> str:
    if space in BINARY_SPACES:
        return "bit_hamming_ops"
    prefix = "halfvec" if sql_type.startswith("halfvec") else "vector"
    return prefix + ("_ip_ops" if space in DENSE_OPS else "_cosine_ops")


def hnsw_index_sql(space: int, sql_type: str) -> sql.Composed:
    """CREATE INDEX IF NOT EXISTS of a space's HNSW index (the LMDB backend's M and ef_construction)."""
    ops = sql.SQL(cast(LiteralString, _ops(space, sql_type)))
    return sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} USING hnsw (v {}) WITH (m = {}, ef_construction = {})").format(
        hnsw_index_name(space), space_table(space), ops, sql.Literal(HNSW_PARAMS["m"]),
        sql.Literal(HNSW_PARAMS["ef_construction"]))


def hnsw_index_name(space: int) -> sql.Identifier:
    return sql.Identifier(f"vec_e{space:02d}_hnsw")


def fingerprint_dims(fingerprint: Fingerprint) -> dict[int, int]:
    """Each vector space's dimension in this fingerprint (bits for E9)."""
    out = {}
    for space in VECTOR_SPACES:
        width = int(dense(fingerprint[space]).shape[0])
        out[space] = width * 8 if space in BINARY_SPACES else width
    return out


def known_spaces(conn: psycopg.Connection) -> dict[int, tuple[int, str]]:
    """space → (dimension, SQL type) of the vector tables made so far."""
    rows = conn.execute("SELECT space, dim, sql_type FROM spaces").fetchall()
    return {int(s): (int(d), str(t)) for s, d, t in rows}


def ensure_space_tables(conn: psycopg.Connection, dims: dict[int, int]) -> dict[int, tuple[int, str]]:
    """Make the vector table (and HNSW index, in HNSW_SPACES) of every space in `dims` not made yet (one
    transaction, under the write lock: two first puts from two servers do not race), and check the dimensions of
    those that exist."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
        known = known_spaces(conn)
        for space, dim in sorted(dims.items()):
            if space in known:
                continue
            sql_type = column_type(space, dim)
            conn.execute(sql.SQL("CREATE TABLE {} (seq bigint PRIMARY KEY, v {} NOT NULL)").format(
                space_table(space), sql.SQL(cast(LiteralString, sql_type))))
            if space in HNSW_SPACES:
                conn.execute(hnsw_index_sql(space, sql_type))
            kind = "binary" if space in BINARY_SPACES else "dense"
            conn.execute("INSERT INTO spaces (space, kind, dim, sql_type) VALUES (%s, %s, %s, %s)",
                         (space, kind, dim, sql_type))
            known[space] = (dim, sql_type)
    check_dims(known, dims)
    return known


def check_dims(known: dict[int, tuple[int, str]], dims: dict[int, int]) -> None:
    for space, dim in dims.items():
        if space in known and known[space][0] != dim:
            expected = known[space][0]
            raise DimensionMismatch(
                f"E{space} vectors have {dim} dimensions, the database's E{space} table has {expected}; a store "
                "keeps one model configuration (migrate into a fresh database to change it)",
                space=space, got=dim, expected=expected)


def index_names(conn: psycopg.Connection) -> Sequence[str]:
    """The HNSW indexes present in the store's schema (doctor)."""
    rows = conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = %s AND indexdef ILIKE %s "
                        "ORDER BY indexname", (SCHEMA, "%USING hnsw%")).fetchall()
    return [str(r[0]) for r in rows]
