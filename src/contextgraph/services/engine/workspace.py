"""The global workspace's live state (docs/engine.md): which memory holds attention, its broadcast, and what happened.

Every search and inject hands its results here with their per-space agreement with the query (or the injected
memory): that fingerprint becomes the *context*, each result a candidate with r_m = the binding of its 13
agreements (gwt.binding), and one competition runs (gwt.workspace.step). The cognitive state is told whether
the workspace is occupied, which drives the pulse's 5-second empty-workspace rule.

What the events drive: an enter raises dopamine (services.neuromodulation, through `on_enter`), an exit
queues the memory for dream replay (the queue is kept and persisted; the dream's NREM drains it), a conflict
names the competing memories and suggests critique_context.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np

from contextgraph.constitution import Constitution
from contextgraph.fingerprint import Fingerprint
from contextgraph.gwt import workspace as ws
from contextgraph.gwt.binding import binding_batch
from contextgraph.services.engine.cognition import CognitiveState

NO_NORTH_STAR_ALIGNMENT = 1.0  # no north star yet: alignment cannot rank, so it is neutral for every memory


class WorkspaceService:
    def __init__(self, constitution: Constitution, cognition: CognitiveState,
                 clock: Callable[[], float] = time.monotonic, wall: Callable[[], float] = time.time,
                 on_enter: Callable[[str], str] | None = None) -> None:
        w = constitution["gwt"]["workspace"]
        self.enter_threshold = float(w["enter_threshold"])
        self.exit_threshold = float(w["exit_threshold"])
        self.broadcast_seconds = float(w["broadcast_ms"]) / 1000.0
        self.dopamine_on_enter = float(w["dopamine_on_enter"])
        self.min_candidates = int(w["min_candidates"])
        self._history = int(w["event_history"])
        self._cognition = cognition
        self._clock = clock
        self._wall = wall
        self._lock = threading.Lock()
        self._state = ws.Workspace()
        self._context: Fingerprint | None = None  # the fingerprint of the last operation: what candidates bind against
        self._reference: dict[int, Any] = {}
        self._conflict: list[str] = []  # the memories competing above the threshold in the last competition
        self._candidates: list[ws.Candidate] = []
        self._events: deque[dict[str, Any]] = deque(maxlen=self._history)
        self.replay_queue: deque[dict[str, Any]] = deque(maxlen=self._history)
        self.counts = {"enter": 0, "exit": 0, "conflict": 0, "competitions": 0, "skipped": 0}
        self.dopamine_requested = 0.0
        self.dirty = False  # events, counts or the replay queue changed since the last save
        self.on_enter = on_enter  # memory id → what the neuromodulators applied

    # -- operations ----------------------------------------------------------------------------------------
    def observe(self, context: Fingerprint, found: Sequence[tuple[str, Sequence[float], float]],
                reference: dict[int, Any] | None = None,
                alignments: Sequence[float] | None = None) -> list[dict[str, Any]]:
        """One competition among `found` = (memory id, 13 agreements, importance) against `context`; `reference`
        holds each space's scores of all the operation's candidates (what a later broadcast is measured in)."""
        r, psi = binding_batch(np.asarray([a for _, a, _ in found], dtype=np.float64)) if found else ((), ())
        # `alignments`: each found memory's alignment to the north star (services.teleology); none yet: neutral
        aligned = [NO_NORTH_STAR_ALIGNMENT] * len(found) if alignments is None else [float(a) for a in alignments]
        candidates = [ws.Candidate(memory_id, float(rm), float(importance), a, float(pm))
                      for (memory_id, _, importance), rm, pm, a in zip(found, r, psi, aligned)]
        with self._lock:
            self._context = context
            self._reference = reference or {}
            self._candidates = sorted(candidates, key=lambda c: (-c.r, c.memory_id))[:10]
            if len(candidates) < self.min_candidates:
                # a standing among one or two is no standing: every space ranks a lone result first
                self.counts["skipped"] += 1
                return []
            self.counts["competitions"] += 1
            self.dirty = True
            self._state, events = ws.step(self._state, candidates, self._clock(),
                                          enter_threshold=self.enter_threshold, exit_threshold=self.exit_threshold,
                                          broadcast_seconds=self.broadcast_seconds)
            recorded = self._record(events)
            # conflicts are about this competition: an old one in the event history is no longer current
            self._conflict = next((e["memories"] for e in recorded if e["kind"] == "conflict"), [])
            occupied = self._state.active is not None
        self._cognition.workspace_occupied(occupied)
        return recorded

    def broadcast(self, memory_id: str, r: float | None, importance: float, alignment: float, force: bool,
                  psi: float = 0.0) -> dict[str, Any]:
        """trigger_workspace_broadcast: put one memory in the workspace if its r_m passes the enter threshold on
        the agreeing side, or regardless with `force`. `r`, `psi`: its binding with the current context (r None:
        no context yet)."""
        candidate = ws.Candidate(memory_id, 0.0 if r is None else r, importance, alignment, psi)
        reason = None
        if r is None:
            reason = ("no context to measure r_m against: no search or inject with results has run since the "
                      "server started")
        elif r < self.enter_threshold:
            reason = f"r_m = {r:.4f} is below the workspace threshold {self.enter_threshold}"
        elif not candidate.agrees:
            reason = (f"r_m = {r:.4f}, but the spaces agree that this memory does not fit the current context "
                      f"(mean binding phase {psi:.3f} ≥ π/2)")
        if reason is not None and not force:
            return {"broadcast": False, "memory_id": memory_id, "r": None if r is None else round(r, 6),
                    "threshold": self.enter_threshold, "reason": reason + "; pass force=true to broadcast anyway"}
        with self._lock:
            self._state, events = ws.enter(self._state, candidate, self._clock(), self.broadcast_seconds)
            recorded = self._record(events, forced=reason is not None)
        self._cognition.workspace_occupied(True)
        return {"broadcast": True, "memory_id": memory_id, "r": None if r is None else round(r, 6),
                "score": round(candidate.score, 6), "forced": reason is not None, "threshold": self.enter_threshold,
                "broadcast_ms": self.broadcast_seconds * 1000, "events": recorded,
                **({"note": reason} if reason else {})}

    def drain_replay(self, limit: int) -> list[str]:
        """Take up to `limit` memories off the dream replay queue, oldest first (the dream's NREM replays them)."""
        with self._lock:
            taken = [self.replay_queue.popleft()["memory_id"] for _ in range(min(limit, len(self.replay_queue)))]
            if taken:
                self.dirty = True
        return taken

    def _record(self, events: list[ws.Event], forced: bool = False) -> list[dict[str, Any]]:
        """Events as dicts with wall-clock times, with what each calls for (caller holds the lock)."""
        out = []
        for event in events:
            item = {"kind": event.kind, "memory_id": event.memory_id, "r": round(event.r, 6), "at": self._wall(),
                    **event.detail}
            if event.kind == "enter":
                self.dopamine_requested += self.dopamine_on_enter
                # services.neuromodulation raises dopamine (set by the composition root); without it, recorded only
                item["dopamine"] = (self.on_enter(str(event.memory_id)) if self.on_enter is not None
                                    else f"+{self.dopamine_on_enter} requested (no neuromodulation attached)")
                if forced:
                    item["forced"] = True
            elif event.kind == "exit":
                self.replay_queue.append({"memory_id": event.memory_id, "r": round(event.r, 6), "at": item["at"]})
                item["queued_for_replay"] = True
            elif event.kind == "conflict":
                item["suggested_action"] = "critique_context"
            self.counts[event.kind] += 1
            self._events.append(item)
            self.dirty = True
            out.append(item)
        return out

    # -- reads ---------------------------------------------------------------------------------------------
    @property
    def context(self) -> tuple[Any, dict[int, Any]]:
        """(fingerprint, per-space candidate scores) of the last operation; (None, {}) before any."""
        with self._lock:
            return self._context, self._reference

    @property
    def active_id(self) -> str | None:
        with self._lock:
            return self._state.active.memory_id if self._state.active else None

    def status(self) -> dict[str, Any]:
        snap = self._cognition.snapshot()
        with self._lock:
            now = self._clock()
            state = self._state
            candidates = list(self._candidates)
            conflict = list(self._conflict)
            events = list(self._events)[-10:]
            replay = list(self.replay_queue)[-10:]
            counts = dict(self.counts)
        active = state.active
        empty_since = snap["workspace_empty_since"]
        return {
            "active_memory": None if active is None else {
                "memory_id": active.memory_id, "r": round(active.r, 6), "importance": active.importance,
                "alignment": active.alignment, "score": round(active.score, 6),
                "seconds_in_workspace": round(now - state.entered_at, 3) if state.entered_at is not None else None},
            "is_broadcasting": state.broadcasting(now),
            "broadcast_remaining_ms": round(max(0.0, (state.broadcast_until or now) - now) * 1000, 1),
            "coherence_threshold": self.enter_threshold,
            "exit_threshold": self.exit_threshold,
            "candidates": [{**asdict(c), "r": round(c.r, 6), "psi": round(c.psi, 6), "score": round(c.score, 6),
                            "agrees": c.agrees, "eligible": c.r >= self.enter_threshold and c.agrees}
                           for c in candidates],
            "min_candidates": self.min_candidates,
            "conflict_memories": conflict,
            "empty_for_seconds": None if empty_since is None else round(snap["now"] - empty_since, 3),
            "recent_events": events,
            "replay_queue": replay,
            "replay_queue_length": len(self.replay_queue),
            "counts": counts,
            "alignment_source": "each candidate's alignment to the north star (its purpose vector's weighted mean, "
                                "services.teleology); 1.0 for every memory until auto_bootstrap_north_star has run",
        }

    # -- persistence (services.engine_store) ---------------------------------------------------------------
    def to_doc(self) -> dict[str, Any]:
        with self._lock:
            self.dirty = False
            return {"replay_queue": list(self.replay_queue), "events": list(self._events),
                    "counts": dict(self.counts), "dopamine_requested": self.dopamine_requested}

    def load_doc(self, doc: dict[str, Any]) -> None:
        with self._lock:  # replace, never merge (a store reopened in one process)
            self.replay_queue.clear()
            self.replay_queue.extend(doc.get("replay_queue", []))
            self._events.clear()
            self._events.extend(doc.get("events", []))
            self.counts.update(doc.get("counts", {}))
            self.dopamine_requested = float(doc.get("dopamine_requested", 0.0))
            self.dirty = False
