"""Offline maintenance of a data directory: rebuild every index from LMDB (the source of truth), or a PostgreSQL
store's in-process indexes from the database."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TextIO

from contextgraph.storage import save_dirs
from contextgraph.storage.indexes import IndexSet
from contextgraph.storage.lmdb_env import STORE_DIR as STORE_DIR
from contextgraph.storage.lmdb_store import LmdbStore

INDEX_DIR = "indexes"


class ProgressBar:
    """A one-line progress bar on a terminal stream (stderr: stdout may be a protocol channel)."""

    def __init__(self, label: str, stream: TextIO | None = None, width: int = 30) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.width = width
        self._last = 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - self._last < 0.1:
            return  # redraw at most ten times a second
        self._last = now
        filled = self.width if total == 0 else int(self.width * done / total)
        end = "\n" if done >= total else ""
        self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (self.width - filled)}] {done}/{total}{end}")
        self.stream.flush()


def reindex(home: Path, stream: TextIO | None = None) -> dict[int, int]:
    """Rebuild the indexes of `home` from its store and save them; returns index sizes by space."""
    with LmdbStore(home / STORE_DIR) as store:
        save_dirs.remove_stale(home / INDEX_DIR)  # what killed saves left behind (a full set of files each)
        indexes = IndexSet(store)
        indexes.rebuild(store, ProgressBar("reindex", stream))
        indexes.save(home / INDEX_DIR)
        return indexes.sizes()


def reindex_postgres_local(home: Path, url: str, stream: TextIO | None = None) -> dict[int, int]:
    """Rebuild a PostgreSQL store's in-process indexes (E2-E4, E6, E13: storage/postgres/search.py) in `home` from
    the database and save them; returns their sizes by space. The database's own indexes are kept by every write."""
    from contextgraph.storage.postgres.search import LOCAL_SPACES
    from contextgraph.storage.postgres.store import PgStore

    with PgStore(url) as store:
        save_dirs.remove_stale(home / INDEX_DIR)
        indexes = IndexSet(store, spaces=LOCAL_SPACES)
        indexes.rebuild(store, ProgressBar("reindex E2-E4, E6, E13", stream))
        indexes.save(home / INDEX_DIR)
        return indexes.sizes()
