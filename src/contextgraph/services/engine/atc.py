"""Adaptive thresholds (ATC, docs/engine.md): every threshold the engine decides with, per domain, within its bounds.

`value(name, domain)` is what the engine reads (θ_dup in get_memetic_status, θ_kur as the workspace's entry
threshold, the Johari boundary); `subscribe` pushes the General value to a consumer that caches it. Outcomes
are relevance evidence, not usage (services.outcomes; which calls give which outcome: services.feedback.
relevance_evidence, docs/engine.md#adaptive-thresholds); they arrive through `observe`, `offer`/`used` and
`expire`; each observation runs level 1 (the EWMA drift step, calibration.levels) on its threshold. Levels 2-4
run on demand (trigger_recalibration; services.atc_levels). Every change of a threshold or its temperature is
logged with its reason. The state is an engine part (services.engine_state): saved with the
engine's document, and at once after a recalibration.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from contextgraph.calibration.levels import ewma_step
from contextgraph.constitution import Constitution
from contextgraph.errors import ThresholdError
from contextgraph.services.engine.outcomes import OutcomeLog, Pending, Resolved

GENERAL = "General"


@dataclass(frozen=True, slots=True)
class ThresholdSpec:
    name: str
    prior: float
    lo: float
    hi: float
    target: float  # q: the outcome probability at the optimum


@dataclass(frozen=True, slots=True)
class Setting:
    theta: float
    temperature: float = 1.0
    drift: float = 0.0
    observations: int = 0
    updated_at: float | None = None


def domain_of(record: Any) -> str:
    """A memory's domain: its annotation (annotate_node), else General."""
    extra = getattr(record, "extra", None) or {}
    domain = (extra.get("annotations") or {}).get("domain")
    return str(domain) if domain else GENERAL


def specs_from(constitution: Constitution) -> dict[str, ThresholdSpec]:
    a = constitution["atc"]
    out = {}
    for name, t in a["thresholds"].items():
        prior = float(t["prior"]) if "prior" in t else float(a["priors"][name])
        out[name] = ThresholdSpec(name, prior, float(t["min"]), float(t["max"]), float(t["target"]))
    return out


class ThresholdService:
    document = "adaptive_thresholds"

    def __init__(self, constitution: Constitution, clock: Callable[[], float] = time.time) -> None:
        a = constitution["atc"]
        self.constitution = constitution
        self.specs = specs_from(constitution)
        self.domains: tuple[str, ...] = tuple(a["domains"])
        self.clock = clock
        self.outcomes = OutcomeLog(int(a["max_pairs"]), int(a["pending"]["max"]), float(a["pending"]["seconds"]),
                                   unused_weight=float(a["pending"]["unused_weight"]))
        l1 = a["level1"]
        self._l1 = (float(l1["ewma_alpha"]), float(l1["bandwidth"]), float(l1["step"]))
        self.log: deque[dict[str, Any]] = deque(maxlen=int(a["log_max"]))
        self._settings: dict[tuple[str, str], Setting] = {}
        self._listeners: dict[str, list[Callable[[float], None]]] = {}
        # get_calibration_metrics' answers per (threshold, domain, timeframe), with what they were computed from
        self.metrics_cache: dict[tuple[str, str, str], tuple[Any, dict[str, Any]]] = {}
        self._lock = threading.RLock()
        self.expired_unused = 0  # predictions that closed with no judgement since start (get_threshold_status)
        self.dirty = False
        # the periodic engine save writes this part at most this often (StoreHandle): with its pending
        # predictions it is ~800 KiB of JSON at 100K, ~21 ms of the GIL, and nearly every search dirties it
        self.save_interval_seconds = float(a["save_interval_seconds"])

    # -- reads -------------------------------------------------------------------------------------------------
    def spec(self, name: str) -> ThresholdSpec:
        return self.specs[name]

    def value(self, name: str, domain: str = GENERAL) -> float:
        return self.setting(name, domain).theta

    def setting(self, name: str, domain: str = GENERAL) -> Setting:
        with self._lock:
            return self._settings.get((name, domain)) or Setting(self.specs[name].prior)

    def subscribe(self, name: str, listener: Callable[[float], None]) -> None:
        """`listener(value)` now and whenever the General value of `name` changes (a consumer that caches it)."""
        self._listeners.setdefault(name, []).append(listener)
        listener(self.value(name))

    # -- changes -----------------------------------------------------------------------------------------------
    def set(self, name: str, domain: str, setting: Setting, reason: str, level: int | None) -> Setting:
        """Replace a threshold's setting (θ checked against its bounds: THRESHOLD_ERROR), logging the change."""
        spec = self.specs[name]
        if not spec.lo <= setting.theta <= spec.hi:
            raise ThresholdError(
                f"{name} = {setting.theta} is outside its bounds [{spec.lo}, {spec.hi}] (domain {domain}). Give a "
                f"value within them; get_threshold_status shows every threshold's value and bounds.",
                field=name, min=spec.lo, max=spec.hi, value=setting.theta)
        now = self.clock()
        with self._lock:
            before = self.setting(name, domain)
            after = replace(setting, updated_at=now)
            self._settings[(name, domain)] = after
            self.dirty = True
            if (after.theta, after.temperature) != (before.theta, before.temperature):
                self.log.append({"at": now, "threshold": name, "domain": domain, "level": level,
                                 "theta": [round(before.theta, 6), round(after.theta, 6)],
                                 "temperature": [round(before.temperature, 6), round(after.temperature, 6)],
                                 "reason": reason})
        if domain == GENERAL and after.theta != before.theta:
            for listener in self._listeners.get(name, ()):
                listener(after.theta)
        return after

    def observe(self, name: str, domain: str, score: float, outcome: float, source: str) -> None:
        """One (score, outcome) pair: recorded, and level 1's EWMA step on the threshold."""
        if name not in self.specs:
            return
        spec = self.specs[name]
        alpha, bandwidth, step = self._l1
        with self._lock:
            self.outcomes.add(name, domain, score, outcome, self.clock())
            current = self.setting(name, domain)
            moved = ewma_step(current.theta, current.drift, score, outcome, spec.target, alpha=alpha,
                              bandwidth=bandwidth, step=step, lo=spec.lo, hi=spec.hi)
            reason = (f"level 1: {source} gave outcome {outcome:g} at score {score:.4f}; drift EWMA "
                      f"{moved.drift:+.5f}")
            self.set(name, domain, replace(current, theta=moved.theta, drift=moved.drift,
                                           observations=current.observations + 1), reason, 1)

    def _resolve(self, resolved: Iterable[Resolved], source: str) -> None:
        for r in resolved:
            if r.judged:
                self.observe(r.threshold, r.domain, r.score, r.outcome, source)
            else:  # unused: no evidence about relevance (docs/engine.md#adaptive-thresholds), only counted
                self.expired_unused += 1

    def offer(self, name: str, items: Sequence[tuple[str, str, float]], query: str) -> None:
        """Predictions awaiting the agent's judgement: (memory id, domain, score) scored against `name` by an
        operation identified by `query`, in the order it ranked them. Finding a memory again is no judgement:
        the new offer replaces its open one."""
        now = self.clock()
        with self._lock:
            self.expire()
            for rank, (memory_id, domain, score) in enumerate(items):
                self._resolve(self.outcomes.offer(memory_id, Pending(name, domain, float(score), now, query, rank)),
                              "skipped for a lower-ranked result that was used")
            self.dirty = True

    def used(self, memory_ids: Iterable[str], how: str, outcome: float = 1.0) -> None:
        """The agent judged the memories: used them (outcome 1), refuted them (0), or in between (partly
        relevant); their open predictions resolve, and the results ranked above a used one count as skipped."""
        with self._lock:
            for memory_id in memory_ids:
                self._resolve(self.outcomes.use(memory_id, outcome=outcome), how)

    def expire(self) -> None:
        with self._lock:
            self._resolve(self.outcomes.expire(self.clock()), "skipped for a lower-ranked result that was used")

    # -- persistence (an engine part) -------------------------------------------------------------------------
    def to_doc(self) -> dict[str, Any]:
        with self._lock:
            self.dirty = False
            return {"version": 1,
                    "settings": [[n, d, s.theta, s.temperature, s.drift, s.observations, s.updated_at]
                                 for (n, d), s in self._settings.items()],
                    "log": list(self.log), "outcomes": self.outcomes.to_doc()}

    def load_doc(self, doc: dict[str, Any]) -> None:
        if doc.get("version") != 1:
            return
        with self._lock:
            self._settings.clear()
            for n, d, theta, temperature, drift, observations, updated_at in doc.get("settings", []):
                spec = self.specs.get(n)
                if spec is None:
                    continue
                # a saved value outside today's bounds (the constitution changed) is held to them
                theta = min(max(float(theta), spec.lo), spec.hi)
                self._settings[(n, d)] = Setting(theta, float(temperature), float(drift), int(observations),
                                                 updated_at)
            self.log.clear()
            self.log.extend(doc.get("log", []))
            self.outcomes.load_doc(doc.get("outcomes", {}), known=self.specs)
        for name, listeners in self._listeners.items():
            for listener in listeners:
                listener(self.value(name))
