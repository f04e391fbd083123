"""Meta-UTL (docs/engine.md#meta-utl): the engine learns its own λ from how well it predicts what an operation teaches.

Every stored memory brings its learning score L and the engine's prediction L̂ (services.delta_sc: L̂ from E1
alone, before the other spaces are scored), both at the λ this service served, with what each is made of
(d = ln S − ln C, so the search can rescore them at another λ: calibration.meta_lambda). An error |L − L̂| above the
threshold moves λ_S by α·(L − L̂) (calibration.meta_lambda), λ_C = 1 − λ_S, within the bounds; α is
acetylcholine's level once the neuromodulation service is attached (`alpha_source`), the constitution's constant
until then (the status says which). λ is kept as an offset from the lifecycle stage's prior, so a stage change
moves λ with the table and keeps what was learned. Meta-accuracy (1 − mean |L − L̂|) below the floor over a full
window of operations escalates to a Bayesian search of λ_S on that window (a GP with expected improvement,
calibration.bayes), at most once per window; trigger_lambda_recalibration runs the same search now. Every
adjustment is logged with its reason; the state is an engine part (services.engine_state).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

from contextgraph.background import start_thread
from contextgraph.calibration import bayes
from contextgraph.calibration.meta_lambda import accuracy, lambda_objective, lambda_step, log_ratio, rescale
from contextgraph.constitution import Constitution
from contextgraph.errors import UtlError
from contextgraph.log import get_logger
from contextgraph.utl.learning import Lifecycle, ScoreParts, lifecycle

_log = get_logger("utl")
_P = 6


class MetaLearningService:
    document = "meta_learning"

    def __init__(self, constitution: Constitution, clock: Callable[[], float] = time.time,
                 background: bool = True, alpha_source: Callable[[], float] | None = None) -> None:
        m = constitution["meta_utl"]
        self._settings = m
        self._stages = constitution["utl"]["lifecycle"]
        self.alpha_constant = float(m["alpha"])
        self.alpha_source = alpha_source  # acetylcholine's level; None: the constitution's constant α
        self.error_threshold = float(m["error_threshold"])
        self.lo, self.hi = float(m["lambda_bounds"]["min"]), float(m["lambda_bounds"]["max"])
        self.floor = float(m["accuracy_floor"])
        self.window_size = int(m["window"])
        self.prior_weight = float(m["prior_weight"])
        self.clock = clock
        self.background = background  # the escalation's search off the caller's thread
        self._lock = threading.RLock()
        self.offset = 0.0  # λ_S − the lifecycle stage's λ_S
        self.memory_count = 0
        # (L, L̂, λ_S then, ln S − ln C of L, of L̂)
        self.window: deque[tuple[float, float, float, float, float]] = deque(maxlen=self.window_size)
        self.log: deque[dict[str, Any]] = deque(maxlen=int(m["log_max"]))
        self.operations = 0
        self.adjustments = 0
        self.since_escalation = 0
        self.escalation: dict[str, Any] = {"state": "idle", "count": 0, "last_at": None}
        self._seq = 0
        self.dirty = False

    # -- what the engine reads ----------------------------------------------------------------------------------
    def alpha(self) -> tuple[float, str]:
        if self.alpha_source is not None:
            return float(self.alpha_source()), "acetylcholine"
        return self.alpha_constant, "constant (acetylcholine not available)"

    def stage(self, memory_count: int | None = None) -> Lifecycle:
        """The lifecycle stage with the learned λ: what DeltaScComputer scores L and L̂ with."""
        prior = lifecycle(self.memory_count if memory_count is None else memory_count, self._stages)
        lam = float(np.clip(prior.lambda_s + self.offset, self.lo, self.hi))
        return Lifecycle(prior.stage, lam, 1.0 - lam)

    def policy(self, prior: Lifecycle) -> Lifecycle:
        lam = float(np.clip(prior.lambda_s + self.offset, self.lo, self.hi))
        return Lifecycle(prior.stage, lam, 1.0 - lam)

    # -- operations -------------------------------------------------------------------------------------------
    def observe(self, memory_count: int, actual: float, predicted: float, lambda_then: float,
                parts: tuple[ScoreParts, ScoreParts] | None = None) -> None:
        """One operation's L and L̂, scored at λ_S = lambda_then; `parts`: their utl.learning.ScoreParts (without
        them the search treats this operation's L as independent of λ)."""
        if not (np.isfinite(actual) and np.isfinite(predicted)):
            return
        ratios = (0.0, 0.0) if parts is None else (log_ratio(parts[0].surprise, parts[0].coherence),
                                                   log_ratio(parts[1].surprise, parts[1].coherence))
        escalate = False
        with self._lock:
            self.memory_count = memory_count
            self.operations += 1
            self.since_escalation += 1
            self.window.append((float(actual), float(predicted), float(lambda_then), *ratios))
            self.dirty = True
            error = float(actual) - float(predicted)
            alpha, source = self.alpha()
            before = self.stage()
            new = lambda_step(before.lambda_s, error, alpha, self.error_threshold, self.lo, self.hi)
            if new != before.lambda_s:
                self._move(before, new, "error", f"L − L̂ = {error:+.4f} beyond ±{self.error_threshold}: λ_S += α·(L − "
                           f"L̂) with α = {alpha:g} ({source})", error=round(error, _P), alpha=alpha)
            acc = accuracy(*self._columns()[:2])
            if (len(self.window) >= self.window_size and acc is not None and acc < self.floor
                    and self.since_escalation >= self.window_size and self.escalation["state"] != "running"):
                self.escalation["state"] = "running"
                escalate = True
        if escalate:
            reason = f"meta-accuracy {acc:.4f} below {self.floor} over {self.window_size} operations"
            if self.background:
                start_thread(self._escalate_safely, reason, name="meta-utl-escalation")
            else:
                self._escalate_safely(reason)

    def _escalate_safely(self, reason: str) -> None:
        try:
            self.search("escalation", reason)
        except Exception:  # the engine goes on with the λ it has; the log says why
            _log.exception("the Bayesian λ search failed")
            with self._lock:
                self.escalation["state"] = "idle"

    def search(self, kind: str, reason: str, start: float | None = None) -> dict[str, Any]:
        """The Bayesian λ_S search on the recorded window (escalation, trigger_lambda_recalibration)."""
        with self._lock:
            columns = self._columns()
            actual, predicted, then, d_actual, d_predicted = columns
            before = self.stage()
            if start is not None:
                self._move(before, float(start), kind, "the search starts from the given λ_S")
                before = self.stage()
            prior = lifecycle(self.memory_count, self._stages).lambda_s
            self.escalation["state"] = "running"
        if actual.size == 0:
            with self._lock:
                self.escalation["state"] = "idle"
            raise UtlError("No operations recorded yet: the λ search fits L and L̂ of stored memories. Store "
                           "memories (store_memory, inject_context), then call trigger_lambda_recalibration again.",
                           operations=0)
        b = self._settings["bayes"]

        def objective(x: np.ndarray) -> float:
            return lambda_objective(actual, predicted, then, float(x[0]), prior, self.prior_weight, d_actual,
                                    d_predicted)

        box = (self.lo, self.hi)  # L sees λ itself (D22), not λ_S·λ_C: the whole range is identifiable
        result = bayes.gp_minimize(objective, [box], initial=int(b["initial"]),
                                   iterations=int(b["iterations"]), candidates=int(b["candidates"]),
                                   xi=float(b["xi"]), rng=np.random.default_rng(int(b["seed"])),
                                   start=(before.lambda_s,))
        chosen = float(np.clip(result.x[0], self.lo, self.hi))
        before_value = objective(np.asarray([before.lambda_s]))
        with self._lock:
            if result.value < before_value:
                self._move(self.stage(), chosen, kind, f"{reason}: Bayesian search over λ_S ∈ [{box[0]}, {box[1]}] "
                           f"({result.evaluations} evaluations) lowered mean |L − L̂| + κ(λ − λ_prior)² from "
                           f"{before_value:.5f} to {result.value:.5f}", objective=[round(before_value, _P),
                                                                                   round(result.value, _P)])
            else:
                self._append(kind, before.lambda_s, before.lambda_s, f"{reason}: the search found nothing better "
                             f"than the current λ_S (objective {before_value:.5f})")
            self.since_escalation = 0
            self.escalation.update(state="cooldown", count=self.escalation["count"] + 1, last_at=self.clock())
            after = self.stage()
        return {"kind": kind, "lambda_before": {"lambda_s": round(before.lambda_s, _P),
                                                "lambda_c": round(before.lambda_c, _P)},
                "lambda_after": {"lambda_s": round(after.lambda_s, _P), "lambda_c": round(after.lambda_c, _P)},
                "objective_before": round(before_value, _P),
                "objective_after": round(min(result.value, before_value), _P),
                "operations_used": int(actual.size), "evaluations": result.evaluations,
                "accuracy_before": _round(accuracy(*_rescaled(columns, before.lambda_s))),
                "accuracy_after": _round(accuracy(*_rescaled(columns, after.lambda_s))),
                "lifecycle_prior_lambda_s": prior}

    # -- helpers (lock held) ------------------------------------------------------------------------------------
    def _columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """L, L̂, λ_S then, and the log ratios of L and L̂."""
        if not self.window:
            return np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0)
        arr = np.asarray(self.window, dtype=np.float64)
        return arr[:, 0], arr[:, 1], arr[:, 2], arr[:, 3], arr[:, 4]

    def _move(self, before: Lifecycle, new_lambda_s: float, kind: str, reason: str, **detail: Any) -> None:
        if not self.lo <= new_lambda_s <= self.hi:
            raise ValueError(f"λ_S {new_lambda_s} outside [{self.lo}, {self.hi}]")  # the tools check first
        prior = lifecycle(self.memory_count, self._stages).lambda_s
        self.offset = new_lambda_s - prior
        self.adjustments += 1
        self._append(kind, before.lambda_s, new_lambda_s, reason, **detail)

    def _append(self, kind: str, old: float, new: float, reason: str, **detail: Any) -> None:
        self._seq += 1
        self.dirty = True
        self.log.append({"seq": self._seq, "at": self.clock(), "kind": kind, "operation": self.operations,
                         "lambda_s": [round(old, _P), round(new, _P)],
                         "lambda_c": [round(1 - old, _P), round(1 - new, _P)], "reason": reason, **detail})

    # -- reports ------------------------------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        with self._lock:
            actual, predicted = self._columns()[:2]
            stage = self.stage()
            prior = lifecycle(self.memory_count, self._stages)
            alpha, source = self.alpha()
            acc = accuracy(actual, predicted)
            errors = actual - predicted
            return {
                "lambda_s": round(stage.lambda_s, _P), "lambda_c": round(stage.lambda_c, _P),
                "lifecycle": {"stage": prior.stage, "lambda_s": prior.lambda_s, "lambda_c": prior.lambda_c},
                "learned_offset": round(self.offset, _P), "bounds": {"min": self.lo, "max": self.hi},
                "accuracy": _round(acc), "accuracy_floor": self.floor, "window": {"size": self.window_size,
                                                                                "filled": int(actual.size)},
                "mean_error": _round(float(errors.mean()) if errors.size else None),
                "mean_abs_error": _round(float(np.abs(errors).mean()) if errors.size else None),
                "error_threshold": self.error_threshold, "alpha": alpha, "alpha_source": source,
                "operations": self.operations, "adjustments": self.adjustments,
                "escalation": {**self.escalation, "operations_since": self.since_escalation,
                               "eligible": (len(self.window) >= self.window_size and acc is not None
                                            and acc < self.floor and self.since_escalation >= self.window_size)},
                "method": "λ_S += α·(L − L̂) when |L − L̂| > the error threshold; meta-accuracy = 1 − mean |L − L̂| "
                          "over the window; below the floor over a full window: a Bayesian search of λ_S",
            }

    def page(self, offset: int, limit: int, kind: str | None = None) -> dict[str, Any]:
        with self._lock:
            entries = [e for e in reversed(self.log) if kind is None or e["kind"] == kind]
        return {"total": len(entries), "offset": offset, "limit": limit, "entries": entries[offset:offset + limit],
                "next_offset": offset + limit if offset + limit < len(entries) else None}

    # -- persistence (an engine part) -------------------------------------------------------------------------
    def to_doc(self) -> dict[str, Any]:
        with self._lock:
            self.dirty = False
            return {"version": 1, "offset": self.offset, "memory_count": self.memory_count,
                    "window": [list(w) for w in self.window], "log": list(self.log), "operations": self.operations,
                    "adjustments": self.adjustments, "since_escalation": self.since_escalation,
                    "escalation": {**self.escalation, "state": "idle" if self.escalation["state"] == "running"
                                   else self.escalation["state"]}, "seq": self._seq}

    def load_doc(self, doc: dict[str, Any]) -> None:
        if doc.get("version") != 1:
            return
        with self._lock:
            self.offset = float(doc["offset"])
            self.memory_count = int(doc["memory_count"])
            self.window.clear()
            # a window saved before the log ratios were kept: those operations do not move with λ
            self.window.extend((float(w[0]), float(w[1]), float(w[2]),
                                float(w[3]) if len(w) > 3 else 0.0, float(w[4]) if len(w) > 4 else 0.0)
                               for w in doc["window"])
            self.log.clear()
            self.log.extend(doc["log"])
            self.operations, self.adjustments = int(doc["operations"]), int(doc["adjustments"])
            self.since_escalation = int(doc["since_escalation"])
            self.escalation = dict(doc["escalation"])
            self._seq = int(doc["seq"])


def _rescaled(columns: tuple[np.ndarray, ...], lambda_s: float) -> tuple[np.ndarray, np.ndarray]:
    actual, predicted, then, d_actual, d_predicted = columns
    return rescale(actual, then, lambda_s, d_actual), rescale(predicted, then, lambda_s, d_predicted)


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, _P)
