"""TransE novelty for E11 (docs/utl.md#surprise): is a memory's (head, relation, tail) triple what the store would
predict?

TransE models a relation as a translation: h + r ≈ t for entity vectors h and t. The entity vectors here are
fixed (pooled token states of the mentions, embedders.e11_entity), so the translation of each relation has a
closed form, the least-squares fit over the stored triples of that relation:

    r_rel  = mean(t − h)
    σ²_rel = mean ‖h + r_rel − t‖²   (how well the relation translates in the store; floored)

A new triple's residual e = h + r_rel − t scores e²/(e² + σ²_rel): 0 when the store predicts the tail exactly,
0.5 for a residual typical of the stored triples, → 1 for a pairing the store's relation does not explain. A
memory's ΔS in E11 is the mean over its triples whose relation has at least `min_examples` stored triples; with
none, the caller falls back to kNN and says so.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

VARIANCE_FLOOR = 1e-6


@dataclass(frozen=True, slots=True)
class Translations:
    vectors: dict[str, np.ndarray]
    residual: dict[str, float]  # σ²_rel
    counts: dict[str, int]
    # the sufficient statistics, so triples can be taken out exactly (`without`): Σ(t − h) and Σ‖t − h‖²
    sums: dict[str, np.ndarray] = field(default_factory=dict)
    squares: dict[str, float] = field(default_factory=dict)
    min_examples: int = 2

    def without(self, triples: Iterable[tuple[str, np.ndarray, np.ndarray]]) -> Translations:
        """The translations fitted as if `triples` had not been stored (a vertex scored against the store
        without itself): subtracted from the sums, no rescan."""
        sums = {r: v.copy() for r, v in self.sums.items()}
        squares = dict(self.squares)
        counts = dict(self.counts)
        for relation, h, t in triples:
            if relation not in sums:
                continue
            d = _diff(h, t)
            if d.shape != sums[relation].shape:
                continue
            sums[relation] -= d
            squares[relation] -= float(d @ d)
            counts[relation] -= 1
        return from_sums(sums, squares, counts, self.min_examples)


def _diff(h: np.ndarray, t: np.ndarray) -> np.ndarray:
    return np.nan_to_num(np.asarray(t, dtype=np.float64)) - np.nan_to_num(np.asarray(h, dtype=np.float64))


def from_sums(sums: dict[str, np.ndarray], squares: dict[str, float], counts: dict[str, int],
              min_examples: int) -> Translations:
    """The translations of the sufficient statistics per relation (also how a kept fit is read back)."""
    vectors, residual, kept_counts, kept_sums, kept_squares = {}, {}, {}, {}, {}
    for relation, n in counts.items():
        if n < max(min_examples, 2):
            continue
        r = sums[relation] / n
        vectors[relation] = r
        # mean ‖d − r‖² = mean ‖d‖² − ‖r‖² (r is the mean of the d)
        residual[relation] = max(squares[relation] / n - float(r @ r), VARIANCE_FLOOR)
        kept_counts[relation], kept_sums[relation], kept_squares[relation] = n, sums[relation], squares[relation]
    return Translations(vectors, residual, kept_counts, kept_sums, kept_squares, min_examples)


def fit_translations(triples: Iterable[tuple[str, np.ndarray, np.ndarray]], min_examples: int) -> Translations:
    """Closed-form TransE translations from (relation, h, t) with fixed entity vectors; relations with fewer
    than `min_examples` triples are left out (one example fits itself perfectly and predicts nothing)."""
    sums: dict[str, np.ndarray] = {}
    squares: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for relation, h, t in triples:
        d = _diff(h, t)
        if relation in sums and sums[relation].shape != d.shape:
            continue  # a vector of another model's dimension: not comparable
        sums[relation] = sums[relation] + d if relation in sums else d.copy()
        squares[relation] += float(d @ d)
        counts[relation] += 1
    return from_sums(sums, dict(squares), dict(counts), min_examples)


def residual_sq(h: np.ndarray, r: np.ndarray, t: np.ndarray) -> float:
    with np.errstate(over="ignore", invalid="ignore"):  # huge inputs → inf, which the caller scores as novel
        e = np.nan_to_num(np.asarray(h, dtype=np.float64)) + r - np.nan_to_num(np.asarray(t, dtype=np.float64))
        return float(e @ e)


def transe_novelty(model: Translations, triples: Sequence[tuple[str, np.ndarray, np.ndarray]]) -> float | None:
    """Mean e²/(e² + σ²) over the triples whose relation the model knows; None when it knows none of them."""
    scores = []
    for relation, h, t in triples:
        r = model.vectors.get(relation)
        if r is None or np.asarray(h).shape != r.shape or np.asarray(t).shape != r.shape:
            continue
        e2 = residual_sq(h, r, t)
        sigma2 = model.residual[relation]
        scores.append(e2 / (e2 + sigma2) if np.isfinite(e2) else 1.0)
    return float(np.clip(np.mean(scores), 0.0, 1.0)) if scores else None
