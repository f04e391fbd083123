"""The one writer of a process (docs/storage.md): a thread that runs mutations one at a time, in the order
they were submitted. LMDB admits one write transaction at a time and hnswlib must not be mutated while it is
read, so funnelling every mutation through one queue keeps both simple; readers never come here.

    writer = Writer()
    record = await writer.submit(store.put, record, fingerprint)   # from asyncio
    record = writer.submit_future(store.put, record, fingerprint).result()  # from a plain thread
    writer.close()   # runs what is queued, then stops
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from contextgraph.errors import StorageError

T = TypeVar("T")
_STOP = object()


class Writer:
    def __init__(self, name: str = "contextgraph-writer") -> None:
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._closed = False
        self._lock = threading.Lock()  # makes "not closed, then enqueue" atomic against close()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit_future(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        with self._lock:
            if self._closed:
                raise StorageError("the writer is closed")
            self._queue.put((future, fn, args, kwargs))
        return future

    async def submit(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run `fn(*args, **kwargs)` on the writer thread and return its result. Cancelling the await cancels
        the job if it has not started; a started job always runs to the end (a commit is never half-done)."""
        return await asyncio.wrap_future(self.submit_future(fn, *args, **kwargs))

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            future, fn, args, kwargs = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:  # the submitter sees it; the writer lives on
                future.set_exception(exc)
            else:
                future.set_result(result)

    def close(self, timeout: float | None = None) -> None:
        """Refuse new work, finish everything already queued, stop the thread."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._queue.put(_STOP)
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
