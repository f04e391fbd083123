"""Connections to the store's database: a psycopg 3 pool whose connections autocommit (a write opens its own
transaction), look in the store's schema first, and send and receive pgvector's types in binary form. The URL
is handed to libpq verbatim, so every libpq URI works, unix sockets included
(`postgresql://postgres:@/db?host=/run/postgresql`)."""

from __future__ import annotations

import psycopg
from pgvector.psycopg import register_vector
from psycopg import conninfo, sql
from psycopg_pool import ConnectionPool

from contextgraph.errors import StorageError
from contextgraph.storage.postgres.schema import EF_SEARCH, SCHEMA, search_path

POOL_MAX = 8  # the writer thread, the search threads, curation and the engine's saves of one server


def redact(url: str) -> str:
    """The URL with any password replaced, for messages and logs."""
    try:
        info = conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "postgresql://…"
    if info.get("password"):
        info["password"] = "***"
    return conninfo.make_conninfo("", **info)


def connect(url: str) -> psycopg.Connection:
    """One plain connection (migrations, doctor, tests): autocommit, no vector types registered."""
    try:
        return psycopg.connect(url, autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        raise StorageError(f"cannot connect to PostgreSQL at {redact(url)}: {exc}".strip()) from exc


def read_store_id(url: str) -> str | None:
    """The id of the store in this database (created with its schema), or None when there is none or the
    database cannot be reached: what `contextgraph call` compares with a running server's."""
    try:
        with connect(url) as conn:
            row = conn.execute(sql.SQL("SELECT store_id FROM {}.store").format(sql.Identifier(SCHEMA))).fetchone()
    except (StorageError, psycopg.Error):
        return None
    return str(row[0]) if row else None


def _configure(conn: psycopg.Connection) -> None:
    conn.execute(sql.SQL("SET search_path = {}").format(search_path(conn)))
    conn.execute(sql.SQL("SET hnsw.ef_search = {}").format(sql.Literal(EF_SEARCH)))
    # pgvector >= 0.8: keep walking the graph until LIMIT rows are found (deleted rows and a k above
    # ef_search would otherwise return fewer), in exact distance order; older servers simply lack the setting
    conn.execute("SELECT set_config('hnsw.iterative_scan', 'strict_order', false) WHERE EXISTS (SELECT 1 FROM "
                 "pg_extension WHERE extname = 'vector' AND string_to_array(extversion, '.')::int[] >= '{0,8}')")
    register_vector(conn)


def open_pool(url: str, max_size: int = POOL_MAX) -> ConnectionPool[psycopg.Connection]:
    """A pool of configured connections; fails at once (StorageError) when the server cannot be reached."""
    pool: ConnectionPool[psycopg.Connection] = ConnectionPool(
        url, min_size=1, max_size=max_size, kwargs={"autocommit": True, "connect_timeout": 10},
        configure=_configure, open=False, name="contextgraph")
    try:
        pool.open(wait=True, timeout=15)
    except Exception as exc:  # psycopg_pool.PoolTimeout hides the libpq error: name the server
        pool.close()
        raise StorageError(f"cannot connect to PostgreSQL at {redact(url)}: {exc}") from exc
    return pool
