"""The Kuramoto network's live state (docs/engine.md#kuramoto-network): 13 phases and the coupling K, on the
agent's clock (docs/decisions.md#d23).

Operations drive the oscillators: each memory operation integrates `operation_seconds` of the Kuramoto dynamics
(natural frequencies and coupling) and then pulls each space's phase `nudge_gain` of the way toward the memory's
own phase in that space, π·ΔSᵢ (its binding phase, D19). r then says how far the spaces agreed about the
session's recent memory work. Between operations nothing moves: the state holds for `rest.hold_seconds` idle,
then relaxes toward the rest configuration (the seeded phases drawn together to `rest.r` about π/2, the phase
of a memory of typical novelty) with a half-life of
`rest.half_life_seconds`. Nothing ticks in the background; reads apply the relaxation lazily. A wall-clock
network returned to oscillator noise within seconds of any operation, so r, C and identity continuity said
nothing about the work. One lock; the math is in gwt.kuramoto.

Persisted with the engine state (services.cognition.to_doc): phases, K and the idle time survive a restart.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from contextgraph.constitution import Constitution
from contextgraph.gwt import consciousness as cs
from contextgraph.gwt import ego
from contextgraph.gwt import kuramoto as kur


@dataclass(frozen=True, slots=True)
class SyncSnapshot:
    phases: tuple[float, ...]
    r: float
    psi: float
    coupling: float
    steps: int  # integration steps the last operation took (the network moves only with operations)


class OscillatorNetwork:
    def __init__(self, constitution: Constitution, clock: Callable[[], float] = time.monotonic) -> None:
        k = constitution["gwt"]["kuramoto"]
        self._clock = clock
        self._lock = threading.Lock()
        self.frequencies_hz = tuple(float(f) for f in k["natural_frequencies_hz"])
        self.omegas = kur.natural_frequencies(self.frequencies_hz)
        self.k_min = float(k["coupling"]["min"])
        self.k_max = float(k["coupling"]["max"])
        self.dt = float(k["dt_seconds"])
        self.operation_seconds = float(k["operation_seconds"])
        self.nudge_gain = float(k["nudge_gain"])
        self.predict_seconds = float(k["predict_seconds"])
        rest = k["rest"]
        self.rest_r = float(rest["r"])
        self.hold_seconds = float(rest["hold_seconds"])
        self.half_life = float(rest["half_life_seconds"])
        self.measured_r = [tuple(map(float, p)) for p in k.get("measured_r", ())] or None
        self._coupling = kur.clamp_coupling(float(k["coupling"]["default"]), self.k_min, self.k_max)
        rng = np.random.default_rng(int(k["initial_phase_seed"]))
        self.rest_phases = kur.contract(rng.uniform(0.0, kur.TWO_PI, int(k["oscillators"])), self.rest_r,
                                        about=0.5 * np.pi)
        self._phases = self.rest_phases.copy()
        self._active = clock()  # the last operation: idle time counts from here
        self._relaxed = self._active  # relaxation is applied up to this time
        self._steps = 0
        self._r, self._psi = kur.order_parameter(self._phases)

    def _relax(self) -> None:
        """Apply the idle relaxation owed up to now (caller holds the lock): none during the hold."""
        now = self._clock()
        start = max(self._relaxed, self._active + self.hold_seconds)
        if now <= start:
            return
        factor = 0.5 ** ((now - start) / self.half_life) if self.half_life > 0 else 0.0
        self._phases = kur.relax(self._phases, self.rest_phases, factor)
        self._relaxed = now
        self._r, self._psi = kur.order_parameter(self._phases)

    def read(self) -> SyncSnapshot:
        with self._lock:
            self._relax()
            return SyncSnapshot(tuple(float(p) for p in self._phases), self._r, self._psi, self._coupling,
                                self._steps)

    def phase_spread(self) -> float:
        """φ for the pulse: the circular spread of the phases (after any idle relaxation owed)."""
        with self._lock:
            self._relax()
            return kur.phase_spread(self._r)

    @property
    def coupling(self) -> float:
        return self._coupling

    def set_coupling(self, new_k: float) -> tuple[float, float, float]:
        """(old K, applied K, predicted r at the applied K by simulation from the current phases)."""
        with self._lock:
            old = self._coupling
            self._coupling = kur.clamp_coupling(new_k, self.k_min, self.k_max)
            phases = self._phases.copy()
            applied = self._coupling
        predicted = kur.predict_r(phases, self.omegas, applied, self.predict_seconds, self.dt, self.measured_r)
        return old, applied, predicted

    def nudge(self, delta_s: Sequence[float]) -> None:
        """One memory operation: `operation_seconds` of the dynamics, then each space's phase pulled toward the
        memory's own (kuramoto.memory_phases)."""
        with self._lock:
            self._relax()
            self._phases, self._steps = kur.advance(self._phases, self.omegas, self._coupling,
                                                    self.operation_seconds, int(self.operation_seconds / self.dt) + 1,
                                                    self.dt)
            self._phases = kur.pull(self._phases, kur.memory_phases(delta_s), self.nudge_gain)
            self._active = self._relaxed = self._clock()
            self._r, self._psi = kur.order_parameter(self._phases)

    def to_doc(self) -> dict[str, Any]:
        with self._lock:
            self._relax()
            now = self._clock()
            return {"phases": [float(p) for p in self._phases], "coupling": self._coupling,
                    "idle_seconds": max(now - self._active, 0.0), "relaxed_seconds": max(now - self._relaxed, 0.0)}

    def load_doc(self, doc: dict[str, Any], elapsed: float = 0.0) -> None:
        """Restore phases, K and the idle time. `elapsed`: seconds since the document was saved (the engine passes
        the wall-clock time); they count as idle, so a process per call (CLI, hooks) relaxes like a server that
        sat idle as long."""
        phases = np.asarray(doc.get("phases", ()), dtype=np.float64)
        if phases.shape != self._phases.shape or not np.all(np.isfinite(phases)):
            return
        owed = max(float(elapsed), 0.0) if elapsed == elapsed else 0.0
        with self._lock:
            self._phases = np.mod(phases, kur.TWO_PI)
            self._coupling = kur.clamp_coupling(float(doc.get("coupling", self._coupling)), self.k_min, self.k_max)
            now = self._clock()
            self._active = now - owed - _seconds(doc.get("idle_seconds"))
            self._relaxed = now - owed - _seconds(doc.get("relaxed_seconds"))
            self._r, self._psi = kur.order_parameter(self._phases)


def _seconds(value: Any) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return 0.0
    return v if v == v and 0.0 <= v < float("inf") else 0.0


# -- status views (read by tools/gwt.py) ------------------------------------------------------------------------
def kuramoto_sync(network: OscillatorNetwork) -> dict[str, Any]:
    snap = network.read()
    return {
        "r": round(snap.r, 6),
        "psi": round(snap.psi, 6),
        "phases": [round(p, 6) for p in snap.phases],
        "coupling": snap.coupling,
        "coupling_bounds": {"min": network.k_min, "max": network.k_max},
        "natural_freqs": [round(float(w), 6) for w in network.omegas],
        "natural_freqs_hz": list(network.frequencies_hz),
        "phase_spread": round(kur.phase_spread(snap.r), 6),
        "steps_integrated": snap.steps,
        "units": {"phases": "rad", "natural_freqs": "rad/s: Hz normalised to a mean of 1 rad/s (docs/engine.md)"},
    }


def consciousness_state(cognition: Any, states: dict[str, float], workspace: Any = None) -> dict[str, Any]:
    snap = cognition.network.read()
    state = cognition.snapshot()
    purpose = np.asarray(state["purpose_vector"], dtype=np.float64)
    parts = cs.consciousness(snap.r, state["meta_accuracy"], purpose)
    return {
        "C": round(parts["C"], 6),
        "I": round(parts["I"], 6),
        "R": round(parts["R"], 6),
        "D": round(parts["D"], 6),
        "state": cs.state(parts["C"], states, snap.r),
        "r": round(snap.r, 6),
        "meta_accuracy": round(state["meta_accuracy"], 6),
        "meta_samples": state["meta_samples"],
        "purpose_vector": [round(v, 6) for v in purpose.tolist()],
        "purpose_source": state["purpose_source"],
        "meta_score": round(state["meta_scores"][-1], 6) if state["meta_scores"] else None,
        "differentiation": round(parts["D"], 6),
        "identity": {"continuity": round(state["identity_continuity"], 6),
                     "status": ego.identity_status(state["identity_continuity"], cognition.identity_bounds)},
        "workspace": None if workspace is None else {
            "active_memory": workspace.active_id,
            "empty_for_seconds": (None if state["workspace_empty_since"] is None
                                  else round(state["now"] - state["workspace_empty_since"], 3))},
        "thresholds": dict(states),
        "sources": {
            "I": "the Kuramoto order parameter r: how far the spaces agreed about the recent memory operations, "
                 "which drive the network (it holds between them, then relaxes toward rest)",
            "R": "sigmoid(4·meta_accuracy − 2); meta_accuracy = 1 − mean |L_predicted − L_actual| over the recent "
                 "inject operations, where L_predicted is the engine's running learning score before the "
                 "operation and L_actual the operation's own (prior 0.5 before any)",
            "D": "normalised Shannon entropy of the purpose vector: once auto_bootstrap_north_star has run, the "
                 "mean purpose vector (per-space alignment to the north star) of recent memories; before, the "
                 "per-space coherence ΔC (EWMA of recent operations) stands in (purpose_source says which). An "
                 "empty store has none, so D = 0 and C = 0",
        },
    }


def ego_state(cognition: Any) -> dict[str, Any]:
    """get_ego_state: the SELF_EGO_NODE read from the engine (purpose vector, identity, trajectory)."""
    state = cognition.snapshot()
    purpose = state["purpose_vector"]
    trajectory = state["trajectory"]
    bounds = cognition.identity_bounds
    ic = state["identity_continuity"]
    drift = None
    if len(trajectory) >= 2:
        drift = round(1.0 - ego.cosine(purpose, trajectory[0][1]), 6)
    return {
        "purpose_vector": [round(v, 6) for v in purpose],
        "purpose_source": state["purpose_source"],
        "identity_continuity": round(ic, 6),
        "identity_status": ego.identity_status(ic, bounds),
        "identity_thresholds": bounds,
        "coherence_with_actions": round(ego.coherence_with_actions(purpose, state["recent_actions"]), 6),
        "actions_compared": len(state["recent_actions"]),
        "trajectory_length": len(trajectory),
        "trajectory_max": cognition.trajectory.maxlen,
        "trajectory_tail": [{"at": t, "identity_continuity": ic_t, "purpose_vector": pv}
                            for t, pv, ic_t in trajectory[-3:]],
        "drift_from_oldest": drift,
        "requests": [r for r in state["requests"] if r["kind"] == "dream"][-5:],
        "sources": {
            "purpose_vector": "the mean purpose vector (per-space alignment to the north star) of recent "
                              "memories once auto_bootstrap_north_star has run; before, the per-space coherence "
                              "ΔC (EWMA of recent operations) stands in (purpose_source says which)",
            "identity_continuity": "cos(PV_t, PV_t-1) × r (Kuramoto order parameter), after each operation",
            "coherence_with_actions": "mean cosine of the purpose vector with the per-space ΔC of the last "
                                      f"{cognition.recent_actions.maxlen} operations",
            "drift_from_oldest": "1 − cosine of the purpose vector now and at the oldest trajectory point",
        },
    }
