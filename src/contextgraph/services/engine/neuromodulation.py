"""The four neuromodulators' live levels (docs/engine.md#neuromodulators), what moves them, and what they set.

    dopamine       → retrieval sharpness β (score exponent β/β₀ on the fused scores), and the boost of the
                     memories the agent just used within the next answers (they rank higher, none is left out)
    serotonin      → space weights in fusion (weight exponent 1 − 2(s − s₀))
    noradrenaline  → attention temperature T (RRF k·T, candidate pools ×T) and, above its baseline, exploration
                     of the first hits' graph links (their neighbours join the candidates with a share of their score)
    acetylcholine  → the UTL learning rate; read-only to adjust_neuromodulator (the engine sets it)

Events: a workspace enter raises dopamine (gwt.workspace.dopamine_on_enter), a steering reward r moves it by
+0.2·r / −0.1·|r|, a memory the agent uses (relevance evidence: hydrated, cited, linked, …) raises it and is
remembered as used; a search that finds nothing, or nothing above the relevance floor, raises noradrenaline;
five low MetaScores in a row raise acetylcholine. Levels relax to their baselines (gwt.neuromodulators.decayed).
The state is saved with the engine's (services.engine_state) and `level(name)` is what other services read (the
Meta-UTL reads acetylcholine as its learning rate α).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from contextgraph.constitution import Constitution
from contextgraph.errors import InvalidParams, NeuromodError
from contextgraph.gwt.neuromodulators import (
    MODULATORS,
    Bounds,
    decayed,
    moved,
    reward_to_dopamine,
    spread_strength,
    use_boosts,
)
from contextgraph.retrieval.modulation import Modulation

_SECTIONS = {"dopamine": ("dopamine_beta", "retrieval sharpness beta"),
             "serotonin": ("serotonin_weight", "space weights"),
             "noradrenaline": ("noradrenaline_temperature", "attention temperature"),
             "acetylcholine": ("acetylcholine_rate", "UTL learning rate")}
ADJUSTABLE = ("dopamine", "serotonin", "noradrenaline")
DOCUMENT = "neuromodulation"
_PRECISION = 6


def bounds_from(constitution: Constitution) -> dict[str, Bounds]:
    n = constitution["neuromodulation"]
    out = {}
    for name in MODULATORS:
        section, parameter = _SECTIONS[name]
        b = n[section]
        out[name] = Bounds(name, parameter, float(b["min"]), float(b["max"]), float(b["baseline"]),
                           float(b["half_life_seconds"]))
    return out


class NeuromodulationService:
    def __init__(self, constitution: Constitution, clock: Callable[[], float] = time.time) -> None:
        n = constitution["neuromodulation"]
        self.bounds = bounds_from(constitution)
        self._gain_positive = float(n["steering_reward_gain"]["positive"])
        self._gain_negative = float(n["steering_reward_gain"]["negative"])
        self.on_empty_search = float(n["noradrenaline_on_empty_search"])
        self.on_meta_low = float(n["acetylcholine_on_meta_low"])
        self.on_enter = float(constitution["gwt"]["workspace"]["dopamine_on_enter"])
        self.on_weak_search = float(n["noradrenaline_on_weak_search"])
        self.relevance_floor = float(constitution["retrieval"]["relevance_floor"])
        self.explore_gain = float(n["noradrenaline_explore"]["gain"])
        self._explore_head = int(n["noradrenaline_explore"]["head"])
        self.on_use = float(n["dopamine_on_use"])
        self.use_bound = float(n["dopamine_use_boost"])
        self._uses: deque[tuple[str, float]] = deque(maxlen=int(n["uses_remembered"]))  # (id or prefix, when)
        self.last_search_effect = ""  # what the modulators did to the latest search, in one line (or nothing)
        self._clock = clock
        self._lock = threading.Lock()
        now = clock()
        # name → (level when last set, wall time it was set)
        self._levels: dict[str, tuple[float, float]] = {m: (b.baseline, now) for m, b in self.bounds.items()}
        self.history: deque[dict[str, Any]] = deque(maxlen=int(n["history"]))
        self.dirty = False

    # -- reads ---------------------------------------------------------------------------------------------
    def level(self, name: str) -> float:
        """The modulator's level now (decayed towards its baseline since it was last moved)."""
        bounds = self.bounds[name]
        with self._lock:
            value, since = self._levels[name]
        return decayed(value, since, self._clock(), bounds)

    def modulation(self) -> Modulation:
        """What retrieval applies now (retrieval.modulation): the identity at the baselines."""
        da, se, ne = (self.level(m) for m in ("dopamine", "serotonin", "noradrenaline"))
        b = self.bounds
        temperature = ne / b["noradrenaline"].baseline
        with self._lock:
            uses = list(self._uses)
        return Modulation(score_exponent=da / b["dopamine"].baseline,
                          weight_exponent=1.0 - 2.0 * (se - b["serotonin"].baseline),
                          temperature=temperature,
                          spread=spread_strength(temperature, b["noradrenaline"].max / b["noradrenaline"].baseline,
                                                 self.explore_gain),
                          explore_head=self._explore_head,
                          boosts=use_boosts(uses, self._clock(), da, b["dopamine"], self.on_use, self.use_bound))

    def state(self) -> dict[str, Any]:
        modulation = self.modulation()
        effects = {"dopamine": {"score_exponent": modulation.score_exponent,
                                "memories_boosted": len(modulation.boosts),
                                "largest_boost": max(modulation.boosts.values(), default=0.0)},
                   "serotonin": {"space_weight_exponent": modulation.weight_exponent},
                   "noradrenaline": {"rrf_k_and_pool_scale": modulation.temperature,
                                     "graph_spread": modulation.spread},
                   "acetylcholine": {"utl_learning_rate": self.level("acetylcholine")}}
        out: dict[str, Any] = {}
        for name, b in self.bounds.items():
            out[name] = {"level": round(self.level(name), _PRECISION), "min": b.min, "max": b.max,
                         "baseline": b.baseline, "controls": b.parameter, "half_life_seconds": b.half_life,
                         "adjustable": name in ADJUSTABLE,
                         "effect": {k: round(v, _PRECISION) for k, v in effects[name].items()}}
        with self._lock:
            recent = list(self.history)[-10:]
        # each modulator under its own name (the shape clients rely on), then what holds for all of them
        return {**out, "at_baseline": modulation.neutral, "last_search_effect": self.last_search_effect or None,
                "recent_changes": recent}

    # -- writes --------------------------------------------------------------------------------------------
    def adjust(self, name: str, delta: float, source: str = "adjust_neuromodulator") -> dict[str, Any]:
        """An explicit change (the tool): clamped to the bounds; acetylcholine refuses (-32017)."""
        if name not in self.bounds:
            raise InvalidParams(f"Unknown modulator {name!r}; allowed: {', '.join(ADJUSTABLE)}.", field="modulator",
                                allowed=list(ADJUSTABLE))
        if name not in ADJUSTABLE:
            raise NeuromodError(
                "acetylcholine is read-only: it is the UTL learning rate, which the engine's meta-cognition sets "
                "(it rises when the engine keeps mispredicting what memories teach). Adjust dopamine, serotonin "
                "or noradrenaline instead; get_neuromodulation_state shows its level.", field="modulator",
                allowed=list(ADJUSTABLE))
        return self._move(name, delta, source)

    def workspace_enter(self, memory_id: str) -> str:
        """A memory entered the workspace (docs/engine.md): dopamine +dopamine_on_enter. Returns what was applied."""
        change = self._move("dopamine", self.on_enter, f"workspace enter {memory_id}")
        return f"{change['applied']:+.4g} applied (dopamine {change['old']:.4g} → {change['new']:.4g})"

    def empty_search(self) -> None:
        self._move("noradrenaline", self.on_empty_search, "empty search")

    def after_search(self, _query: str, retrieval: Any) -> None:
        """A search's results (MemoryService's results listener): nothing found, or nothing as similar as the
        relevance floor, arouses noradrenaline, so that the next searches explore; what the modulators did to
        this answer becomes the last search effect."""
        found = retrieval.found
        best = max((f.similarity for f in found), default=0.0)
        if not found:
            self.empty_search()
        elif best < self.relevance_floor:
            self._move("noradrenaline", self.on_weak_search,
                       f"weak search (best similarity {best:.2f} < {self.relevance_floor:g})")
        self.last_search_effect = "; ".join(retrieval.modulation_notes)

    def used(self, memory: str) -> None:
        """The agent used a memory (relevance evidence: hydrated, cited, linked, boosted, merged): dopamine rises
        and the memory (an id, or the prefix a citation names) ranks higher in the next answers that hold it."""
        if not memory:
            return
        with self._lock:
            self._uses.append((memory, self._clock()))
        self._move("dopamine", self.on_use, f"used {memory[:12]}")

    def refuted(self, memory: str) -> None:
        """The agent judged a memory not relevant or wrong: it is boosted no more."""
        with self._lock:
            kept = [(key, at) for key, at in self._uses if not (key.startswith(memory) or memory.startswith(key))]
            self._uses.clear()
            self._uses.extend(kept)
            self.dirty = True

    def steering_reward(self, reward: float) -> dict[str, Any]:
        return self._move("dopamine", reward_to_dopamine(reward, self._gain_positive, self._gain_negative),
                          f"steering reward {reward:+.4f}")

    def meta_low(self, request: dict[str, Any]) -> None:
        """The engine's meta-cognition asks for more acetylcholine (cognition's request listener)."""
        if request.get("acetylcholine") != "raise":
            return
        change = self._move("acetylcholine", self.on_meta_low, "meta-cognition: consecutive low MetaScores")
        request["acetylcholine_applied"] = change["applied"]

    def _move(self, name: str, delta: float, source: str) -> dict[str, Any]:
        bounds = self.bounds[name]
        now = self._clock()
        with self._lock:
            value, since = self._levels[name]
            old = decayed(value, since, now, bounds)
            new, applied = moved(old, delta, bounds)
            self._levels[name] = (new, now)
            change = {"modulator": name, "old": round(old, _PRECISION), "new": round(new, _PRECISION),
                      "requested": round(delta, _PRECISION), "applied": round(applied, _PRECISION),
                      "clamped": abs(applied - delta) > 1e-12, "source": source, "at": now}
            self.history.append(change)
            self.dirty = True
        return change

    # -- persistence ---------------------------------------------------------------------------------------
    def to_doc(self) -> dict[str, Any]:
        with self._lock:
            self.dirty = False
            return {"levels": {m: list(v) for m, v in self._levels.items()}, "history": list(self.history),
                    "uses": [list(use) for use in self._uses]}

    def load_doc(self, doc: dict[str, Any]) -> None:
        with self._lock:
            for name, pair in (doc.get("levels") or {}).items():
                if name in self.bounds and isinstance(pair, list) and len(pair) == 2:
                    self._levels[name] = (self.bounds[name].clamp(float(pair[0])), float(pair[1]))
            self.history.clear()
            self.history.extend(doc.get("history") or [])
            self._uses.clear()
            self._uses.extend((str(key), float(at)) for key, at in doc.get("uses") or [] if key)
            self.dirty = False
