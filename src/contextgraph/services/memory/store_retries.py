"""Which stores this process made in the last few minutes, by content and session: what makes store_memory's
retries idempotent. A client that sends a store again because it could not tell whether the first one landed
(the connection dropped, the database died after its commit, an answer timed out) gets the memory it already
has back, marked deduplicated, instead of a second copy.

A store is remembered before its commit, under the id it is about to get, so that a commit whose answer was lost
is found too; whether that memory exists is asked of the store when the retry comes (`MemoryService.store`). Only
a hash of the content and session is kept, in this process's memory: nothing of either is written anywhere, and
another server process does not see them (a retry sent to another server stores a copy)."""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable


class RecentStores:
    """content + session → the id of the memory stored for them, for `window_s` seconds, at most `limit` of them
    (the oldest forgotten first). Used from the event loop only."""

    def __init__(self, window_s: float, limit: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.window_s = window_s
        self.limit = limit
        self._clock = clock
        self._ids: OrderedDict[bytes, tuple[str, float]] = OrderedDict()  # oldest first

    @staticmethod
    def _key(content: str, session: str) -> bytes:
        return hashlib.sha256(f"{len(session)}:{session}{content}".encode()).digest()  # length: no two pairs alike

    def remember(self, content: str, session: str, memory_id: str) -> None:
        key = self._key(content, session)
        self._ids.pop(key, None)
        self._ids[key] = (memory_id, self._clock())
        self._forget_old()

    def recent(self, content: str, session: str) -> str | None:
        """The id stored for this content and session within the window, if any."""
        self._forget_old()
        found = self._ids.get(self._key(content, session))
        return None if found is None else found[0]

    def _forget_old(self) -> None:
        oldest_kept = self._clock() - self.window_s
        while self._ids and (len(self._ids) > self.limit or next(iter(self._ids.values()))[1] < oldest_kept):
            self._ids.popitem(last=False)
