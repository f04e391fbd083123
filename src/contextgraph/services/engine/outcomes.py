"""The observed outcomes ATC calibrates against: bounded (score, outcome) pairs per threshold and domain, and the
predictions still waiting for theirs.

A prediction is offered when the engine scores a memory against a threshold (a search result's similarity, a
workspace candidate's r_m). It resolves to 1 when the memory is then used — a tool call names it (hydrated,
annotated, boosted, merged, linked to, its neighbourhood opened) or a later search with another query finds it
again — and to 0 when `pending_seconds` pass without that. Pairs that need no waiting (a merge confirms a
duplicate at once) are added directly. Pure bookkeeping, no I/O: the ThresholdService persists `to_doc()`.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class Pending:
    threshold: str
    domain: str
    score: float
    offered_at: float
    query: str  # a digest of the operation that offered it: finding it again with the same query is no use


@dataclass(frozen=True, slots=True)
class Resolved:
    threshold: str
    domain: str
    score: float
    outcome: float


class OutcomeLog:
    def __init__(self, max_pairs: int, pending_max: int, pending_seconds: float,
                 compact_floor: int | None = None) -> None:
        self.max_pairs = max_pairs
        self.pending_max = pending_max
        self.pending_seconds = pending_seconds
        # the offer queue is rebuilt from the live predictions once it holds more than this many entries
        self.compact_floor = 4 * max(pending_max, 1024) if compact_floor is None else compact_floor
        self._compact_at = self.compact_floor
        self._pairs: dict[tuple[str, str], deque[tuple[float, float, float]]] = {}  # (at, score, outcome)
        # the same pairs as an (n, 3) array, built on first read after a change; a key's version counts its changes
        self._arrays: dict[tuple[str, str], np.ndarray] = {}
        self.versions: dict[tuple[str, str], int] = {}
        # memory id → its open predictions (one per threshold), oldest offered first
        self._pending: OrderedDict[str, dict[str, Pending]] = OrderedDict()
        # every offer in the order made, (memory id, prediction): expire pops the due ones from the front, so it
        # costs what expires, not a walk over the ~2,000 open memories (0.5 ms, four times a search). Entries
        # whose prediction was since used, replaced or pushed out are stale and skipped when they come up.
        self._offers: deque[tuple[str, Pending]] = deque()

    # -- writes ------------------------------------------------------------------------------------------------
    def add(self, threshold: str, domain: str, score: float, outcome: float, at: float) -> None:
        key = (threshold, domain)
        if key not in self._pairs:
            self._pairs[key] = deque(maxlen=self.max_pairs)
        self._pairs[key].append((float(at), float(score), float(outcome)))
        self._arrays.pop(key, None)
        self.versions[key] = self.versions.get(key, 0) + 1

    def offer(self, memory_id: str, pending: Pending) -> list[Resolved]:
        """Wait for `memory_id`'s outcome; returns the predictions pushed out by the bound (resolved as 0)."""
        open_ = self._pending.pop(memory_id, {})
        open_[pending.threshold] = pending
        self._pending[memory_id] = open_  # to the back: the newest offer
        self._offers.append((memory_id, pending))
        if len(self._offers) > self._compact_at:  # mostly stale: keep the live ones only
            self._requeue()
        dropped: list[Resolved] = []
        while len(self._pending) > self.pending_max:
            _, old = self._pending.popitem(last=False)
            dropped.extend(Resolved(p.threshold, p.domain, p.score, 0.0) for p in old.values())
        return dropped

    def use(self, memory_id: str, query: str | None = None, outcome: float = 1.0) -> list[Resolved]:
        """`memory_id` was used: its open predictions resolve to `outcome` (1; 0 when it was used to forget it),
        except those offered by the same `query`."""
        open_ = self._pending.get(memory_id)
        if not open_:
            return []
        done = {t: p for t, p in open_.items() if query is None or p.query != query}
        for t in done:
            del open_[t]
        if not open_:
            del self._pending[memory_id]
        return [Resolved(p.threshold, p.domain, p.score, outcome) for p in done.values()]

    def expire(self, now: float) -> list[Resolved]:
        """Predictions older than `pending_seconds` resolve to 0 (unused), oldest offered first. (A clock set back
        between two offers only delays the later one's expiry until the earlier one's.)"""
        out: list[Resolved] = []
        offers = self._offers
        while offers and now - offers[0][1].offered_at > self.pending_seconds:
            memory_id, p = offers.popleft()
            open_ = self._pending.get(memory_id)
            if open_ is None or open_.get(p.threshold) is not p:
                continue  # used, replaced by a newer offer, or pushed out since
            out.append(Resolved(p.threshold, p.domain, p.score, 0.0))
            del open_[p.threshold]
            if not open_:
                del self._pending[memory_id]
        return out

    def _requeue(self) -> None:
        """Rebuild the offer queue from the open predictions. The next rebuild waits until the queue has doubled:
        a memory holds one prediction per threshold, so the live ones alone can fill the floor (four thresholds ×
        `pending_max` did), and a floor-only trigger then re-sorted the whole queue on every offer: 17-21 ms
        of the event loop a search at 100K."""
        self._offers = self._queued(self._pending)
        self._compact_at = max(self.compact_floor, 2 * len(self._offers))

    @staticmethod
    def _queued(pending: Mapping[str, dict[str, Pending]]) -> deque[tuple[str, Pending]]:
        """The open predictions as an offer queue, oldest offered first."""
        live = [(memory_id, p) for memory_id, open_ in pending.items() for p in open_.values()]
        return deque(sorted(live, key=lambda entry: entry[1].offered_at))

    # -- reads -------------------------------------------------------------------------------------------------
    def pairs(self, threshold: str, domain: str, since: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(scores, outcomes) recorded for a threshold and domain, optionally only those at or after `since`."""
        key = (threshold, domain)
        arr = self._arrays.get(key)
        if arr is None:
            arr = np.asarray(self._pairs.get(key, ()), dtype=np.float64).reshape(-1, 3)
            self._arrays[key] = arr
        if since is not None:
            arr = arr[arr[:, 0] >= since]
        return arr[:, 1], arr[:, 2]

    def count_since(self, threshold: str, domain: str, since: float) -> int:
        """How many pairs were recorded at or after `since` (pure Python: no numpy call, so a status read that
        finds its answer cached never waits for the GIL behind a busy worker thread)."""
        rows = self._pairs.get((threshold, domain), ())
        return sum(1 for at, _, _ in reversed(rows) if at >= since) if rows and rows[0][0] < since else len(rows)

    def keys(self) -> list[tuple[str, str]]:
        return sorted(self._pairs)

    def count(self, threshold: str, domain: str) -> int:
        return len(self._pairs.get((threshold, domain), ()))

    @property
    def pending_count(self) -> int:
        return sum(len(v) for v in self._pending.values())

    # -- persistence -------------------------------------------------------------------------------------------
    def to_doc(self) -> dict:
        return {
            "pairs": [[t, d, [[round(a, 3), round(s, 6), o] for a, s, o in rows]]
                      for (t, d), rows in self._pairs.items()],
            "pending": [[m, [[p.threshold, p.domain, p.score, p.offered_at, p.query] for p in open_.values()]]
                        for m, open_ in self._pending.items()],
        }

    def load_doc(self, doc: dict) -> None:
        self._pairs.clear()
        self._arrays.clear()
        self._pending.clear()
        for threshold, domain, rows in doc.get("pairs", []):
            for at, score, outcome in rows:
                self.add(str(threshold), str(domain), float(score), float(outcome), float(at))
        for memory_id, open_ in doc.get("pending", [])[-self.pending_max:]:
            self._pending[str(memory_id)] = {str(t): Pending(str(t), str(d), float(s), float(at), str(q))
                                             for t, d, s, at, q in open_}
        self._requeue()
