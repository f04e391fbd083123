"""What `contextgraph doctor` checks of a PostgreSQL store: connectivity, the server's version (>= 15), pgvector
(>= 0.7: halfvec, sparsevec and bit HNSW), the ContextGraph schema's version, an unfinished migration, each vector
table's HNSW index (present and valid), and the store's consistency walk. Reads only: a database without the
schema is reported as such, never migrated from here."""

from __future__ import annotations

import time
from typing import NamedTuple

import psycopg
from psycopg import sql

from contextgraph.storage.postgres.check import consistency_problems
from contextgraph.storage.postgres.connect import redact
from contextgraph.storage.postgres.schema import HNSW_SPACES, LATEST, SCHEMA, known_spaces, search_path

MIN_SERVER = 150000  # server_version_num of PostgreSQL 15
MIN_PGVECTOR = (0, 7)


class Finding(NamedTuple):
    name: str
    ok: bool
    detail: str
    fix: str = ""


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split(".") if p.isdigit())


def postgres_findings(url: str) -> list[Finding]:
    where = redact(url)
    started = time.perf_counter()
    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        return [Finding("postgres", False, f"cannot connect to {where}: {str(exc).strip()}",
                        "check CONTEXTGRAPH_STORE_URL (any libpq URI), that the server runs and accepts this user")]
    with conn:
        ms = (time.perf_counter() - started) * 1e3
        out = [Finding("postgres", True, f"connected to {where} in {ms:.0f} ms")]
        out.extend(_server(conn))
        out.extend(_store(conn))
    return out


def _server(conn: psycopg.Connection) -> list[Finding]:
    out = []
    num = int(conn.execute("SHOW server_version_num").fetchone()[0])  # type: ignore[index]
    text = conn.execute("SHOW server_version").fetchone()[0]  # type: ignore[index]
    out.append(Finding("postgres version", num >= MIN_SERVER, f"PostgreSQL {text}",
                       "" if num >= MIN_SERVER else "use PostgreSQL 15 or later"))
    installed = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    available = conn.execute("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'").fetchone()
    if installed is None and available is None:
        out.append(Finding("pgvector", False, "not available on this server",
                           f"install pgvector >= {'.'.join(map(str, MIN_PGVECTOR))} on the server"))
    else:
        version = str(installed[0] if installed else available[0] if available else "")
        ok = _version(version) >= MIN_PGVECTOR
        state = "installed" if installed else "available, created by the first start"
        out.append(Finding("pgvector", ok, f"{version} ({state})",
                           "" if ok else "ALTER EXTENSION vector UPDATE (pgvector >= 0.7 is needed)"))
    return out


def _store(conn: psycopg.Connection) -> list[Finding]:
    exists = conn.execute("SELECT 1 FROM information_schema.tables WHERE table_schema = %s AND table_name = "
                          "'schema_version'", (SCHEMA,)).fetchone()
    if not exists:
        return [Finding("store", True, f"no ContextGraph schema yet (schema version {LATEST} is created at the "
                                       "first start)")]
    conn.execute(sql.SQL("SET search_path = {}").format(search_path(conn)))
    version = int(conn.execute("SELECT max(version) FROM schema_version").fetchone()[0])  # type: ignore[index]
    out = [Finding("schema", version == LATEST, f"version {version} (this ContextGraph writes {LATEST})",
                   "" if version <= LATEST else "upgrade ContextGraph: the database was migrated by a newer one")]
    row = conn.execute("SELECT doc FROM documents WHERE name = 'migration'").fetchone()
    if row is not None and '"done": false' in row[0]:
        out.append(Finding("migration", False, "a `contextgraph migrate` into this database has not finished",
                           "run the same contextgraph migrate command again"))
    spaces = [space for space in known_spaces(conn) if space in HNSW_SPACES]
    valid = {str(r[0]) for r in conn.execute(
        "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON "
        "n.oid = c.relnamespace JOIN pg_am a ON a.oid = c.relam WHERE n.nspname = %s AND a.amname = 'hnsw' "
        "AND i.indisvalid", (SCHEMA,)).fetchall()}
    missing = [f"E{s}" for s in sorted(spaces) if f"vec_e{s:02d}_hnsw" not in valid]
    detail = f"{len(spaces) - len(missing)} of {len(spaces)} searched vector tables have a valid HNSW index"
    out.append(Finding("indexes", not missing, detail + (f"; missing or invalid: {', '.join(missing)}" if missing
                                                       else ""),
                       "REINDEX the named vec_eNN_hnsw indexes (or restart a server: it recreates none)"
                       if missing else ""))
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        problems = consistency_problems(cur)
        count = int(cur.execute("SELECT count(*) FROM memories").fetchone()[0])  # type: ignore[index]
    if problems:
        out.append(Finding("store", False, f"{count} memories, {len(problems)} inconsistencies: {problems[0]}",
                           "report the store inconsistency"))
    else:
        out.append(Finding("store", True, f"{count} memories, consistent"))
    return out
