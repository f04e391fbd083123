"""Johari classification (docs/utl.md): where a memory (or the whole session) sits between novelty ΔS and
coherence ΔC.

    Open    ΔS < θ, ΔC > θ   known and integrated   → direct_recall
    Blind   ΔS > θ, ΔC < θ   new and unintegrated   → trigger_dream
    Hidden  ΔS < θ, ΔC < θ   known but disconnected → get_neighborhood
    Unknown ΔS > θ, ΔC > θ   new but fits           → epistemic_action

The seeds leave the boundary (a value exactly at θ) open; we count it on the low side for ΔS ("not novel")
and on the low side for ΔC ("not coherent"): a value must pass θ to count. So ΔS = ΔC = θ is Hidden.
"""

from __future__ import annotations

from typing import Literal

Quadrant = Literal["Open", "Blind", "Hidden", "Unknown"]
QUADRANTS: tuple[Quadrant, ...] = ("Open", "Blind", "Hidden", "Unknown")


def classify(delta_s: float, delta_c: float, threshold: float) -> Quadrant:
    novel = delta_s > threshold
    coherent = delta_c > threshold
    if coherent:
        return "Unknown" if novel else "Open"
    return "Blind" if novel else "Hidden"
