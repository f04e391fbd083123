"""Meta-cognition (docs/engine.md#meta-cognition): how well the engine predicts what an operation will teach.

    MetaScore = sigmoid(2 · (L_predicted − L_actual))

L_predicted is the engine's running learning score just before an operation, L_actual the operation's own. A
score of 0.5 is a perfect prediction; below 0.5 the operation taught more than expected (the engine
under-predicts: its model of what it knows is stale). Five consecutive scores below 0.5 raise acetylcholine and
request an introspective dream.
"""

from __future__ import annotations

from collections.abc import Sequence

from contextgraph.utl.learning import sigmoid


def meta_score(predicted: float, actual: float) -> float:
    """∈ (0, 1); non-finite inputs count as a perfect prediction (0.5) rather than poisoning the history."""
    diff = float(predicted) - float(actual)
    if diff != diff or diff in (float("inf"), float("-inf")):
        return 0.5
    return sigmoid(2.0 * diff)


def low_streak(scores: Sequence[float], low: float) -> int:
    """How many of the most recent scores, counted back from the newest, are below `low`."""
    streak = 0
    for score in reversed(scores):
        if not score < low:
            break
        streak += 1
    return streak


def needs_introspection(scores: Sequence[float], low: float, consecutive: int) -> bool:
    return low_streak(scores, low) >= consecutive
