"""The engine state behind every `_cognitive_pulse`: one object, one lock, read in microseconds.

Entropy and coherence are exponentially weighted averages of the per-space ΔS and ΔC of recent memory
operations (docs/utl.md#the-pulse). Before any operation the state is that of an empty store: ΔS = 1 in every space
(everything is novel) and ΔC = 0 (nothing to cohere with), which the Johari rule calls Blind. The global
workspace is empty from start-up, so after `empty_workspace_seconds` the pulse suggests `epistemic_action`.

The memory core calls `record()` for each inject; each record also nudges the Kuramoto network
(services.gwt.OscillatorNetwork, owned here) and scores how well the engine's running learning score predicted
that operation's own (meta_accuracy, the R of C = I·R·D). The pulse reads the network's phase spread φ (after
any idle relaxation owed: the network moves only with operations, docs/decisions.md#d23). The workspace calls
`workspace_occupied()`. Each record also scores the prediction (MetaScore, utl.meta) and moves the SELF_EGO_NODE:
its purpose vector joins the trajectory and identity continuity is recomputed (gwt.ego). Requests for
other subsystems (a dream, an acetylcholine rise) go to the `request_listeners` and are kept in `requests`.

Learning score and meta-cognition (docs/decisions.md#d19): a memory operation that brings its own learning score L
and the engine's prediction L̂ (services.delta_sc: L̂ from E1 alone, before the other spaces were scored) is
scored on those — MetaScore = sigmoid(2(L̂ − L)), meta_accuracy = 1 − mean |L̂ − L| — and the pulse's learning
score is the exponentially weighted average of the operations' own L. An operation without them (older callers)
falls back to the running score as the prediction and an L computed from its ΔS/ΔC with the network's φ.

Persistence: `to_doc()`/`load_doc()`; the memory service writes the document to LMDB at most once per
`persistence.save_interval_seconds` during activity and on close, and loads it when it opens the store. The
document carries the wall-clock time it was written: a process that loads it (the CLI and hook path start one
per call) counts the time elapsed since as idle, so the network relaxes between calls as a server's would
(services.gwt: the agent's clock, docs/decisions.md#d23).
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Sequence
from typing import Any, Protocol, TypeVar

from contextgraph.fingerprint import SPACES
from contextgraph.gwt import ego
from contextgraph.services.engine.gwt import OscillatorNetwork
from contextgraph.utl import learning, meta
from contextgraph.utl.johari import classify
from contextgraph.utl.pulse import PulseRules, pulse, suggested_action

T = TypeVar("T")


class Consolidation(Protocol):
    """What the cognitive state asks of the dream engine (services.dreams.dream.DreamService)."""

    def phase_description(self) -> str: ...

    def idle_reason(self) -> str | None: ...


class CognitiveState:
    def __init__(self, constitution: Any, clock: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], float] = time.time, tools: Collection[str] | None = None) -> None:
        """`tools`: the registered tool names, which every suggested action is resolved against (D16)."""
        utl = constitution["utl"]
        self._clock = clock
        self._wall = wall_clock
        self._lock = threading.Lock()
        self._rules = PulseRules.from_constitution(constitution, tools)
        self._alpha = float(constitution.get("pulse.ewma_alpha"))
        self._stages = utl["lifecycle"]
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
        self._meta_low = float(meta["low_score"])
        self._meta_consecutive = int(meta["consecutive_low"])
        self.meta_scores: deque[float] = deque(maxlen=int(meta["accuracy_window"]))
        ego = constitution["gwt"]["ego"]
        self.identity_bounds = {k: float(v) for k, v in ego["identity"].items()}
        # SELF_EGO_NODE: (wall time, purpose vector, IC) after each operation, oldest dropped first
        self.trajectory: deque[tuple[float, list[float], float]] = deque(maxlen=int(ego["trajectory_max"]))
        self.identity_continuity = 1.0 * self.network.read().r
        # the per-space ΔC of each recent operation: the "actions" the purpose vector is compared with
        self.recent_actions: deque[list[float]] = deque(maxlen=int(ego["actions_window"]))
        # the ego's purpose vector from the north star (services.teleology: the mean PV of recent memories);
        # None until a north star exists, when the per-space coherence ΔC stands in for it
        self.purpose: list[float] | None = None
        # what the engine asked of other subsystems (a dream, an acetylcholine rise), and whether one acted on it
        self.requests: deque[dict[str, Any]] = deque(maxlen=int(constitution["gwt"]["workspace"]["event_history"]))
        self.request_listeners: list[Callable[[dict[str, Any]], None]] = []
        self._consolidation: Consolidation | None = None  # the dream engine, once attached
        self.memory_count = 0
        self.operations = 0
        self.workspace_empty_since: float | None = clock()
        self.high_entropy_since: float | None = None
        self.dirty = False
        # EWMA of the operations' own learning scores (None until an operation brings one)
        self._operation_score: float | None = None
        self._refresh()

    # -- reads ---------------------------------------------------------------------------------------------
    def action_for(self, quadrant: str) -> str:
        """The callable tool a Johari quadrant suggests (D16), for payloads other than the pulse."""
        return self._rules.actions[quadrant]

    def attach_consolidation(self, consolidation: Consolidation) -> None:
        """The dream engine, built after this state (it reads it): its phase for the status tools, and whether a
        dream now would do anything, which the pulse asks before it suggests one."""
        self._consolidation = consolidation

    def consolidation_phase(self) -> str:
        """The dream engine's state (Awake, NREM, REM, Waking)."""
        if self._consolidation is None:
            return "Awake (no dream engine attached)"
        return self._consolidation.phase_description()

    def dream_blocked(self) -> bool:
        """Whether a dream now would change nothing (one runs, or nothing new was stored since the last)."""
        return self._consolidation is not None and self._consolidation.idle_reason() is not None

    def pulse(self) -> dict[str, Any]:
        """The `_cognitive_pulse`: cached ΔS/ΔC averages, the live φ (a bounded lazy advance of the network)
        and the two timers."""
        phi = self.network.phase_spread()
        dream_blocked = self.dream_blocked()
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
                dream_blocked,
            )

    @property
    def lifecycle(self) -> learning.Lifecycle:
        return learning.lifecycle(self.memory_count, self._stages)

    # -- writes --------------------------------------------------------------------------------------------
    def record(self, delta_s: Sequence[float], delta_c: Sequence[float], memory_count: int, *,
               learning_score: float | None = None, predicted_learning_score: float | None = None) -> None:
        """Fold one memory operation's per-space ΔS and ΔC into the averages and restart the timers.
        `learning_score` (the operation's own L, D19) and `predicted_learning_score` (the engine's L̂ before
        scoring it) feed meta-cognition and the pulse's L when given (services.delta_sc.DeltaSc has both)."""
        if len(delta_s) != self.spaces or len(delta_c) != self.spaces:
            raise ValueError(f"need {self.spaces} ΔS and ΔC values, got {len(delta_s)} and {len(delta_c)}")
        a = self._alpha
        self.network.nudge(delta_s)
        phi = self.network.phase_spread()
        r = self.network.read().r
        own = _finite(learning_score)
        predicted_given = _finite(predicted_learning_score)
        with self._lock:
            stage = self.lifecycle
            if own is None:
                actual = learning.learning_score(delta_s, delta_c, self.tau, stage.lambda_s, stage.lambda_c,
                                                 self.emotional_weight, phi, self._emotional_bounds)
            else:
                actual = own
                self._operation_score = (own if self._operation_score is None
                                         else (1 - a) * self._operation_score + a * own)
            # meta-cognition: the engine's prediction of what this operation teaches against what it taught
            predicted = predicted_given if predicted_given is not None else self.learning_score
            self._meta_errors.append(abs(predicted - actual))
            self.meta_scores.append(meta.meta_score(predicted, actual))
            if meta.low_streak(self.meta_scores, self._meta_low) == self._meta_consecutive:
                self._request("introspective_dream", f"{self._meta_consecutive} consecutive MetaScores below "
                              f"{self._meta_low}: the engine under-predicts what operations teach",
                              acetylcholine="raise")
            self.phase_spread = phi
            self.delta_s = [(1 - a) * old + a * new for old, new in zip(self.delta_s, delta_s)]
            self.delta_c = [(1 - a) * old + a * new for old, new in zip(self.delta_c, delta_c)]
            self.memory_count = memory_count
            self.operations += 1
            self.coherence_history.append(sum(t * c for t, c in zip(self.tau, delta_c)))
            self._refresh()
            self.recent_actions.append([round(float(v), 6) for v in delta_c])
            self._ego_step(r)
            self.dirty = True
            if self.entropy > self._rules.high_entropy_threshold:
                if self.high_entropy_since is None:
                    self.high_entropy_since = self._clock()
            else:
                self.high_entropy_since = None

    def _ego_step(self, r: float) -> None:
        """Append the purpose vector to the ego's trajectory and update identity continuity (lock held). Until a
        north star exists the purpose vector is the per-space coherence ΔC: where stored knowledge integrates."""
        previous = self.trajectory[-1][1] if self.trajectory else None
        was = ego.identity_status(self.identity_continuity, self.identity_bounds)
        purpose = [round(v, 6) for v in (self.delta_c if self.purpose is None else self.purpose)]
        self.identity_continuity = ego.identity_continuity(purpose, previous, r)
        self.trajectory.append((time.time(), purpose, round(self.identity_continuity, 6)))
        # one request per fall into Critical, not one per operation while it stays there
        if was != "Critical" and ego.identity_status(self.identity_continuity, self.identity_bounds) == "Critical":
            self._request("dream", f"identity continuity {self.identity_continuity:.3f} below "
                          f"{self.identity_bounds['critical']}")

    def set_purpose(self, purpose: Sequence[float] | None) -> None:
        """The ego's purpose vector from the north star (None: back to the ΔC stand-in)."""
        with self._lock:
            self.purpose = None if purpose is None else [float(v) for v in purpose]
            self.dirty = True

    def _request(self, kind: str, reason: str, **detail: Any) -> None:
        request = {"kind": kind, "reason": reason, "at": time.time(), "applied": False,
                   "note": "no subsystem attached to act on it", **detail}
        # the dream and neuromodulation services act on requests (attached by the composition root)
        for listener in self.request_listeners:
            listener(request)
            request["applied"], request["note"] = True, "passed to the dream / neuromodulation services"
        self.requests.append(request)

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
                "meta_scores": list(self.meta_scores),
                "identity_continuity": self.identity_continuity,
                "trajectory": list(self.trajectory),
                "requests": list(self.requests),
                "recent_actions": list(self.recent_actions),
                "purpose_vector": list(self.delta_c if self.purpose is None else self.purpose),
                "purpose_source": "delta_c" if self.purpose is None else "north_star",
            }

    def set_johari_threshold(self, threshold: float) -> None:
        """The pulse's Johari boundary (ATC's `johari`, services.atc): the quadrant it reports is read with it."""
        with self._lock:
            self._rules = dataclasses.replace(self._rules, johari_threshold=float(threshold))

    def observe_memory_count(self, memory_count: int) -> None:
        """The store's size changed outside an inject (store_memory, forget, merge): keep λ's stage in step."""
        with self._lock:
            if memory_count != self.memory_count:
                self.memory_count = memory_count
                self._refresh()

    # -- persistence (MemoryService loads and saves it with the store) --------------------------------------
    def to_doc(self) -> dict[str, Any]:
        """What survives a restart. Timers on the monotonic clock (empty workspace, high entropy) restart."""
        with self._lock:
            self.dirty = False
            return {
                "version": 1,
                "delta_s": list(self.delta_s), "delta_c": list(self.delta_c),
                "emotional_weight": self.emotional_weight, "operations": self.operations,
                "memory_count": self.memory_count,
                "meta_errors": list(self._meta_errors), "meta_scores": list(self.meta_scores),
                "coherence_history": list(self.coherence_history),
                "trajectory": [list(t) for t in self.trajectory], "identity_continuity": self.identity_continuity,
                "requests": list(self.requests), "recent_actions": list(self.recent_actions),
                "network": self.network.to_doc(), "saved_at": self._wall(),
                "operation_score": self._operation_score,
                "purpose": self.purpose,
            }

    def load_doc(self, doc: dict[str, Any]) -> None:
        if doc.get("version") != 1 or len(doc.get("delta_s", ())) != self.spaces:
            return  # an unknown layout: start fresh rather than misread it
        self.network.load_doc(doc["network"], self._elapsed_since(doc.get("saved_at")))
        with self._lock:
            self.delta_s = [float(v) for v in doc["delta_s"]]
            self.delta_c = [float(v) for v in doc["delta_c"]]
            self.emotional_weight = float(doc["emotional_weight"])
            self.operations = int(doc["operations"])
            self.memory_count = int(doc["memory_count"])
            # replace, never merge: a store reopened in the same process must not double its history
            _replace(self._meta_errors, [float(v) for v in doc["meta_errors"]])
            _replace(self.meta_scores, [float(v) for v in doc["meta_scores"]])
            _replace(self.coherence_history, [float(v) for v in doc["coherence_history"]])
            _replace(self.trajectory, [(float(t), [float(v) for v in pv], float(ic))
                                       for t, pv, ic in doc["trajectory"]])
            _replace(self.requests, list(doc["requests"]))
            _replace(self.recent_actions, [[float(v) for v in a] for a in doc.get("recent_actions", [])])
            self.identity_continuity = float(doc["identity_continuity"])
            self._operation_score = _finite(doc.get("operation_score"))
            purpose = doc.get("purpose")
            self.purpose = [float(v) for v in purpose] if isinstance(purpose, list) and len(purpose) == self.spaces \
                else None
            self._refresh()

    def _elapsed_since(self, saved_at: Any) -> float:
        """Wall-clock seconds since the document was saved (0 without a stamp, or when the clock went back)."""
        saved = _finite(saved_at)
        return 0.0 if saved is None else max(self._wall() - saved, 0.0)

    def workspace_occupied(self, occupied: bool) -> None:
        with self._lock:
            if occupied:
                self.workspace_empty_since = None
            elif self.workspace_empty_since is None:
                self.workspace_empty_since = self._clock()

    def _refresh(self) -> None:
        self.entropy = sum(t * s for t, s in zip(self.tau, self.delta_s))
        self.coherence = sum(t * c for t, c in zip(self.tau, self.delta_c))
        if self._operation_score is not None:  # the operations' own L (D19), averaged
            self.learning_score = self._operation_score
            return
        stage = self.lifecycle
        self.learning_score = learning.learning_score(
            self.delta_s,
            self.delta_c,
            self.tau,
            stage.lambda_s,
            stage.lambda_c,
            self.emotional_weight,
            self.phase_spread,
            self._emotional_bounds,
        )


def utl_status(cognition: CognitiveState, memory_count: int) -> dict[str, Any]:
    """utl_status's payload: every number read from the live engine state and the store's size."""
    cognition.observe_memory_count(memory_count)
    s = cognition.snapshot()
    rules = s["rules"]
    stage = s["lifecycle"]
    quadrant = classify(s["entropy"], s["coherence"], rules.johari_threshold)
    p = rules.precision
    return {
        "lifecycle": {"stage": stage.stage, "lambda_s": stage.lambda_s, "lambda_c": stage.lambda_c},
        "memory_count": memory_count,
        "entropy": round(s["entropy"], p),
        "coherence": round(s["coherence"], p),
        "learning_score": round(s["learning_score"], p),
        "johari_quadrant": quadrant,
        "suggested_action": suggested_action(quadrant, rules, s["now"], s["workspace_empty_since"],
                                             s["high_entropy_since"], cognition.dream_blocked()),
        "phase_spread": round(s["phase_spread"], p),
        "emotional_weight": s["emotional_weight"],
        "operations": s["operations"],
        "per_space": {sp.name: {"delta_s": round(ds, p), "delta_c": round(dc, p)}
                      for sp, ds, dc in zip(SPACES, s["delta_s"], s["delta_c"])},
        "consolidation_phase": cognition.consolidation_phase(),
        "method": "entropy and coherence are EWMAs of the per-space ΔS and ΔC of recent memory operations; the "
                  "learning score is the EWMA of each operation's own L = wₑ·max(0, cos φ)·S^λS·C^λC, φ the "
                  "memory's binding phase spread (docs/utl.md); before any such operation, that formula on the "
                  "averages with the network's phase spread",
    }


def _finite(value: Any) -> float | None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _replace(target: deque[T], values: list[T]) -> None:
    """A bounded history's contents swapped for `values` (its maxlen keeps the newest)."""
    target.clear()
    target.extend(values)
