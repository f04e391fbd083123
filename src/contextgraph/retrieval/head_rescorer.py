"""Stage 3's learned head re-scorer (docs/retrieval.md#head-re-scorer): the fused ranking's best `head` candidates
re-ordered by a linear model over each candidate's evidence, one model per kind of memory (text, code). Pure numpy.

Features of a head candidate (FEATURES, in this order; "the pool" is every candidate of the search):
  fusion    its fused score over the best one's, 1/(its place in the head), its fused score's gap to the best
  spaces    for E1, E5, E6, E7, E9, E11, E12, E13: the min-max score over the pool, 1/(its rank in the pool), the raw
            score and its gap to the pool's best raw score
  lexical   from E6's stored term buckets and E6's index statistics: the share of the query's distinct terms the
            memory holds, plain and idf-weighted, the largest idf of a query term it lacks, log(1 + its length in
            terms), log(1 + the query's distinct terms), and each of the three's gap to the head's best
  dense     over E1 and E7: its cosine to the head's best (the best's to the second), and its mean cosine to the
            head's first five (itself left out)
The model's score is coef · features; the head's fused scores are then dealt again in the model's order (the
best-scored candidate gets the head's best fused score, and so on), so the head keeps its scores' scale and every
candidate outside it keeps its score: stages 4 and 5 and the answer's scores work as before.

The coefficients (head_rescorer.json beside this module) are fitted by benchmarks/bench_head_rescorer.py on the
tune halves of the retrieval corpora (code: stdlib functions, text: Debian package descriptions), a pairwise
logistic regression per corpus, and chosen by cross-validation there; a head whose memories are mostly of a kind
without a model (images, audio...), or a search with fewer candidates than the model's head, is left as fused.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np

SPACES = (1, 5, 6, 7, 9, 11, 12, 13)
LEXICAL = 6
DENSE = (1, 7)
MODALITY_SPACE = 10  # E10: E1 with the memory's modality one-hot appended (embedders/e10_multimodal.py)
FEATURES: tuple[str, ...] = (
    "fused", "head_rr", "fused_gap",
    *(f"E{sp}_{f}" for sp in SPACES for f in ("mm", "rr", "raw", "gap")),
    "cov", "idf_cov", "missing_idf", "log_dl", "log_ql", "cov_gap", "idf_cov_gap", "missing_idf_gap",
    *(f"E{sp}_{f}" for sp in DENSE for f in ("to_best", "to_head5")),
)


@dataclass(frozen=True)
class HeadModel:
    head: int  # how many of the fused ranking's best are re-scored
    coef: np.ndarray  # one per FEATURES

    def score(self, features: np.ndarray) -> np.ndarray:
        return np.asarray(features, dtype=np.float64) @ self.coef


def parse_models(data: Mapping) -> dict[str, HeadModel]:
    """{memory kind: model} from head_rescorer.json's content; the feature names must be FEATURES."""
    if tuple(data.get("features", ())) != FEATURES:
        raise ValueError("head_rescorer.json was fitted on other features than head_rescorer.FEATURES")
    return {kind: HeadModel(int(m["head"]), np.asarray(m["coef"], dtype=np.float64))
            for kind, m in data.get("models", {}).items()}


@lru_cache(maxsize=1)
def default_models() -> dict[str, HeadModel]:
    text = resources.files("contextgraph.retrieval").joinpath("head_rescorer.json").read_text(encoding="utf-8")
    return parse_models(json.loads(text))


def head_kind(modality_column: np.ndarray | None, head: np.ndarray, modalities: Sequence[str]) -> str | None:
    """The modality most of the head's memories have, read off E10's appended one-hot (None without E10)."""
    if modality_column is None or not len(head):
        return None
    tail = np.asarray(modality_column)[head][:, -len(modalities):]
    counts = np.bincount(np.argmax(tail, axis=1), minlength=len(modalities))
    return modalities[int(np.argmax(counts))]


def _space_columns(scores: Mapping[int, np.ndarray], head: np.ndarray) -> list[np.ndarray]:
    """Each space's four features for the head, space by space: the min-max score over the pool, 1/(its competition
    rank in the pool: ties share the better rank, as fusion.ranks), the raw score, its gap to the pool's best (a NaN
    score counts as 0)."""
    raw = np.nan_to_num(np.stack([np.asarray(scores[sp], dtype=np.float64) for sp in SPACES]), nan=0.0)  # [S, n]
    r = raw[:, head]  # [S, k]
    lo, hi = raw.min(axis=1, keepdims=True), raw.max(axis=1, keepdims=True)
    spread = hi - lo
    mm = np.divide(r - lo, spread, out=np.zeros_like(r), where=spread > 0)
    better = (raw[:, None, :] > r[:, :, None]).sum(axis=2)
    out: list[np.ndarray] = []
    for j in range(len(SPACES)):
        out += [mm[j], 1.0 / (1.0 + better[j]), r[j], r[j] - hi[j, 0]]
    return out


def _lexical_columns(query_terms: np.ndarray, query_idf: np.ndarray, doc_terms: Sequence,
                     head: np.ndarray) -> list[np.ndarray]:
    """The share of the query's distinct terms each head memory holds (plain and idf-weighted), the largest idf of
    a query term it lacks, log(1 + its length), log(1 + the query's distinct terms), and the three shares' gaps
    to the head's best."""
    k = len(head)
    q, first = np.unique(np.asarray(query_terms, dtype=np.int64), return_index=True)
    w = np.asarray(query_idf, dtype=np.float64)[first] if len(q) else np.zeros(0)
    docs = [doc_terms[i] for i in head.tolist()]
    sizes = np.array([len(d) if d is not None else 0 for d in docs], dtype=np.int64)
    owner = np.repeat(np.arange(k), sizes)
    held = [d for d in docs if d is not None and len(d)]
    terms = np.concatenate([d.indices for d in held]).astype(np.int64) if held else np.zeros(0, dtype=np.int64)
    tf = np.concatenate([d.values for d in held]).astype(np.float64) if held else np.zeros(0)
    present = np.zeros((k, len(q)), dtype=bool)
    if len(q) and len(terms):
        pos = np.minimum(np.searchsorted(q, terms), len(q) - 1)
        hit = q[pos] == terms
        present[owner[hit], pos[hit]] = True
    cov = present.mean(axis=1) if len(q) else np.zeros(k)
    total = float(w.sum())
    idf_cov = (present @ w) / total if total > 0 else np.zeros(k)
    missing = np.where(present, 0.0, w[None, :]).max(axis=1) if len(q) else np.zeros(k)
    lengths = np.bincount(owner, weights=tf, minlength=k)
    return [cov, idf_cov, missing, np.log1p(lengths), np.full(k, np.log1p(len(q))),
            cov - cov.max(), idf_cov - idf_cov.max(), missing - missing.max()]


def _dense_columns(vectors: np.ndarray, head: np.ndarray) -> list[np.ndarray]:
    """Each head memory's cosine to the head's best (the best's to the second) and its mean cosine to the head's
    first five, itself left out."""
    k = len(head)
    d = np.asarray(vectors)[head].astype(np.float32)
    sim = (d @ d[:5].T).astype(np.float64)  # [k, min(k, 5)]
    best = sim[:, 0].copy()
    best[0] = sim[0, 1] if k > 1 else 0.0
    m = sim.shape[1]
    own = np.arange(k) < m
    total = sim.sum(axis=1) - np.where(own, sim[np.arange(k), np.minimum(np.arange(k), m - 1)], 0.0)
    count = m - own.astype(np.float64)
    return [best, np.divide(total, count, out=np.zeros(k), where=count > 0)]


def features(fused: np.ndarray, scores: Mapping[int, np.ndarray], head: np.ndarray, query_terms: np.ndarray,
             query_idf: np.ndarray, doc_terms: Sequence, dense: Mapping[int, np.ndarray]) -> np.ndarray:
    """[len(head), len(FEATURES)]: `head` the candidates' rows best first, `scores` every space's score of every
    candidate, `query_terms` the query's E6 term buckets and `query_idf` their idf in the store (E6's index),
    `doc_terms` every candidate's E6 Sparse (or None), `dense` E1's and E7's [candidates, dim] unit rows."""
    k = len(head)
    if not k:
        return np.zeros((0, len(FEATURES)))
    final = np.asarray(fused, dtype=np.float64)[head]
    top = final[0] if final[0] > 0 else 1.0
    cols = [final / top, 1.0 / np.arange(1, k + 1), (final - final[0]) / top]
    cols += _space_columns(scores, head)
    cols += _lexical_columns(query_terms, query_idf, doc_terms, head)
    for sp in DENSE:
        cols += _dense_columns(dense[sp], head)
    return np.column_stack(cols)


def rescore(fused: np.ndarray, head: np.ndarray, model_scores: np.ndarray) -> np.ndarray:
    """`fused` with the head's scores dealt again in the order of `model_scores` (ties keep the fused order); the
    candidates outside the head keep theirs."""
    out = np.array(fused, dtype=np.float64, copy=True)
    values = np.sort(out[head])[::-1]
    out[head[np.argsort(-np.asarray(model_scores), kind="stable")]] = values
    return out


def apply(fused: np.ndarray, scores: Mapping[int, np.ndarray], query_terms: np.ndarray, query_idf: np.ndarray,
          doc_terms: Sequence, dense: Mapping[int, np.ndarray], model: HeadModel) -> np.ndarray:
    """Stage 3's fused scores after the model re-scores their best `model.head`; unchanged when there are fewer
    candidates than that: the model was fitted on full heads only (the corpora's pools hold 50 or more), and its
    features (places, gaps to the head's best, closeness to the head's first five) mean something else over a few."""
    if len(fused) < max(model.head, 2):
        return fused
    head = np.argsort(-np.asarray(fused), kind="stable")[:model.head]
    x = features(fused, scores, head, query_terms, query_idf, doc_terms, dense)
    return rescore(fused, head, model.score(x))


def rescore_head(fused: np.ndarray, scores: Mapping[int, np.ndarray], query_terms: np.ndarray,
                 query_idf: np.ndarray, doc_terms: Sequence, dense: Mapping[int, np.ndarray],
                 modality_column: np.ndarray | None, modalities: Sequence[str],
                 models: Mapping[str, HeadModel] | None = None) -> np.ndarray:
    """Stage 3's entry: the model of the kind most of the fused ranking's first ten memories are (E10's one-hot),
    applied to `fused`; `fused` itself when that kind has no model."""
    models = default_models() if models is None else models
    first = np.argsort(-np.asarray(fused), kind="stable")[:10]
    model = models.get(head_kind(modality_column, first, modalities) or "")
    return fused if model is None else apply(fused, scores, query_terms, query_idf, doc_terms, dense, model)
