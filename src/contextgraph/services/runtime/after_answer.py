"""The cognitive work that follows an answer (docs/engine.md#after-the-answer): store_memory's UTL and what
hears of it (the engine's record, steering, Meta-UTL, goals), inject_context's record and competition, and
search_graph's pulse score, competition and listeners. The caller does not wait for it; the next pulse carries
it. Durability is never deferred: every commit an answer acknowledges is done before the answer, and nothing
here writes a memory.

One worker thread runs the work in the order it was queued, so the engine folds operations in the order they
were answered. The queue is bounded: a caller that finds `cap` pieces waiting queues its own and waits for room
(the oldest piece to finish), never dropping one. It once waited for its own piece, and so for all `cap` before it:
back-to-back stores at 100K memories, whose UTLs (~50 ms each beside the next store) outrun the stores (~30 ms),
filled the queue every ~130 stores, and the store that found it full waited 2.8-4.0 s. A failure is logged, never
anyone's error. `settled()` waits until all that was queued before it has run (tests, benchmarks); `close()` runs
what is queued and stops the thread (the store handle calls it before it closes the store, so a clean exit loses
none of it).
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from contextgraph.log import get_logger

_log = get_logger("engine")

# Pieces waiting at most: a few seconds of work (each piece ~5-50 ms), so a burst of calls is answered early while
# the engine lags it by a bounded amount; past it each caller pays about one piece, as before this queue existed.
QUEUE_CAP = 64


class AfterAnswer:
    def __init__(self, cap: int = QUEUE_CAP) -> None:
        self.cap = cap
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._waiting = 0
        self._queued: deque[Future[None]] = deque()  # the pieces not yet seen done, oldest first

    async def run(self, work: Callable[[], None], what: str) -> None:
        """Queue `work` (a description of it in `what`, for the log); returns at once unless the queue is full."""
        _future, oldest = self._submit(work, what)
        if oldest is not None:  # full: queued all the same, in order; this caller waits for room
            await asyncio.wrap_future(oldest)

    async def settled(self) -> None:
        """Returns once everything queued before this call has run."""
        future, _oldest = self._submit(_nothing, "settle")
        await asyncio.wrap_future(future)

    def drain(self) -> None:
        """settled() for a thread: blocks until everything queued before this call has run."""
        self._submit(_nothing, "drain")[0].result()

    @property
    def waiting(self) -> int:
        return self._waiting

    def close(self) -> None:
        """Run what is queued, then stop the worker thread (a later piece starts a new one)."""
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)

    def _submit(self, work: Callable[[], None], what: str) -> tuple[Future[None], Future[None] | None]:
        """The piece's future, and the oldest piece's when the queue was full (what the caller waits for)."""
        with self._lock:
            if self._executor is None:
                # not at background priority: every tool but store_memory and search_graph waits for this
                # queue, and a full one makes those wait too (measured: lowered, a quiet machine gained nothing)
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="after-answer")
            while self._queued and self._queued[0].done():
                self._queued.popleft()
            full = self._waiting >= self.cap
            self._waiting += 1
            future = self._executor.submit(self._guarded, work, what)
            self._queued.append(future)
            return future, (self._queued[0] if full else None)

    def _guarded(self, work: Callable[[], None], what: str) -> None:
        try:
            work()
        except Exception:  # the answer was given: the engine misses this operation, the caller never sees it
            _log.exception("work after the answer failed", what=what)
        finally:
            with self._lock:
                self._waiting -= 1


def _nothing() -> None:
    return None
