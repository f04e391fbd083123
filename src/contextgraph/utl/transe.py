"""TransE novelty for E11 (SPEC §6, §8): is a memory's (head, relation, tail) triple what the store would
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
from dataclasses import dataclass

import numpy as np

VARIANCE_FLOOR = 1e-6


@dataclass(frozen=True, slots=True)
class Translations:
    vectors: dict[str, np.ndarray]
    residual: dict[str, float]  # σ²_rel
    counts: dict[str, int]


def fit_translations(triples: Iterable[tuple[str, np.ndarray, np.ndarray]], min_examples: int) -> Translations:
    """Closed-form TransE translations from (relation, h, t) with fixed entity vectors; relations with fewer
    than `min_examples` triples are left out (one example fits itself perfectly and predicts nothing)."""
    by_relation: dict[str, list[np.ndarray]] = defaultdict(list)
    heads: dict[str, list[np.ndarray]] = defaultdict(list)
    for relation, h, t in triples:
        h = np.nan_to_num(np.asarray(h, dtype=np.float64))
        t = np.nan_to_num(np.asarray(t, dtype=np.float64))
        by_relation[relation].append(t - h)
        heads[relation].append(h)
    vectors, residual, counts = {}, {}, {}
    for relation, diffs in by_relation.items():
        if len(diffs) < max(min_examples, 2):
            continue
        d = np.stack(diffs)
        r = d.mean(axis=0)
        vectors[relation] = r
        residual[relation] = max(float(np.mean(np.sum((d - r) ** 2, axis=1))), VARIANCE_FLOOR)
        counts[relation] = len(diffs)
    return Translations(vectors, residual, counts)


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
