"""The global workspace's competition (docs/engine.md): which memory holds attention, as a pure state step.

Candidates are memories the last operation touched, each with r_m and ψ_m (its binding with the current
context, gwt.binding), importance and alignment. Those with r_m ≥ the enter threshold, bound on the agreeing
side (ψ_m < π/2: a unanimous "this is not it" binds as tightly, and must not enter), compete; the winner is the
highest r_m × importance × alignment (ties: the lower id, so the step is deterministic). The winner is
broadcast for `broadcast_seconds` and then holds the workspace until it is displaced by a stronger candidate or
its own r_m, re-measured against a newer context, falls below the exit threshold (hysteresis: enter 0.8,
exit 0.7, so a memory on the edge does not flicker in and out).

Events:
    enter     a memory takes the workspace (the caller raises dopamine)
    exit      the active memory leaves: its r fell below the exit threshold, or a stronger one displaced it
              (the caller queues it for dream replay)
    conflict  two or more candidates above the enter threshold at once (the caller suggests critique_context)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Literal

EventKind = Literal["enter", "exit", "conflict"]


@dataclass(frozen=True, slots=True)
class Candidate:
    memory_id: str
    r: float
    importance: float
    alignment: float
    psi: float = 0.0  # mean binding phase: < π/2 when the spaces' verdict is agreement

    @property
    def agrees(self) -> bool:
        return math.isfinite(self.psi) and self.psi < math.pi / 2

    @property
    def score(self) -> float:
        return _unit(self.r) * _unit(self.importance) * _unit(self.alignment)


@dataclass(frozen=True, slots=True)
class Event:
    kind: EventKind
    at: float
    memory_id: str | None
    r: float
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Workspace:
    active: Candidate | None = None
    entered_at: float | None = None
    broadcast_until: float | None = None

    def broadcasting(self, now: float) -> bool:
        return self.broadcast_until is not None and now < self.broadcast_until


def _unit(x: float) -> float:
    return min(max(float(x), 0.0), 1.0) if math.isfinite(x) else 0.0


def rank(candidates: list[Candidate], enter: float) -> list[Candidate]:
    """Candidates at or above the enter threshold, best first."""
    eligible = [c for c in candidates if _unit(c.r) >= enter and c.agrees]
    return sorted(eligible, key=lambda c: (-c.score, c.memory_id))


def enter(ws: Workspace, winner: Candidate, now: float, broadcast_seconds: float) -> tuple[Workspace, list[Event]]:
    """Put `winner` in the workspace (forced or by competition), displacing the active memory if different."""
    events: list[Event] = []
    if ws.active is not None and ws.active.memory_id != winner.memory_id:
        events.append(Event("exit", now, ws.active.memory_id, ws.active.r,
                            {"reason": "displaced", "by": winner.memory_id}))
    if ws.active is not None and ws.active.memory_id == winner.memory_id:
        # the same memory wins again: refresh its numbers and broadcast again, no new enter event
        return Workspace(winner, ws.entered_at, now + broadcast_seconds), events
    events.append(Event("enter", now, winner.memory_id, winner.r, {"score": winner.score}))
    return Workspace(winner, now, now + broadcast_seconds), events


def step(ws: Workspace, candidates: list[Candidate], now: float, *, enter_threshold: float,
         exit_threshold: float, broadcast_seconds: float) -> tuple[Workspace, list[Event]]:
    """One competition after an operation. A candidate with the active memory's id re-measures it."""
    events: list[Event] = []
    active = ws.active
    if active is not None:
        remeasured = next((c for c in candidates if c.memory_id == active.memory_id), None)
        if remeasured is not None:
            active = remeasured
            ws = replace(ws, active=active)
            if _unit(active.r) < exit_threshold or not active.agrees:
                reason = "r below exit threshold" if active.agrees else "bound on the disagreeing side"
                events.append(Event("exit", now, active.memory_id, active.r, {"reason": reason}))
                ws = Workspace()
    ranked = rank(candidates, enter_threshold)
    if len(ranked) >= 2:
        events.append(Event("conflict", now, ranked[0].memory_id, ranked[0].r,
                            {"memories": [c.memory_id for c in ranked[:5]],
                             "r": [round(c.r, 6) for c in ranked[:5]]}))
    if ranked:
        winner = ranked[0]
        if ws.active is None or winner.memory_id == ws.active.memory_id or winner.score > ws.active.score:
            ws, entered = enter(ws, winner, now, broadcast_seconds)
            events += entered
    return ws, events
