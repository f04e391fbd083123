"""Many values of one LMDB table, read by a few threads at once.

A search reads ~100 candidates' fingerprints, each 5-7 pages scattered over the file. When those pages are not
in the page cache, every read waits for the disk in turn: LMDB's get touches the value, so one thread has one
page read in flight. py-lmdb releases the GIL inside LMDB, so four threads keep four in flight. Measured on
this VM (benchmarks/README, the fifth pass): 100 fingerprints from an evicted 100K store 74-86 → 25-29
ms; from the page cache the hand-off costs ~1 ms more. The page cache cannot be counted on here: the kernel
pages out what was not touched in the last minute.

So `read_many` first reads a few values in the caller's transaction and times them: from the page cache they
take a few µs each, from the disk hundreds. Only a batch that starts cold goes to the threads; a warm one costs
nothing more. A background thread (contextgraph.background) reads alone: the pool's threads would be started at
its lowered priority and then serve the requests at it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import lmdb

from contextgraph.background import in_background

THREADS = 4
MIN_KEYS = 32  # fewer keys are read by the caller alone: the hand-off would cost more than it overlaps
PROBE = 8  # values read first in the caller's transaction, timed
COLD_SECONDS = 150e-6  # a probe slower than this a value went to the disk (warm: ~2-20 µs, cold: ~0.3-1 ms)

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def read_many(txn: lmdb.Transaction, env: lmdb.Environment, db: lmdb._Database,
              keys: Sequence[bytes]) -> list[bytes | memoryview | None]:
    """The values of `keys` in order (None where absent): buffers of `txn` for what it read itself, copies for
    what the threads read. The threads only when the first PROBE values came from the disk."""
    started = time.perf_counter()
    head = [txn.get(key, db=db) for key in keys[:PROBE]]
    rest = keys[PROBE:]
    cold = time.perf_counter() - started > COLD_SECONDS * len(head)
    fetched = get_many(env, db, rest) if cold else None
    return head + (fetched if fetched is not None else [txn.get(key, db=db) for key in rest])


def get_many(env: lmdb.Environment, db: lmdb._Database, keys: Sequence[bytes],
             threads: int = THREADS) -> list[bytes | None] | None:
    """The values of `keys` in order (None where absent), copied out of the map, each thread in its own read
    transaction. None when the caller should read them itself: too few keys, or a thread's transaction failed
    (the map resized by another process, which the caller's transaction has dealt with; no reader slot left).
    A thread's snapshot may be newer than the caller's; a stored value only changes by being rewritten whole,
    so each value is one version or the other."""
    if threads <= 1 or len(keys) < MIN_KEYS or in_background():  # a lowered thread would grow the pool lowered
        return None
    chunks = [keys[i::threads] for i in range(threads)]
    try:
        parts = list(_executor().map(lambda chunk: _fetch(env, db, chunk), chunks))
    except lmdb.Error:
        return None
    out: list[bytes | None] = [None] * len(keys)
    for i, part in enumerate(parts):
        out[i::threads] = part
    return out


def _fetch(env: lmdb.Environment, db: lmdb._Database, keys: Sequence[bytes]) -> list[bytes | None]:
    with env.begin(db=db, buffers=False) as txn:
        return [txn.get(key) for key in keys]


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(THREADS, thread_name_prefix="contextgraph-read")
        return _pool
