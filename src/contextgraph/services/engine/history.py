"""The engine's history: a bounded record of how the engine moved and how busy it was, persisted
with the engine state so a restart keeps the curve.

Two bounded series, both fed from the one dispatcher (every tool call, whichever transport or the dashboard
made it):

* **engine samples**: entropy, coherence and learning score (the pulse the call answered with), the Kuramoto
  order parameter r, the memory count, and the cumulative number of store and search calls: at most one sample
  per `sample_seconds` (a quiet server takes none; a busy one at most that often), the newest `max_samples` kept.
  Rates between samples are differences of the cumulative counts over the time between them.
* **call latencies**: the latest `latency_window` latencies of the store tools and of the search tools (ms, with
  their wall time), from which the percentiles and the recent rates are computed.

Nothing here ticks in the background and nothing is invented: an engine with no calls has no samples.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, TypeGuard

import numpy as np

from contextgraph.services.engine.cognition import CognitiveState

DOCUMENT = "engine_history"
SAMPLE_FIELDS = ("t", "entropy", "coherence", "learning_score", "r", "memories", "stores", "searches")
KINDS = ("store", "search")


class EngineHistory:
    def __init__(self, constitution: Any, cognition: CognitiveState,
                 wall_clock: Callable[[], float] = time.time) -> None:
        h = constitution["dashboard"]["history"]
        self.sample_seconds = float(h["sample_seconds"])
        self.rate_windows = tuple(float(w) for w in h["rate_windows_seconds"])
        self.percentiles = tuple(float(p) for p in h["latency_percentiles"])
        self._kind_of = {**{t: "store" for t in h["store_tools"]}, **{t: "search" for t in h["search_tools"]}}
        self._cognition = cognition
        self._wall = wall_clock
        self._lock = threading.Lock()
        self.samples: deque[tuple[float, ...]] = deque(maxlen=int(h["max_samples"]))
        window = int(h["latency_window"])
        self.latencies: dict[str, deque[tuple[float, float]]] = {k: deque(maxlen=window) for k in KINDS}
        self.counts = {k: 0 for k in KINDS}  # cumulative calls (successful or not) since the store was created
        self.errors = {k: 0 for k in KINDS}
        self.dirty = False

    # -- writes ----------------------------------------------------------------------------------------------
    def record_call(self, tool: str, latency_ms: float, ok: bool, pulse: Mapping[str, Any] | None) -> None:
        """One finished tool call (the dispatcher's observer). Counts store/search calls; may take a sample."""
        now = self._wall()
        kind = self._kind_of.get(tool)
        with self._lock:
            if kind is not None:
                self.counts[kind] += 1
                self.latencies[kind].append((now, float(latency_ms)))
                if not ok:
                    self.errors[kind] += 1
                self.dirty = True
        if pulse is not None:
            self.maybe_sample(pulse, now)

    def maybe_sample(self, pulse: Mapping[str, Any] | None = None, now: float | None = None) -> bool:
        """Take an engine sample unless one was taken less than `sample_seconds` ago. True when it did."""
        now = self._wall() if now is None else now
        with self._lock:
            if self.samples and now - self.samples[-1][0] < self.sample_seconds:
                return False
        pulse = pulse if pulse is not None else self._cognition.pulse()
        r = self._cognition.network.read().r
        values = [v for v in (pulse.get("entropy"), pulse.get("coherence"), pulse.get("learning_score"), r)
                  if _finite(v)]
        if len(values) != 4:
            return False  # JSON has no NaN; a sample the engine could not compute is not drawn
        sample = (round(now, 3), *(round(float(v), 6) for v in values), float(self._cognition.memory_count))
        with self._lock:
            if self.samples and now - self.samples[-1][0] < self.sample_seconds:
                return False  # another thread sampled meanwhile
            self.samples.append((*sample, float(self.counts["store"]), float(self.counts["search"])))
            self.dirty = True
        return True

    # -- reads -----------------------------------------------------------------------------------------------
    def view(self, limit: int | None = None) -> dict[str, Any]:
        """The history as the dashboard draws it: the samples as columns, the rates between them, and per kind
        the latency percentiles and recent rates."""
        now = self._wall()
        with self._lock:
            samples = list(self.samples)[-limit:] if limit else list(self.samples)
            latencies = {k: list(v) for k, v in self.latencies.items()}
            counts, errors = dict(self.counts), dict(self.errors)
        columns: dict[str, list[float]] = {f: [s[i] for s in samples] for i, f in enumerate(SAMPLE_FIELDS)}
        return {
            "samples": columns,
            "sample_count": len(samples),
            "max_samples": self.samples.maxlen,
            "sample_seconds": self.sample_seconds,
            "rates_per_minute": {"store": rates_between(columns["t"], columns["stores"]),
                                 "search": rates_between(columns["t"], columns["searches"])},
            "calls": {k: self._kind_view(latencies[k], counts[k], errors[k], now) for k in KINDS},
            "sources": {
                "samples": "entropy, coherence and learning score from the pulse of a tool call, r from the "
                           f"Kuramoto network, at most one sample per {self.sample_seconds:g} s while calls come in",
                "rates_per_minute": "store / search calls between consecutive samples, per minute of wall time",
                "latency_ms": "dispatcher latency (validation, handler, pulse) of the latest calls",
                "per_minute": "calls among the latest kept whose wall time falls in the window (a lower bound "
                              "when more calls than the kept latencies fell in it)",
            },
        }

    def _kind_view(self, entries: list[tuple[float, float]], count: int, errors: int, now: float) -> dict[str, Any]:
        ms = np.array([e[1] for e in entries], dtype=np.float64)
        pct = ({f"p{p:g}": round(float(v), 3) for p, v in zip(self.percentiles, np.percentile(ms, self.percentiles))}
               if ms.size else {f"p{p:g}": None for p in self.percentiles})
        recent = {f"{w:g}s": sum(1 for t, _ in entries if now - t <= w) * 60.0 / w for w in self.rate_windows}
        return {"total": count, "errors": errors, "latency_ms": pct, "latency_samples": int(ms.size),
                "per_minute": {k: round(v, 3) for k, v in recent.items()}}

    # -- persistence -----------------------------------------------------------------------------------------
    def to_doc(self) -> dict[str, Any]:
        with self._lock:
            self.dirty = False
            return {"samples": [list(s) for s in self.samples],
                    "latencies": {k: [list(e) for e in v] for k, v in self.latencies.items()},
                    "counts": dict(self.counts), "errors": dict(self.errors)}

    def load_doc(self, doc: Mapping[str, Any]) -> None:
        """Restore a saved history; malformed entries (another version's document) are skipped, not fatal."""
        samples = [tuple(float(x) for x in s) for s in doc.get("samples", ())
                   if isinstance(s, list) and len(s) == len(SAMPLE_FIELDS) and all(_finite(x) for x in s)]
        with self._lock:
            self.samples.clear()
            self.samples.extend(samples)
            for kind in KINDS:
                entries = doc.get("latencies", {}).get(kind, ())
                self.latencies[kind].clear()
                self.latencies[kind].extend((float(e[0]), float(e[1])) for e in entries
                                            if isinstance(e, list) and len(e) == 2 and all(_finite(x) for x in e))
                self.counts[kind] = int(doc.get("counts", {}).get(kind, 0) or 0)
                self.errors[kind] = int(doc.get("errors", {}).get(kind, 0) or 0)
            self.dirty = False


def rates_between(times: list[float], cumulative: list[float]) -> list[float | None]:
    """Per-minute rate over each interval between consecutive samples (None for the first sample, or when the
    clock went back or a restart reset the counter)."""
    rates: list[float | None] = [None] if times else []
    for i in range(1, len(times)):
        dt, dn = times[i] - times[i - 1], cumulative[i] - cumulative[i - 1]
        rates.append(round(dn * 60.0 / dt, 3) if dt > 0 and dn >= 0 else None)
    return rates


def _finite(x: Any) -> TypeGuard[float]:
    return isinstance(x, (int, float)) and math.isfinite(x)
