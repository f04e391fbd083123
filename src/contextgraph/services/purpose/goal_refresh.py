"""New themes become goals without a re-bootstrap (docs/retrieval.md#stage-4-purpose).

A memory near a goal's centroid joins that goal by being near it: nothing to do. A memory that aligns with no goal
may be the start of a theme the goals do not know yet. Once `refresh_after` such memories have been stored since
the goals were last derived, the store is clustered again in a background thread (the clustering the star came
from) and its themes replace the goals; the north star itself stays. Until then a query about the new theme
belongs to no goal, so stage 4 leaves its ranking alone."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from contextgraph.background import start_thread
from contextgraph.constitution import Constitution
from contextgraph.fingerprint import Fingerprint
from contextgraph.log import get_logger
from contextgraph.services.purpose.autonomous_scan import goals_of, read_corpus, sub_goal_themes
from contextgraph.services.purpose.teleology import TeleologyService
from contextgraph.storage.base import MemoryRecord

_log = get_logger("teleology")
SEMANTIC = 1


class GoalRefresh:
    def __init__(self, teleology: TeleologyService, constitution: Constitution,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.teleology = teleology
        self.settings = constitution["autonomous"]
        self.refresh_after = int(self.settings["goals"]["refresh_after"])
        self.min_interval = float(self.settings["goals"]["min_interval_seconds"])
        self._clock = clock
        self._lock = threading.Lock()
        self._off_goal = 0
        self._last: float | None = None  # when the last refresh started
        self._running: threading.Thread | None = None

    def after_store(self, record: MemoryRecord, fingerprint: Fingerprint, _utl: Any) -> None:
        """An after-store listener: counts the memories that align with no goal, and re-derives the goals in the
        background once enough have come."""
        view = self.teleology.star_view()
        if view is None or view.goals is None or SEMANTIC not in fingerprint:
            return
        best = float(view.goals.alignments(np.asarray(fingerprint[SEMANTIC]))[0].max())
        if best >= view.threshold:
            return
        with self._lock:
            self._off_goal += 1
            now = self._clock()
            if self._off_goal < self.refresh_after or (self._running is not None and self._running.is_alive()):
                return
            if self._last is not None and now - self._last < self.min_interval:
                return
            self._off_goal, self._last = 0, now
            self._running = start_thread(self.refresh, name="goal-refresh")

    def refresh(self) -> None:
        """Cluster the store again and make its themes the goals (a worker thread)."""
        try:
            corpus = read_corpus(self.teleology.storage.store, int(self.settings["max_scan"]))
            if len(corpus) < int(self.settings["subgoals"]["min_memories"]):
                return
            self.teleology.set_goals(goals_of(corpus, sub_goal_themes(corpus, self.settings)), "new theme")
        except Exception:  # a closed store mid-pass: the goals stay as they were
            _log.exception("re-deriving the goals failed")

    def join(self, timeout: float | None = None) -> None:
        """Wait for a running refresh (tests, shutdown)."""
        running = self._running
        if running is not None:
            running.join(timeout)
