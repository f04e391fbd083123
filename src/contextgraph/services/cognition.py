"""The engine state behind every `_cognitive_pulse`: one object, one lock, read in microseconds.

Entropy and coherence are exponentially weighted averages of the per-space ΔS and ΔC of recent memory
operations (SPEC §8). Before any operation the state is that of an empty store: ΔS = 1 in every space
(everything is novel) and ΔC = 0 (nothing to cohere with), which the Johari rule calls Blind. The global
workspace is empty from start-up, so after `empty_workspace_seconds` the pulse suggests `epistemic_action`.

Later issues feed this object: the memory core calls `record()` for each store, the Kuramoto network sets
`phase_spread`, the workspace calls `workspace_occupied()`. Until then these inputs hold their initial values,
and the pulse reports exactly that state.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

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
        self.phase_spread = 0.0  # φ; the Kuramoto network (cognitive-engine issue) drives it
        self.memory_count = 0
        self.operations = 0
        self.workspace_empty_since: float | None = clock()
        self.high_entropy_since: float | None = None
        self._refresh()

    # -- reads ---------------------------------------------------------------------------------------------
    def pulse(self) -> dict[str, Any]:
        """The `_cognitive_pulse`: cached numbers plus the two timers; no computation beyond a comparison."""
        with self._lock:
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
        with self._lock:
            self.delta_s = [(1 - a) * old + a * new for old, new in zip(self.delta_s, delta_s)]
            self.delta_c = [(1 - a) * old + a * new for old, new in zip(self.delta_c, delta_c)]
            self.memory_count = memory_count
            self.operations += 1
            self._refresh()
            if self.entropy > self._rules.high_entropy_threshold:
                if self.high_entropy_since is None:
                    self.high_entropy_since = self._clock()
            else:
                self.high_entropy_since = None

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
