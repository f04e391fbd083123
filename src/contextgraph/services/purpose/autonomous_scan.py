"""What the autonomous services read: the live memories (newest first, bounded) with their E1 vectors, and the
clustering of them that the north star and the sub-goals both come from."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from contextgraph.storage.base import MemoryRecord, MemoryStore
from contextgraph.teleology.clustering import Clustering, cluster, coherence, member_silhouettes, unit
from contextgraph.teleology.labels import characteristic_terms

SEMANTIC = 1


@dataclass
class Corpus:
    records: list[MemoryRecord]
    vectors: np.ndarray  # [n, d] E1
    _rows: dict[int, int] | None = None

    def __len__(self) -> int:
        return len(self.records)

    def row_of(self, seq: int) -> int | None:
        """The row of the memory with this seq, or None when it is not in the corpus."""
        if self._rows is None:
            self._rows = {r.seq: i for i, r in enumerate(self.records)}
        return self._rows.get(seq)


def read_corpus(store: MemoryStore, max_scan: int, spaces: tuple[int, ...] = (SEMANTIC,)) -> Corpus:
    """The newest `max_scan` live memories with their E1 vectors (seq order kept)."""
    rows: list[tuple[MemoryRecord, np.ndarray]] = []
    for record, fp in store.scan(spaces=list(spaces)):
        rows.append((record, np.asarray(fp[SEMANTIC], dtype=np.float32)) if SEMANTIC in fp else (record, np.zeros(0)))
    rows = rows[-max_scan:]
    if not rows:
        return Corpus([], np.zeros((0, 0)))
    vectors = np.stack([v for _, v in rows]) if SEMANTIC in spaces else np.zeros((len(rows), 0))
    return Corpus([r for r, _ in rows], vectors)


@dataclass
class Themes:
    """The clusters of a corpus, described."""

    clustering: Clustering
    labels: np.ndarray  # the clustering's labels with outliers as -1
    sizes: list[int]
    coherence: list[float]  # mean E1 cosine of members to their centroid
    silhouette: list[float]  # mean member silhouette per cluster
    terms: list[list[str]]


def themes(corpus: Corpus, k_min: int, k_max: int, settings: dict[str, Any]) -> Themes:
    c = cluster(corpus.vectors, k_min, k_max, seed=int(settings["cluster_seed"]),
                sample=int(settings["silhouette_sample"]), minibatch_above=int(settings["minibatch_above"]))
    k = c.k
    # k-means puts every memory in some cluster, an unrelated note too; a member far less close to its centroid
    # than the cluster's median member (below outlier_ratio × that cosine) belongs to no theme (measured on the
    # purpose benchmark: unrelated notes at cosine 0.12-0.27 to their centroid, theme members 0.47-0.75)
    closeness = (unit(corpus.vectors) * c.centroids[c.labels]).sum(axis=1) if len(corpus) else np.zeros(0)
    medians = np.array([np.median(closeness[c.labels == i]) if (c.labels == i).any() else 0.0 for i in range(k)])
    ratio = float(settings["subgoals"]["outlier_ratio"])
    labels = np.where(closeness >= ratio * medians[c.labels], c.labels, -1) if len(corpus) else c.labels
    sizes = np.bincount(labels[labels >= 0], minlength=k).tolist()
    coh = coherence(corpus.vectors, labels, c.centroids).tolist()
    if len(corpus) <= int(settings["silhouette_sample"]):
        sil = member_silhouettes(corpus.vectors, c.labels)
        per = [float(sil[labels == i].mean()) if (labels == i).any() else 0.0 for i in range(k)]
    else:  # at scale the per-member silhouette is quadratic: the clustering's sampled mean stands for each
        per = [c.silhouette] * k
    terms = characteristic_terms([r.content for r in corpus.records], labels, k, int(settings["label_terms"]))
    return Themes(c, labels, [int(x) for x in sizes], [round(float(x), 6) for x in coh], [round(x, 6) for x in per],
                  terms)



def sub_goal_themes(corpus: Corpus, settings: dict[str, Any]) -> Themes:
    """The clustering the sub-goals (and stage 4's goals) come from: k from 2 to `subgoals.k_max`, and at most one
    cluster per `subgoals.min_cluster` memories."""
    s = settings["subgoals"]
    return themes(corpus, 2, max(2, min(int(s["k_max"]), len(corpus) // int(s["min_cluster"]))), settings)

def label(terms: list[str]) -> str:
    return " / ".join(terms[:3]) if terms else "(no characteristic terms)"


def preview(text: str, n: int = 120) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def goal_id(member_ids: list[str]) -> str:
    return "goal-" + hashlib.sha256(",".join(sorted(member_ids)).encode()).hexdigest()[:16]


def goals_of(corpus: Corpus, t: Themes) -> list[dict[str, Any]]:
    """Every theme with members as a goal stage 4 can re-rank by (teleology.goals): its id, label, size, E1
    centroid and the median E1 cosine of its members to it."""
    vectors = unit(corpus.vectors) if len(corpus) else corpus.vectors
    goals = []
    for g in range(t.clustering.k):
        rows = np.flatnonzero(t.labels == g)
        if len(rows) < 2:  # one memory is not a theme
            continue
        centre = t.clustering.centroids[g]
        goals.append({"id": goal_id([corpus.records[i].id for i in rows]), "label": label(t.terms[g]),
                      "size": len(rows), "centroid": centre,
                      "reference": float(np.median(vectors[rows] @ centre))})
    return sorted(goals, key=lambda x: (-x["size"], x["id"]))
