"""The engine state behind every `_cognitive_pulse`: one object, one lock, read in microseconds.

Entropy and coherence are exponentially weighted averages of the per-space ΔS and ΔC of recent memory
operations (SPEC §8). Before any operation the state is that of an empty store: ΔS = 1 in every space
(everything is novel) and ΔC = 0 (nothing to cohere with), which the Johari rule calls Blind. The global
workspace is empty from start-up, so after `empty_workspace_seconds` the pulse suggests `epistemic_action`.

The memory core calls `record()` for each inject; each record also nudges the Kuramoto network
(services.gwt.OscillatorNetwork, owned here) and scores how well the engine's running learning score predicted
that operation's own (meta_accuracy, the R of C = I·R·D). The pulse reads the network's live phase spread φ,
which advances the oscillators lazily (a few steps at most). The workspace (a later issue) calls
`workspace_occupied()`; until then it stays empty. Nothing here is persisted yet: a restart starts fresh.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from contextgraph.services.gwt import OscillatorNetwork
from contextgraph.utl import learning
from contextgraph.utl.pulse import PulseRules, pulse


class CognitiveState:
    def __init__(self, constitution: Any, clock: Callable[[], float] = time.monotonic) -> None:
        utl = constitution["utl"]
        self._clock = clock
        self._lock = threading.Lock()
        self._rules = PulseRules.from_constitution(constitution)
        self._alpha = float(constitution.get("pulse.ewma_alpha"))
        self._stages = utl["lifecycle"]
        self._gain = float(utl["learning_gain"])
        bounds = utl["emotional_weight"]
        self._emotional_bounds = (float(bounds["min"]), float(bounds["max"]))
        self.spaces = int(utl["spaces"])
        self.tau = learning.normalised([1.0] * self.spaces)
        self.delta_s = [float(utl["empty_store_delta_s"])] * self.spaces
        self.delta_c = [float(utl["empty_store_delta_c"])] * self.spaces
        self.emotional_weight = float(bounds["default"])
        self.network = OscillatorNetwork(constitution, clock)
        self.phase_spread = self.network.phase_spread()  # φ, refreshed from the network on every read
        meta = constitution["gwt"]["meta"]
        self._prior_accuracy = float(meta["prior_accuracy"])
        self._meta_errors: deque[float] = deque(maxlen=int(meta["accuracy_window"]))
        # aggregate coherence of each recent operation: ΔC's Consistency term is 1 − their variance
        self.coherence_history: deque[float] = deque(maxlen=int(meta["accuracy_window"]))
        self.memory_count = 0
        self.operations = 0
        self.workspace_empty_since: float | None = clock()
        self.high_entropy_since: float | None = None
        self._refresh()

    # -- reads ---------------------------------------------------------------------------------------------
    def pulse(self) -> dict[str, Any]:
        """The `_cognitive_pulse`: cached ΔS/ΔC averages, the live φ (a bounded lazy advance of the network)
        and the two timers."""
        phi = self.network.phase_spread()
        with self._lock:
            if phi != self.phase_spread:
                self.phase_spread = phi
                self._refresh()
            return pulse(
                self.entropy,
                self.coherence,
                self.learning_score,
                self._rules,
                self._clock(),
                self.workspace_empty_since,
                self.high_entropy_since,
            )

    @property
    def lifecycle(self) -> learning.Lifecycle:
        return learning.lifecycle(self.memory_count, self._stages)

    # -- writes --------------------------------------------------------------------------------------------
    def record(self, delta_s: Sequence[float], delta_c: Sequence[float], memory_count: int) -> None:
        """Fold one memory operation's per-space ΔS and ΔC into the averages and restart the timers."""
        if len(delta_s) != self.spaces or len(delta_c) != self.spaces:
            raise ValueError(f"need {self.spaces} ΔS and ΔC values, got {len(delta_s)} and {len(delta_c)}")
        a = self._alpha
        self.network.nudge(delta_s, delta_c)
        phi = self.network.phase_spread()
        with self._lock:
            # meta-cognition: the running score is the engine's prediction of what this operation teaches
            stage = self.lifecycle
            actual = learning.learning_score(delta_s, delta_c, self.tau, stage.lambda_s, stage.lambda_c,
                                             self.emotional_weight, phi, self._gain, self._emotional_bounds)
            self._meta_errors.append(abs(self.learning_score - actual))
            self.phase_spread = phi
            self.delta_s = [(1 - a) * old + a * new for old, new in zip(self.delta_s, delta_s)]
            self.delta_c = [(1 - a) * old + a * new for old, new in zip(self.delta_c, delta_c)]
            self.memory_count = memory_count
            self.operations += 1
            self.coherence_history.append(sum(t * c for t, c in zip(self.tau, delta_c)))
            self._refresh()
            if self.entropy > self._rules.high_entropy_threshold:
                if self.high_entropy_since is None:
                    self.high_entropy_since = self._clock()
            else:
                self.high_entropy_since = None

    @property
    def meta_accuracy(self) -> float:
        """1 − mean |L_predicted − L_actual| over the recent operations; the prior before any."""
        with self._lock:
            return self._meta_accuracy()

    def _meta_accuracy(self) -> float:
        if not self._meta_errors:
            return self._prior_accuracy
        return 1.0 - sum(self._meta_errors) / len(self._meta_errors)

    def snapshot(self) -> dict[str, Any]:
        """A consistent copy of the state for the status tools (one lock acquisition)."""
        phi = self.network.phase_spread()
        with self._lock:
            if phi != self.phase_spread:
                self.phase_spread = phi
                self._refresh()
            return {
                "entropy": self.entropy, "coherence": self.coherence, "learning_score": self.learning_score,
                "delta_s": list(self.delta_s), "delta_c": list(self.delta_c), "phase_spread": self.phase_spread,
                "memory_count": self.memory_count, "operations": self.operations,
                "emotional_weight": self.emotional_weight, "lifecycle": self.lifecycle,
                "workspace_empty_since": self.workspace_empty_since, "high_entropy_since": self.high_entropy_since,
                "now": self._clock(), "rules": self._rules,
                "meta_accuracy": self._meta_accuracy(), "meta_samples": len(self._meta_errors),
                "coherence_history": list(self.coherence_history),
            }

    def observe_memory_count(self, memory_count: int) -> None:
        """The store's size changed outside an inject (store_memory, forget, merge): keep λ's stage in step."""
        with self._lock:
            if memory_count != self.memory_count:
                self.memory_count = memory_count
                self._refresh()

    def workspace_occupied(self, occupied: bool) -> None:
        with self._lock:
            if occupied:
                self.workspace_empty_since = None
            elif self.workspace_empty_since is None:
                self.workspace_empty_since = self._clock()

    def _refresh(self) -> None:
        self.entropy = sum(t * s for t, s in zip(self.tau, self.delta_s))
        self.coherence = sum(t * c for t, c in zip(self.tau, self.delta_c))
        stage = self.lifecycle
        self.learning_score = learning.learning_score(
            self.delta_s,
            self.delta_c,
            self.tau,
            stage.lambda_s,
            stage.lambda_c,
            self.emotional_weight,
            self.phase_spread,
            self._gain,
            self._emotional_bounds,
        )


def utl_status(cognition: CognitiveState, memory_count: int) -> dict[str, Any]:
    """utl_status's payload: every number read from the live engine state and the store's size."""
    from contextgraph.fingerprint import SPACES
    from contextgraph.utl.johari import classify

    cognition.observe_memory_count(memory_count)
    s = cognition.snapshot()
    rules = s["rules"]
    stage = s["lifecycle"]
    quadrant = classify(s["entropy"], s["coherence"], rules.johari_threshold)
    p = rules.precision
    from contextgraph.utl.pulse import suggested_action

    return {
        "lifecycle": {"stage": stage.stage, "lambda_s": stage.lambda_s, "lambda_c": stage.lambda_c},
        "memory_count": memory_count,
        "entropy": round(s["entropy"], p),
        "coherence": round(s["coherence"], p),
        "learning_score": round(s["learning_score"], p),
        "johari_quadrant": quadrant,
        "suggested_action": suggested_action(quadrant, rules, s["now"], s["workspace_empty_since"],
                                             s["high_entropy_since"]),
        "phase_spread": round(s["phase_spread"], p),
        "emotional_weight": s["emotional_weight"],
        "operations": s["operations"],
        "per_space": {sp.name: {"delta_s": round(ds, p), "delta_c": round(dc, p)}
                      for sp, ds, dc in zip(SPACES, s["delta_s"], s["delta_c"])},
        "consolidation_phase": "none (dream consolidation is not built yet)",
        "method": "entropy and coherence are EWMAs of the per-space ΔS and ΔC of recent inject_context operations; "
                  "learning score = sigmoid(2·ΣτλSΔS·ΣτλCΔC·wₑ·cos φ) with φ the live Kuramoto phase spread",
    }
