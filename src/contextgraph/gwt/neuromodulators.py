"""Neuromodulator dynamics (docs/engine.md): four levels, each bounded, pulled back to its baseline over time. Pure.

A level moves by events (a workspace enter, an empty search, a steering reward, an explicit adjustment) and is
clamped to its bounds; between events it relaxes exponentially towards its baseline with its half-life:

    level(t) = baseline + (level(t₀) − baseline) · 2^(−(t − t₀) / half_life)

Reading is lazy (computed from the last event's level and time), so nothing ticks in the background.
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
