"""Pure measures for the diagnostic tools: precision/recall/F1 of a ranking against expected ids, the
rank changes between two rankings, and the z-score of a value against a sample (embedding outliers)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class RecallScores:
    precision: float
    recall: float
    f1: float
    hits: list[str]
    missing_expected: list[str]
    unexpected_results: list[str]


def recall_scores(found: Sequence[str], expected: Sequence[str]) -> RecallScores:
    """Set-based precision = |found ∩ expected| / |found|, recall = |found ∩ expected| / |expected|, F1 their
    harmonic mean (0 when both are 0). Lists keep the order they were given in (found: rank order)."""
    want = set(expected)
    got = list(dict.fromkeys(found))
    hits = [i for i in got if i in want]
    precision = len(hits) / len(got) if got else 0.0
    recall = len(hits) / len(want) if want else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return RecallScores(precision, recall, f1, hits, [i for i in dict.fromkeys(expected) if i not in set(got)],
                        [i for i in got if i not in want])


def rank_changes(before: Sequence[str], after: Sequence[str]) -> dict[str, int | None]:
    """For each id of `after`: its rank in `before` minus its rank in `after` (1-based; positive = moved up),
    None when `before` does not hold it."""
    where = {memory_id: rank for rank, memory_id in enumerate(before, start=1)}
    return {memory_id: (where[memory_id] - rank if memory_id in where else None)
            for rank, memory_id in enumerate(after, start=1)}


def z_score(value: float, sample: Sequence[float] | np.ndarray) -> float:
    """(value − mean) / standard deviation of the sample (ddof=1); 0 for a sample without spread."""
    x = np.asarray(sample, dtype=np.float64)
    if x.size < 2:
        return 0.0
    sd = float(x.std(ddof=1))
    return 0.0 if sd == 0.0 else (value - float(x.mean())) / sd
