"""The Kuramoto network's live state (SPEC §9): 13 phases, the coupling K and the time of the last read.

Nothing ticks in the background: every read integrates the time elapsed since the previous one (bounded, see
gwt.kuramoto.advance), so an idle server burns no CPU and a busy one pays ~10 µs per 10 ms of dynamics. Memory
operations nudge the phases (CognitiveState.record → nudge). One lock; the math is in gwt.kuramoto.

Not yet persisted: a restart starts from the seeded initial phases and the constitution's default K.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from contextgraph.gwt import kuramoto as kur


@dataclass(frozen=True, slots=True)
class SyncSnapshot:
    phases: tuple[float, ...]
    r: float
    psi: float
    coupling: float
    steps: int  # integration steps this read took (0 when no time had passed)


class OscillatorNetwork:
    def __init__(self, constitution: Any, clock: Callable[[], float] = time.monotonic) -> None:
        k = constitution["gwt"]["kuramoto"]
        self._clock = clock
        self._lock = threading.Lock()
        self.frequencies_hz = tuple(float(f) for f in k["natural_frequencies_hz"])
        self.omegas = kur.natural_frequencies(self.frequencies_hz)
        self.k_min = float(k["coupling"]["min"])
        self.k_max = float(k["coupling"]["max"])
        self.dt = float(k["dt_seconds"])
        self.max_steps = int(k["max_lazy_steps"])
        self.pulse_max_steps = int(k["pulse_max_steps"])
        self.nudge_gain = float(k["nudge_gain"])
        self.predict_seconds = float(k["predict_seconds"])
        self._coupling = kur.clamp_coupling(float(k["coupling"]["default"]), self.k_min, self.k_max)
        rng = np.random.default_rng(int(k["initial_phase_seed"]))
        self._phases = rng.uniform(0.0, kur.TWO_PI, int(k["oscillators"]))
        self._last = clock()
        self._r, self._psi = kur.order_parameter(self._phases)

    def _advance(self, max_steps: int) -> int:
        """Integrate up to now (caller holds the lock)."""
        now = self._clock()
        elapsed = now - self._last
        self._phases, steps = kur.advance(self._phases, self.omegas, self._coupling, elapsed, max_steps, self.dt)
        # Carry the part of a step not yet integrated, so frequent reads do not slow the network down; time
        # beyond the step cap is dropped (see kuramoto.advance).
        self._last = now if steps >= max_steps or elapsed < 0 else self._last + steps * self.dt
        if steps:
            self._r, self._psi = kur.order_parameter(self._phases)
        return steps

    def read(self) -> SyncSnapshot:
        with self._lock:
            steps = self._advance(self.max_steps)
            return SyncSnapshot(tuple(float(p) for p in self._phases), self._r, self._psi, self._coupling, steps)

    def phase_spread(self) -> float:
        """φ for the pulse: advance with the pulse's small step cap, then the circular spread of the phases."""
        with self._lock:
            self._advance(self.pulse_max_steps)
            return kur.phase_spread(self._r)

    @property
    def coupling(self) -> float:
        return self._coupling

    def set_coupling(self, new_k: float) -> tuple[float, float, float]:
        """(old K, applied K, predicted r at the applied K by simulation from the current phases)."""
        with self._lock:
            self._advance(self.max_steps)  # the old K governed the time up to now
            old = self._coupling
            self._coupling = kur.clamp_coupling(new_k, self.k_min, self.k_max)
            phases = self._phases.copy()
            applied = self._coupling
        predicted = kur.predict_r(phases, self.omegas, applied, self.predict_seconds, self.dt)
        return old, applied, predicted

    def nudge(self, delta_s: Sequence[float], delta_c: Sequence[float]) -> None:
        with self._lock:
            # the pulse's small cap: this runs inside inject_context, whose budget is 40 ms
            self._advance(self.pulse_max_steps)
            self._phases = kur.nudge(self._phases, delta_s, delta_c, self.nudge_gain)
            self._r, self._psi = kur.order_parameter(self._phases)


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
        "units": {"phases": "rad", "natural_freqs": "rad/s (Hz normalised to a 1 Hz mean, times 2π)"},
    }


def consciousness_state(cognition: Any, states: dict[str, float]) -> dict[str, Any]:
    from contextgraph.gwt import consciousness as cs

    snap = cognition.network.read()
    state = cognition.snapshot()
    purpose = np.asarray(state["delta_c"], dtype=np.float64)
    parts = cs.consciousness(snap.r, state["meta_accuracy"], purpose)
    return {
        "C": round(parts["C"], 6),
        "I": round(parts["I"], 6),
        "R": round(parts["R"], 6),
        "D": round(parts["D"], 6),
        "state": cs.state(parts["C"], states),
        "r": round(snap.r, 6),
        "meta_accuracy": round(state["meta_accuracy"], 6),
        "meta_samples": state["meta_samples"],
        "purpose_vector": [round(v, 6) for v in purpose.tolist()],
        "thresholds": dict(states),
        "sources": {
            "I": "the Kuramoto order parameter r, integrated up to this call",
            "R": "sigmoid(4·meta_accuracy − 2); meta_accuracy = 1 − mean |L_predicted − L_actual| over the recent "
                 "inject operations, where L_predicted is the engine's running learning score before the "
                 "operation and L_actual the operation's own (prior 0.5 before any)",
            "D": "normalised Shannon entropy of the purpose vector. Until the north star exists (teleological "
                 "issue) the purpose vector is the per-space coherence ΔC (EWMA of recent operations): which "
                 "spaces the stored knowledge integrates in. An empty store has none, so D = 0 and C = 0",
        },
    }
