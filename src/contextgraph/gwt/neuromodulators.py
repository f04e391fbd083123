"""Neuromodulator dynamics (docs/engine.md): four levels, each bounded, pulled back to its baseline over time. Pure.

A level moves by events (a workspace enter, an empty search, a steering reward, an explicit adjustment) and is
clamped to its bounds; between events it relaxes exponentially towards its baseline with its half-life:

    level(t) = baseline + (level(t₀) − baseline) · 2^(−(t − t₀) / half_life)

Reading is lazy (computed from the last event's level and time), so nothing ticks in the background.

How strongly a level acts on retrieval, beyond the parameter it sets, is here too: noradrenaline's exploration
share (`spread_strength`) and dopamine's boosts of the memories the agent used (`use_boosts`); what retrieval does
with them is retrieval.modulation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MODULATORS = ("dopamine", "serotonin", "noradrenaline", "acetylcholine")


@dataclass(frozen=True, slots=True)
class Bounds:
    name: str
    parameter: str  # what the level sets
    min: float
    max: float
    baseline: float
    half_life: float  # seconds

    def clamp(self, value: float) -> float:
        return min(self.max, max(self.min, value))


def decayed(level: float, since: float, now: float, bounds: Bounds) -> float:
    """The level `now`, `since` seconds-stamps after it was last set, relaxed towards the baseline."""
    elapsed = max(0.0, now - since)
    if bounds.half_life <= 0 or elapsed == 0.0:
        return bounds.clamp(level)
    factor = math.pow(2.0, -elapsed / bounds.half_life)
    return bounds.clamp(bounds.baseline + (level - bounds.baseline) * factor)


def moved(level: float, delta: float, bounds: Bounds) -> tuple[float, float]:
    """(new level, the part of `delta` actually applied): the change clamped to the bounds."""
    new = bounds.clamp(level + delta)
    return new, new - level


def reward_to_dopamine(reward: float, positive_gain: float, negative_gain: float) -> float:
    """A steering reward r (docs/engine.md#steering) moves dopamine by +gain⁺·r when r > 0, −gain⁻·|r| when r < 0."""
    if reward > 0:
        return positive_gain * reward
    if reward < 0:
        return -negative_gain * abs(reward)
    return 0.0


def spread_strength(temperature: float, max_temperature: float, gain: float) -> float:
    """Noradrenaline's exploration (docs/engine.md#what-each-modulator-does): the share of a first hit's fused score
    that flows to its graph neighbours. 0 at or below the baseline temperature (1), `gain` at the bound: arousal
    after weak searches explores the graph; calm never does."""
    if temperature <= 1.0 or max_temperature <= 1.0:
        return 0.0
    return gain * min(1.0, (temperature - 1.0) / (max_temperature - 1.0))


def use_boosts(uses: list[tuple[str, float]], now: float, dopamine: float, bounds: Bounds, on_use: float,
               bound: float) -> dict[str, float]:
    """Dopamine's boost of what the agent just used: memory (or id prefix) → b, its answer score becoming s·(1 + b).

    b = bound · clip((dopamine − baseline) / on_use, 0, 1) · 2^(−age / half_life): one use at the resting level
    gives the whole bound, and the boost fades with the dopamine that paid for it and with the use's age, so an
    old use is not revived by a later reward. Never more than `bound`: a used memory only overtakes results whose
    scores are within that factor of its own."""
    drive = min(1.0, max(0.0, (dopamine - bounds.baseline) / on_use)) if on_use > 0 else 0.0
    out: dict[str, float] = {}
    if drive <= 0.0 or bound <= 0.0:
        return out
    for key, at in uses:
        age = max(0.0, now - at)
        fade = math.pow(2.0, -age / bounds.half_life) if bounds.half_life > 0 else 1.0
        b = bound * drive * fade
        if b >= 1e-4:
            out[key] = max(out.get(key, 0.0), b)
    return out
