"""Dream consolidation (docs/engine.md): a background task that replays (NREM) and explores (REM), never blocking a
tool call, woken within 100 ms by any memory operation or abort_dream.

    Awake ─trigger─▶ NREM (nrem_seconds) ─▶ REM (rem_seconds) ─▶ Waking ─▶ Awake
                      └──── a store/search/curation call or abort_dream: Waking ─▶ Awake (partial report)

The task runs on the event loop and hands every piece of work to a worker thread (reads, the walk) or to the
store's one writer (each commit one small transaction: services.dream_phases); between steps it waits on the
wake event, so a wake request stops it after at most the step in flight. What was committed stays: an abort or
a kill never loses an applied update and never leaves half of one.

When a dream starts by itself (`auto` on): services.dreams.dream_triggers (docs/engine.md#triggers).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

import anyio
import numpy as np

from contextgraph.constitution import Constitution
from contextgraph.errors import DreamError
from contextgraph.log import get_logger
from contextgraph.services.dreams import co_retrieval
from contextgraph.services.dreams import dream_links as links
from contextgraph.services.dreams import dream_phases as phases
from contextgraph.services.dreams.dream_triggers import DreamTriggers
from contextgraph.services.dreams.shortcuts import ShortcutTracker
from contextgraph.services.dreams.shortcuts import describe as describe_shortcuts
from contextgraph.services.engine.activity import ActivityMonitor
from contextgraph.services.engine.cognition import CognitiveState
from contextgraph.services.engine.workspace import WorkspaceService
from contextgraph.services.runtime.store_handle import StoreHandle

_log = get_logger("dream")
PHASES = {"nrem": ("NREM",), "rem": ("REM",), "full": ("NREM", "REM")}
DOCUMENT = "dream_state"


class DreamService(DreamTriggers):
    def __init__(self, constitution: Constitution, storage: StoreHandle, workspace: WorkspaceService,
                 cognition: CognitiveState, activity: ActivityMonitor, auto: bool = False) -> None:
        d = constitution["dream"]
        self.nrem_seconds = float(d["nrem_minutes"]) * 60.0
        self.rem_seconds = float(d["rem_minutes"]) * 60.0
        self.recency_bias = float(d["recency_bias"])
        h = d["hebbian"]
        self.rule = phases.Hebbian(float(h["eta"]), float(h["decay"]), float(h["floor"]), float(h["cap"]))
        self.rem = dict(d["rem"])
        self.link_settings = links.Settings.of(self.rem)
        self.nrem = dict(d["nrem"])
        self.walks = dict(d["rem_walks"])
        self.triggers = {k: float(v) for k, v in d["triggers"].items()}
        self.auto_settings = dict(d["auto"])
        self.auto = auto
        self.storage = storage
        self.workspace = workspace
        self.cognition = cognition
        self.activity = activity
        self.shortcuts = ShortcutTracker(constitution)
        self.co_retrieval = co_retrieval.CoRetrieval(constitution)
        self.state = "Awake"
        self.phase_started: float | None = None
        self.phase_seconds = 0.0
        self.reports: deque[dict[str, Any]] = deque(maxlen=int(d["report_history"]))
        self.current: dict[str, Any] | None = None
        self.last_dream_end: float | None = None  # wall time
        self.memories_at_last_dream = -1
        self.pending_requests: deque[dict[str, Any]] = deque(maxlen=10)
        self.dirty = False
        self._task: asyncio.Task[None] | None = None
        self._monitor: asyncio.Task[None] | None = None
        self._stop = threading.Event()
        self._wake: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake_requested: float | None = None
        self._rng = np.random.default_rng(int(self.walks["seed"]))
        self._seen_seq = -1  # the store's last oplog seq when the triggers last looked, and when it last moved
        self._seq_changed_at: float | None = None
        activity.listeners.append(self._on_activity)

    # -- reads ---------------------------------------------------------------------------------------------
    @property
    def dreaming(self) -> bool:
        return self._task is not None and not self._task.done()

    def idle_reason(self) -> str | None:
        """Why a dream started now would change nothing, or None when it has work: one runs already, or no memory
        was stored since the last one began and no replay waits. Reads only what the engine holds (the pulse
        asks on the event loop): the memory count the last operation's UTL saw, none known yet counts as new."""
        if self.dreaming:
            return "a dream is running"
        known = self.cognition.memory_count
        if known and known == self.memories_at_last_dream and not self.workspace.replay_queue:
            return "nothing stored since the last dream"
        return None

    def phase_description(self) -> str:
        """What get_memetic_status and utl_status report as the consolidation phase."""
        if not self.dreaming:
            return "Awake" if not self.reports else f"Awake (last dream ended {phases.ago(self.last_dream_end)})"
        progress = self.status()["phase_progress"]
        return f"{self.state} ({progress:.0%} of the phase)"

    def status(self) -> dict[str, Any]:
        self.ensure_monitor()
        progress = 0.0
        if self.dreaming and self.phase_started is not None and self.phase_seconds > 0:
            progress = min(1.0, (time.monotonic() - self.phase_started) / self.phase_seconds)
        idle = self.activity.idle_seconds()
        return {
            "state": self.state,
            "phase_progress": round(progress, 4),
            "current": phases.public_report(self.current) if self.dreaming else None,
            "last_report": phases.public_report(self.reports[-1]) if self.reports else None,
            "activity": round(self.activity.level(), 4),
            "idle_activity_threshold": self.triggers["idle_activity"],
            "requests_in_flight": self.activity.in_flight,
            "seconds_since_last_memory_operation": None if idle is None else round(idle, 1),
            "seconds_since_last_dream": (None if self.last_dream_end is None
                                         else round(time.time() - self.last_dream_end, 1)),
            "phase_seconds": {"nrem": self.nrem_seconds, "rem": self.rem_seconds},
            "auto_dream": self.auto,
            "replay_queue_length": len(self.workspace.replay_queue),
            "gpu": "none: dreams run on the CPU, in worker threads",
        }

    async def shortcut_candidates(self, min_confidence: float, limit: int) -> dict[str, Any]:
        store = (await self.storage.ready()).store
        return await anyio.to_thread.run_sync(
            store.graph_read, lambda g: describe_shortcuts(g, self.shortcuts, min_confidence, limit))

    def record_traversal(self, path: list[str], source: str) -> None:
        """A tool walked this graph path (find_causal_path, get_neighborhood): count it for shortcuts."""
        if self.shortcuts.record(path, source):
            self.dirty = True

    # -- control -------------------------------------------------------------------------------------------
    async def trigger(self, phase: str, force: bool, reason: str = "trigger_dream") -> dict[str, Any]:
        await self.storage.ready()
        if self.dreaming:
            raise DreamError(f"A dream is already running ({self.state}); get_dream_status shows its progress and "
                             "abort_dream stops it.", state=self.state)
        level = self.activity.level()
        limit = self.triggers["idle_activity"]
        if level >= limit and not force:
            raise DreamError(f"The system is busy (activity {level:.3f} ≥ {limit}): a dream now would be woken by "
                             "the next memory operation. Wait until activity falls (get_dream_status shows it) or "
                             "pass force=true.", activity=round(level, 4), threshold=limit)
        self._start(phase, reason)
        assert self.current is not None
        return {"started": True, "dream_id": self.current["dream_id"], "phase": phase, "state": self.state,
                "phases": list(PHASES[phase]),
                "planned_seconds": sum(self._seconds(p) for p in PHASES[phase]), "activity": round(level, 4),
                "forced": force and level >= limit,
                "note": "runs in the background; get_dream_status reports progress, any memory operation or "
                        "abort_dream wakes it"}

    async def abort(self, reason: str = "abort_dream") -> dict[str, Any]:
        task = self._task
        if task is None or task.done():
            return {"aborted": False, "state": self.state, "reason": "no dream is running",
                    "last_report": phases.public_report(self.reports[-1]) if self.reports else None}
        started = time.perf_counter()
        self.request_wake(reason)
        await asyncio.wait({task})
        waited_ms = (time.perf_counter() - started) * 1000
        report = self.reports[-1] if self.reports else {}
        return {"aborted": True, "state": self.state, "wake_latency_ms": round(waited_ms, 3),
                "within_budget": waited_ms < 100.0, "partial_report": phases.public_report(report)}

    async def until_awake(self) -> None:
        """Wait for the running dream (if any) to end by itself or be woken."""
        if self._task is not None and not self._task.done():
            await asyncio.wait({self._task})

    def request_wake(self, reason: str) -> None:
        if not self.dreaming or self._stop.is_set():
            return
        self._wake_requested = time.perf_counter()
        if self.current is not None:
            self.current["woken_by"] = reason
        self._stop.set()
        self.state = "Waking"
        if self._loop is not None and self._wake is not None:
            try:
                self._loop.call_soon_threadsafe(self._wake.set)
            except RuntimeError:  # its event loop has closed (a process ending mid-dream): nothing left to wake
                pass

    def _on_activity(self, tool: str) -> None:
        self.request_wake(f"{tool} call")
        self.ensure_monitor()

    def on_request(self, request: dict[str, Any]) -> None:
        """The cognitive state asks for a dream (identity continuity critical, introspection)."""
        if "dream" in str(request.get("kind", "")):
            self.pending_requests.append(request)

    # -- the task ------------------------------------------------------------------------------------------
    def _start(self, phase: str, reason: str) -> None:
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._stop.clear()
        self._wake_requested = None
        self.current = {"dream_id": f"dream-{int(time.time() * 1000)}", "phase": phase, "reason": reason,
                        "started_at": time.time(), "phases_run": [], "cues_replayed": 0, "edges_strengthened": 0,
                        "edges_weakened": 0, "co_retrieved_edges_strengthened": 0, "walks": 0,
                        "blind_spot_edges": [], "shortcut_edges": [], "shared_name_edges": [],
                        "transactions": 0, "replay_queue_drained": 0, "aborted": False}
        self.state = PHASES[phase][0]  # dreaming from now on: the task starts with this phase
        self.phase_started, self.phase_seconds = time.monotonic(), self._seconds(self.state)
        self._task = asyncio.create_task(self._run(PHASES[phase]))

    def _seconds(self, phase: str) -> float:
        return self.nrem_seconds if phase == "NREM" else self.rem_seconds

    async def _pause(self, seconds: float) -> bool:
        """Sleep up to `seconds`; True as soon as a wake is requested."""
        if self._stop.is_set():
            return True
        assert self._wake is not None
        try:
            await asyncio.wait_for(self._wake.wait(), timeout=max(0.0, seconds))
        except TimeoutError:
            pass
        return self._stop.is_set()

    async def _run(self, names: tuple[str, ...]) -> None:
        report = self.current
        assert report is not None
        try:
            for name in names:
                if self._stop.is_set():
                    break
                self.state = name
                self.phase_started, self.phase_seconds = time.monotonic(), self._seconds(name)
                report["phases_run"].append(name)
                await (self._nrem(report) if name == "NREM" else self._rem(report))
        except Exception:  # a failed step ends the dream; what it committed stays
            _log.exception("dream step failed; waking")
            report["error"] = "a step failed (get_system_logs level=error)"
        finally:
            self.state = "Waking"
            report["aborted"] = self._stop.is_set()
            report["ended_at"] = time.time()
            if self._wake_requested is not None:
                report["wake_latency_ms"] = round((time.perf_counter() - self._wake_requested) * 1000, 3)
            self.reports.append(report)
            self.last_dream_end = report["ended_at"]
            self.dirty = True
            self.state = "Awake"
            self.phase_started = None
            _log.info("dream ended", dream_id=report["dream_id"], aborted=report["aborted"],
                      transactions=report["transactions"], wake_latency_ms=report.get("wake_latency_ms"))

    async def _nrem(self, report: dict[str, Any]) -> None:
        store = self.storage.store
        deadline = time.monotonic() + self.nrem_seconds
        batch = int(self.nrem["replay_batch"])
        interval = 60.0 / float(self.nrem["cues_per_minute"]) * batch
        pool = await anyio.to_thread.run_sync(phases.replay_pool, store, max(int(self.nrem["recent_window"]) * 4, 256))
        self.memories_at_last_dream = await anyio.to_thread.run_sync(store.count)
        together = self.co_retrieval.drain()  # first: what the agent retrieved together (services.co_retrieval)
        if together:
            up, touched = await self.storage.writer.submit(co_retrieval.commit, store, together, self.rule)
            self._edges_changed(touched)
            report["transactions"] += 1
            report["co_retrieved_edges_strengthened"] += up
        while time.monotonic() < deadline and pool:
            queued = self.workspace.drain_replay(batch)
            report["replay_queue_drained"] += len(queued)
            picks = phases.recent_sample(pool, batch - len(queued), self.recency_bias, int(self.nrem["recent_window"]),
                                  self._rng)
            cues = list(dict.fromkeys(queued + picks))
            updates = await anyio.to_thread.run_sync(phases.plan_replay, store, cues, int(self.nrem["max_neighbours"]))
            if self._stop.is_set():
                return
            if updates:
                up, down, touched = await self.storage.writer.submit(phases.commit_replay, store, updates,
                                                                     self.rule)
                self._edges_changed(touched)
                report["transactions"] += 1
                report["edges_strengthened"] += up
                report["edges_weakened"] += down
            report["cues_replayed"] += len(cues)
            if await self._pause(min(interval, deadline - time.monotonic())):
                return

    async def _rem(self, report: dict[str, Any]) -> None:
        store = self.storage.store
        deadline = time.monotonic() + self.rem_seconds
        interval = 60.0 / float(self.walks["walks_per_minute"])
        ball = await anyio.to_thread.run_sync(phases.build_ball, store, int(self.walks["sample"]),
                                              int(self.rem["dimensions"]), float(self.rem["curvature"]))
        if ball is not None and not self._stop.is_set():  # once, before the walks (services.dreams.dream_links)
            planned = await anyio.to_thread.run_sync(links.plan, store, ball, self.link_settings,
                                                     float(self.rem["curvature"]), self._stop.is_set)
            if planned and not self._stop.is_set():
                await self._commit(report, "shared_name_edges", links.commit, store, planned, self.link_settings)
        while time.monotonic() < deadline and ball is not None:
            await self._commit(report, "shortcut_edges", phases.commit_shortcuts, store, self.shortcuts, 8)
            result = await anyio.to_thread.run_sync(phases.rem_walk, store, ball, self._rng, self.rem,
                                                    self._stop.is_set)
            report["walks"] += 1
            for run in result.graph_runs:
                self.shortcuts.record(run, "dream_walk")
            if self._stop.is_set():
                return
            if result.blind_spots:
                await self._commit(report, "blind_spot_edges", phases.commit_blind_spots, store, result.blind_spots,
                                   self.rem)
            if await self._pause(min(interval, deadline - time.monotonic())):
                return

    async def _commit(self, report: dict[str, Any], key: str, commit: Callable[..., list[dict[str, Any]]],
                      *args: Any) -> None:
        """One write transaction of new edges on the writer; the edges it made (those with created false were
        there already) go to the report under `key`, their ends to the E8 refresh."""
        made = await self.storage.writer.submit(commit, *args)
        if made:
            report["transactions"] += 1
            report[key].extend(made)
            self._edges_changed(x for e in made if e.get("created", True) for x in (e["source"], e["target"]))

    def _edges_changed(self, memory_ids: Iterable[str]) -> None:
        """Their E8 (graph space) mixes their neighbours by edge weight: queue its refresh (services.e8_refresh)."""
        ids = list(memory_ids)
        if ids:
            self.storage.refresh_e8(ids)

    async def close(self) -> None:
        if self._monitor is not None:
            self._monitor.cancel()
        await self.abort("server closing")

    # -- persistence ---------------------------------------------------------------------------------------
    def to_doc(self) -> dict[str, Any]:
        self.dirty = False
        return {"reports": list(self.reports), "last_dream_end": self.last_dream_end,
                "memories_at_last_dream": self.memories_at_last_dream, "shortcuts": self.shortcuts.to_doc(),
                "co_retrieval": self.co_retrieval.to_doc()}

    def load_doc(self, doc: dict[str, Any]) -> None:
        self.reports.clear()
        self.reports.extend(doc.get("reports") or [])
        self.last_dream_end = doc.get("last_dream_end")
        self.memories_at_last_dream = int(doc.get("memories_at_last_dream", -1))
        self.shortcuts.load_doc(doc.get("shortcuts") or {})
        self.co_retrieval.load_doc(doc.get("co_retrieval") or [])
        self.dirty = False

    @property
    def needs_save(self) -> bool:
        return self.dirty or self.shortcuts.dirty or self.co_retrieval.dirty
