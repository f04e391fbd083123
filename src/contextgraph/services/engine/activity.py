"""How busy the server is, for the dream engine (docs/engine.md#triggers; wake < 100 ms).

The dispatcher wraps every tool call in `running(tool)`: the calls in flight are counted (an automatic dream
never starts while one runs), and a memory operation (constitution dream.wake_tools: store, search, curation)
counts as activity and tells the listeners at once, before its handler runs, so a dream wakes while the call
proceeds. Status reads (get_dream_status, get_neuromodulation_state, …) neither count nor wake.

activity ∈ [0, 1] = 1 − exp(−a / busy_operations), where a = Σ exp(−(now − tᵢ)/τ) over the memory operations'
times tᵢ (one operation just now: ≈ 0.1; ten within the last seconds: ≈ 0.63).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from contextgraph.constitution import Constitution


class ActivityMonitor:
    def __init__(self, constitution: Constitution, clock: Callable[[], float] = time.monotonic) -> None:
        d = constitution["dream"]
        self.wake_tools = frozenset(str(t) for t in d["wake_tools"])
        self.tau = float(d["activity"]["time_constant_seconds"])
        self.busy = float(d["activity"]["busy_operations"])
        self._clock = clock
        self._lock = threading.Lock()
        self._accumulated = 0.0
        self._at = clock()
        self.in_flight = 0
        self.last_operation: float | None = None
        self.bulk_loads = 0  # > 0 while a bulk load runs: no automatic dream then
        self.listeners: list[Callable[[str], None]] = []  # told of each memory operation as it starts

    @contextmanager
    def running(self, tool: str) -> Iterator[None]:
        with self._lock:
            self.in_flight += 1
        try:
            if tool in self.wake_tools:
                self.operation(tool)
            yield
        finally:
            with self._lock:
                self.in_flight -= 1

    def operation(self, tool: str) -> None:
        now = self._clock()
        with self._lock:
            self._accumulated = self._decayed(now) + 1.0
            self._at = now
            self.last_operation = now
        for listener in list(self.listeners):
            listener(tool)

    def level(self) -> float:
        with self._lock:
            return 1.0 - math.exp(-self._decayed(self._clock()) / self.busy)

    def idle_seconds(self) -> float | None:
        with self._lock:
            return None if self.last_operation is None else self._clock() - self.last_operation

    def _decayed(self, now: float) -> float:
        return self._accumulated * math.exp(-max(0.0, now - self._at) / self.tau)
