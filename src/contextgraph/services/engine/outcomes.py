"""The observed outcomes ATC calibrates against: bounded (score, outcome) pairs per threshold and domain, and the
predictions still waiting for theirs.

A prediction is offered when the engine scores a memory against a threshold (a search result's similarity, a
workspace candidate's r_m), with its rank in what the operation returned. It resolves when the agent judges the
memory (`use`: the outcome its call gives, docs/engine.md#adaptive-thresholds). A use also marks the results
the same operation ranked above it, still open, as skipped: passed over for a lower one. When `pending_seconds`
pass (or the pending bound pushes it out), a skipped prediction resolves to 0, judged; any other expires unjudged
(`judged` False): not using a result says nothing about its relevance, so the ThresholdService records no pair
for it. Pairs that need no waiting (a merge confirms a duplicate at once) are added directly. Pure bookkeeping,
no I/O: the ThresholdService persists `to_doc()`.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict, deque
from collections.abc import Collection, Mapping
from dataclasses import dataclass

import numpy as np


def _share(memory_id: str, query: str) -> float:
    """A fixed pseudo-random number in [0, 1) for a (memory, search) pair."""
    digest = hashlib.blake2b(f"{memory_id}/{query}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0**64


@dataclass(frozen=True, slots=True)
class Pending:
    threshold: str
    domain: str
    score: float
    offered_at: float
    query: str  # a digest of the operation that offered it
    rank: int = -1  # its position in what that operation returned (-1: none)


@dataclass(frozen=True, slots=True)
class Resolved:
    threshold: str
    domain: str
    score: float
    outcome: float
    judged: bool = True  # False: it expired (or was pushed out) unused and unskipped: no evidence


class OutcomeLog:
    def __init__(self, max_pairs: int, pending_max: int, pending_seconds: float,
                 compact_floor: int | None = None, unused_weight: float = 0.0) -> None:
        self.max_pairs = max_pairs
        self.pending_max = pending_max
        self.pending_seconds = pending_seconds
        # the share of the unused results of a search whose other result was used that close as a weak 0
        self.unused_weight = unused_weight
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
        # (memory id, threshold, query) of the open predictions skipped for a lower-ranked result that was used
        self._skipped: set[tuple[str, str, str]] = set()
        # the operations (query digests) one of whose results was used, newest last, at most `pending_max`
        self._engaged: OrderedDict[str, None] = OrderedDict()

    # -- writes ------------------------------------------------------------------------------------------------
    def add(self, threshold: str, domain: str, score: float, outcome: float, at: float) -> None:
        key = (threshold, domain)
        if key not in self._pairs:
            self._pairs[key] = deque(maxlen=self.max_pairs)
        self._pairs[key].append((float(at), float(score), float(outcome)))
        self._arrays.pop(key, None)
        self.versions[key] = self.versions.get(key, 0) + 1

    def offer(self, memory_id: str, pending: Pending) -> list[Resolved]:
        """Wait for `memory_id`'s judgement. Returns what this closes that is evidence: its open prediction for the
        same threshold (replaced) and those pushed out by the bound, when skipped or weak (`_closed`)."""
        open_ = self._pending.pop(memory_id, {})
        replaced = open_.get(pending.threshold)
        dropped = [] if replaced is None else [self._closed(memory_id, replaced)]
        open_[pending.threshold] = pending
        self._pending[memory_id] = open_  # to the back: the newest offer
        self._offers.append((memory_id, pending))
        if len(self._offers) > self._compact_at:  # mostly stale: keep the live ones only
            self._requeue()
        while len(self._pending) > self.pending_max:
            old_id, old = self._pending.popitem(last=False)
            dropped.extend(self._closed(old_id, p) for p in old.values())
        return [r for r in dropped if r.judged]

    def _closed(self, memory_id: str, p: Pending) -> Resolved:
        """A prediction that ends without a use: 0 and judged if it was skipped; weak evidence if its search had
        another result used (a 0 for an `unused_weight` share of them, chosen by a hash of the memory and the
        search, so every threshold keeps the same ones and a replay keeps them too); else unjudged."""
        key = (memory_id, p.threshold, p.query)
        skipped = key in self._skipped
        self._skipped.discard(key)
        weak = not skipped and p.query in self._engaged and _share(memory_id, p.query) < self.unused_weight
        return Resolved(p.threshold, p.domain, p.score, 0.0, judged=skipped or weak)

    def use(self, memory_id: str, outcome: float = 1.0) -> list[Resolved]:
        """The agent judged `memory_id`: its open predictions resolve to `outcome` (1 used, 0 refuted, or between).
        A use (outcome ≥ 0.5) marks the open results its operations ranked above it as skipped."""
        open_ = self._pending.pop(memory_id, None)
        if not open_:
            return []
        for p in open_.values():
            self._skipped.discard((memory_id, p.threshold, p.query))
            if outcome >= 0.5:
                self._engage(p.query)
                if p.rank > 0:
                    self._mark_skipped_above(p)
        return [Resolved(p.threshold, p.domain, p.score, outcome) for p in open_.values()]

    def _mark_skipped_above(self, used: Pending) -> None:
        for other_id, open_ in self._pending.items():
            p = open_.get(used.threshold)
            if p is not None and p.query == used.query and 0 <= p.rank < used.rank:
                self._skipped.add((other_id, p.threshold, p.query))

    def _engage(self, query: str) -> None:
        self._engaged.pop(query, None)
        self._engaged[query] = None
        while len(self._engaged) > max(self.pending_max, 1):
            self._engaged.popitem(last=False)

    def with_prefix(self, prefix: str) -> list[str]:
        """The memories with open predictions whose id starts with `prefix` (a citation tag names a prefix)."""
        return [m for m in self._pending if m.startswith(prefix)]

    def expire(self, now: float) -> list[Resolved]:
        """Predictions older than `pending_seconds` close unused, oldest offered first (`_closed`: 0 if skipped or
        weak, else unjudged). (A clock set back between two offers only delays the later one's expiry until the
        earlier one's.)"""
        out: list[Resolved] = []
        offers = self._offers
        while offers and now - offers[0][1].offered_at > self.pending_seconds:
            memory_id, p = offers.popleft()
            open_ = self._pending.get(memory_id)
            if open_ is None or open_.get(p.threshold) is not p:
                continue  # used, replaced by a newer offer, or pushed out since
            out.append(self._closed(memory_id, p))
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
            "pending": [[m, [[p.threshold, p.domain, p.score, p.offered_at, p.query, p.rank] for p in open_.values()]]
                        for m, open_ in self._pending.items()],
            "skipped": [list(key) for key in self._skipped],
            "engaged": list(self._engaged),
        }

    def load_doc(self, doc: dict, known: Collection[str] | None = None) -> None:
        """The saved state; with `known`, only what concerns those thresholds (a threshold the constitution no
        longer has, such as θ_opt and θ_acc, is dropped with its pairs and predictions)."""
        keep = (lambda _t: True) if known is None else (lambda t: str(t) in known)
        self._pairs.clear()
        self._arrays.clear()
        self._pending.clear()
        self._skipped.clear()
        self._engaged.clear()
        for threshold, domain, rows in (p for p in doc.get("pairs", []) if keep(p[0])):
            for at, score, outcome in rows:
                self.add(str(threshold), str(domain), float(score), float(outcome), float(at))
        for memory_id, open_ in doc.get("pending", [])[-self.pending_max:]:
            # a prediction saved before ranks were kept has five fields: rank -1, never skipped or skipping
            self._pending[str(memory_id)] = {str(e[0]): Pending(str(e[0]), str(e[1]), float(e[2]), float(e[3]),
                                                                str(e[4]), int(e[5]) if len(e) > 5 else -1)
                                             for e in open_ if keep(e[0])}
        self._pending = OrderedDict((m, open_) for m, open_ in self._pending.items() if open_)
        self._skipped.update((str(m), str(t), str(q)) for m, t, q in doc.get("skipped", [])
                             if getattr((self._pending.get(str(m)) or {}).get(str(t)), "query", None) == str(q))
        for query in doc.get("engaged", []):
            self._engage(str(query))
        self._requeue()
