"""The PostgreSQL + pgvector backend (docs/storage.md): the shared store for several servers on several hosts, behind
the same protocols as LMDB (storage.base). Importing this package needs psycopg and pgvector; the LMDB default
never imports it."""

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(url: str | None) -> bool:
    return bool(url) and str(url).lower().startswith(POSTGRES_SCHEMES)
