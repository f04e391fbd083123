"""Access counts of searched memories, kept out of the search path (docs/storage.md#access-counts).

A search used to queue one write transaction per answer (`store.touch`: access_count + 1, last_accessed = now of
every memory it returned). On PostgreSQL that is a lock, a synchronous commit and a round trip per search,
which a store then waited behind on the one writer, and it made every search a writer: it could not run on a
read-only replica. Now a search only records its seqs here, in memory; what has gathered is written in one
`touch` transaction through the writer at most every `memory.access_flush_seconds`, and on close. The counts
are bookkeeping (curation reads them), never an acknowledgement: a crash loses at most one interval of them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable

from contextgraph.log import get_logger
from contextgraph.storage.base import MemoryStore

_log = get_logger("storage")


class AccessCounts:
    def __init__(self, interval_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval = interval_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._pending: list[int] = []  # a seq named twice is two accesses
        self._last = clock()
        self.flushes = 0

    def record(self, seqs: Iterable[int]) -> bool:
        """Note one access of each; True when a flush is due."""
        with self._lock:
            self._pending.extend(seqs)
            return bool(self._pending) and self._clock() - self._last >= self.interval

    def take(self) -> list[int]:
        """What has gathered since the last flush (emptied)."""
        with self._lock:
            pending, self._pending = self._pending, []
            self._last = self._clock()
            return pending

    def flush(self, store: MemoryStore) -> None:
        """Write what has gathered in one transaction (the writer thread runs this)."""
        pending = self.take()
        if pending:
            store.touch(pending, time.time())
            self.flushes += 1
