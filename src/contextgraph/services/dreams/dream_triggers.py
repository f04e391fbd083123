"""When a dream starts by itself (docs/engine.md#triggers), with automatic dreams on (`serve`, not one-shot calls
or tests): an identity-continuity fall below 0.5 or the meta-cognition's request (the cognitive state's
requests), entropy above 0.7 for 5 minutes, or activity below 0.15 after idle_seconds without a memory
operation; never with a request in flight, never while the store's operation log is still growing (a bulk load,
another process writing to the same data directory: the log must have stood still for idle_seconds), never
sooner than min_interval_seconds after the last dream, and only with something new to consolidate.

A part of services.dreams.dream.DreamService (its base class), kept apart because deciding when to dream is
one job and dreaming another."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import Any

import anyio

from contextgraph.log import get_logger
from contextgraph.services.engine.activity import ActivityMonitor
from contextgraph.services.engine.cognition import CognitiveState
from contextgraph.services.engine.workspace import WorkspaceService
from contextgraph.services.runtime.store_handle import StoreHandle

_log = get_logger("dream")


class DreamTriggers:
    # what DreamService gives the triggers to decide with
    auto: bool
    auto_settings: dict[str, Any]
    triggers: dict[str, float]
    storage: StoreHandle
    activity: ActivityMonitor
    workspace: WorkspaceService
    cognition: CognitiveState
    last_dream_end: float | None
    memories_at_last_dream: int
    pending_requests: deque[dict[str, Any]]
    _monitor: asyncio.Task[None] | None
    _seen_seq: int
    _seq_changed_at: float | None

    @property
    def dreaming(self) -> bool:
        raise NotImplementedError

    def _start(self, phase: str, reason: str) -> None:
        raise NotImplementedError

    def ensure_monitor(self) -> None:
        if not self.auto or (self._monitor is not None and not self._monitor.done()):
            return
        try:
            self._monitor = asyncio.get_running_loop().create_task(self._watch())
        except RuntimeError:  # no loop (a synchronous caller): the next async call starts it
            return

    def due(self) -> str | None:
        """Why a dream should start now, or None."""
        a, t = self.auto_settings, self.triggers
        if self.dreaming or self.activity.in_flight or self.activity.bulk_loads:
            return None
        if self.last_dream_end is not None and time.time() - self.last_dream_end < float(a["min_interval_seconds"]):
            return None
        if not self.storage.is_open:
            return None
        # the store's operation log still growing (a bulk load, another server process on this data directory):
        # not idle, whatever this process's own calls say
        seq, now = self.storage.store.last_seq(), time.monotonic()
        if seq != self._seen_seq:
            self._seen_seq, self._seq_changed_at = seq, now
        if self._seq_changed_at is not None and now - self._seq_changed_at < float(a["idle_seconds"]):
            return None
        if self.storage.store.count() == self.memories_at_last_dream and not self.workspace.replay_queue:
            return None  # nothing new to consolidate
        if self.pending_requests:
            return f"requested: {self.pending_requests.popleft().get('reason')}"
        since = self.cognition.high_entropy_since
        if since is not None and time.monotonic() - since >= t["entropy_seconds"]:
            return f"entropy above {t['entropy']} for {t['entropy_seconds']:.0f} s"
        idle = self.activity.idle_seconds()
        if idle is not None and idle >= float(a["idle_seconds"]) and self.activity.level() < t["idle_activity"]:
            return f"idle: activity {self.activity.level():.3f} < {t['idle_activity']}"
        return None

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(float(self.auto_settings["check_seconds"]))
            try:
                # due() reads the store (its last seq and count): a network round trip on PostgreSQL, so off the loop
                reason = await anyio.to_thread.run_sync(self.due)
                if reason is not None:
                    _log.info("dream triggered", reason=reason)
                    self._start("full", reason)
            except Exception:
                _log.exception("dream trigger check failed")
