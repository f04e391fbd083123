"""The cognitive work that follows an answer (docs/engine.md#after-the-answer): store_memory's UTL and what
hears of it (the engine's record, steering, Meta-UTL, goals), inject_context's record and competition, and
search_graph's pulse score, competition and listeners. The caller does not wait for it; the next pulse carries
it. Durability is never deferred: every commit an answer acknowledges is done before the answer, and nothing
here writes a memory.

One worker thread runs the work in the order it was queued, so the engine folds operations in the order they
were answered. The queue is bounded: past `cap` pieces waiting, the caller waits for its own piece (and so for
those before it) rather than drop it. A failure is logged, never anyone's error. `settled()` waits until all
that was queued before it has run (tests, benchmarks); `close()` runs what is queued and stops the thread (the
store handle calls it before it closes the store, so a clean exit loses none of it).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from contextgraph.log import get_logger

_log = get_logger("engine")

# Pieces waiting at most: a few seconds of work (each piece ~5-30 ms), so a burst of calls is answered early while
# the engine lags it by a bounded amount; past it the callers pay the work again, as before this queue existed.
QUEUE_CAP = 64


class AfterAnswer:
    def __init__(self, cap: int = QUEUE_CAP) -> None:
        self.cap = cap
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._waiting = 0

    async def run(self, work: Callable[[], None], what: str) -> None:
        """Queue `work` (a description of it in `what`, for the log); returns at once unless the queue is full."""
        future, full = self._submit(work, what)
        if full:  # in order and never dropped: this caller waits for its piece, as if there were no queue
            await asyncio.wrap_future(future)

    async def settled(self) -> None:
        """Returns once everything queued before this call has run."""
        future, _full = self._submit(_nothing, "settle")
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

    def _submit(self, work: Callable[[], None], what: str) -> tuple[Future[None], bool]:
        with self._lock:
            if self._executor is None:
                # not at background priority: every tool but store_memory and search_graph waits for this
                # queue, and a full one makes those wait too (measured: lowered, a quiet machine gained nothing)
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="after-answer")
            full = self._waiting >= self.cap
            self._waiting += 1
            return self._executor.submit(self._guarded, work, what), full

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
