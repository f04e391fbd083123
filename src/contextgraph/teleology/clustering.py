"""Clusters of stored memories over E1 (the semantic space): the north star's dominant cluster and the sub-goals.

Why E1 alone and k-means: E1 is the space that separates topics; the temporal spaces (E2-E4) would split the
store by when things were written, E9's hashed bits and the sparse spaces' vocabularies are noisier views of
the same topics. On unit vectors k-means is spherical k-means (squared Euclidean = 2 − 2·cos), cheap at 10K and
deterministic with a seed. k is chosen by the silhouette (cosine) over a range, on a sample at scale; a store
without structure gives low silhouettes at every k, which the callers report. A cluster's *stability* (how
reproducible its membership is across k-means restarts with other seeds, the mean best Jaccard) is the
confidence the bootstrap gates on: a real theme comes back whatever the seed, an artefact of the start does not.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# scikit-learn is imported where it is used: `contextgraph serve` imports this module before it answers tools/list,
# and scikit-learn's import alone costs more than a tenth of the cold-start budget (docs/budgets.md#cpu-budgets).


@dataclass(frozen=True)
class Clustering:
    labels: np.ndarray  # [n] cluster index per row
    centroids: np.ndarray  # [k, d] unit
    k: int
    silhouette: float  # mean cosine silhouette (on a sample at scale)
    silhouettes_by_k: dict[int, float]


def unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms > 0, norms, 1.0)


def _kmeans(x: np.ndarray, k: int, seed: int, minibatch_above: int) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.cluster import KMeans, MiniBatchKMeans

    if len(x) > minibatch_above:
        model = MiniBatchKMeans(n_clusters=k, random_state=seed, n_init=3, batch_size=1024)  # pyright: ignore
    else:
        model = KMeans(n_clusters=k, random_state=seed, n_init=4)  # pyright: ignore
    labels = np.asarray(model.fit_predict(x))
    return labels.astype(np.int64), unit(np.asarray(model.cluster_centers_))


def cluster(vectors: np.ndarray, k_min: int, k_max: int, *, seed: int = 0, sample: int = 2000,
            minibatch_above: int = 5000) -> Clustering:
    """Spherical k-means with k in [k_min, k_max] chosen by the cosine silhouette. Fewer distinct rows than
    k_min+1: one cluster of everything (silhouette 0)."""
    x = unit(vectors)
    n = len(x)
    distinct = len(np.unique(np.round(x, 6), axis=0)) if n else 0
    k_max = min(k_max, distinct - 1, n - 1)
    if n == 0 or k_max < max(k_min, 2):
        labels = np.zeros(n, dtype=np.int64)
        centre = unit(x.mean(axis=0, keepdims=True)) if n else np.zeros((1, x.shape[1] if x.ndim == 2 else 0))
        return Clustering(labels, centre, 1, 0.0, {})
    from sklearn.metrics import silhouette_score

    rng = np.random.default_rng(seed)
    rows = rng.choice(n, size=min(sample, n), replace=False) if n > sample else np.arange(n)
    best: tuple[float, int, np.ndarray, np.ndarray] | None = None
    scores: dict[int, float] = {}
    for k in range(max(k_min, 2), k_max + 1):
        labels, centres = _kmeans(x, k, seed, minibatch_above)
        if len(np.unique(labels[rows])) < 2:
            continue
        s = float(silhouette_score(x[rows], labels[rows], metric="cosine"))
        scores[k] = round(s, 6)
        if best is None or s > best[0] + 1e-12:
            best = (s, k, labels, centres)
    if best is None:
        labels = np.zeros(n, dtype=np.int64)
        return Clustering(labels, unit(x.mean(axis=0, keepdims=True)), 1, 0.0, scores)
    s, k, labels, centres = best
    return Clustering(labels, centres, k, s, scores)


def member_silhouettes(vectors: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Per-row cosine silhouette (0 where it is undefined: one cluster)."""
    if len(np.unique(labels)) < 2:
        return np.zeros(len(labels))
    from sklearn.metrics import silhouette_samples

    return np.asarray(silhouette_samples(unit(vectors), labels, metric="cosine"))


def coherence(vectors: np.ndarray, labels: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """[k]: mean cosine of each cluster's members to its centroid (0 for an empty cluster)."""
    x = unit(vectors)
    out = np.zeros(len(centroids))
    for c in range(len(centroids)):
        rows = labels == c
        if rows.any():
            out[c] = float((x[rows] @ centroids[c]).mean())
    return out


def stability(vectors: np.ndarray, members: np.ndarray, k: int, seeds: int, *, minibatch_above: int = 5000) -> float:
    """Mean over `seeds` restarts (seeds 1..seeds) of the best Jaccard between `members` (row indices) and any
    cluster of that restart: 1 when the cluster comes back whatever the seed."""
    x = unit(vectors)
    target = set(members.tolist())
    if not target or k < 2:
        return 1.0 if target else 0.0
    values = []
    for seed in range(1, seeds + 1):
        labels, _ = _kmeans(x, k, seed, minibatch_above)
        best = 0.0
        for c in np.unique(labels):
            other = set(np.flatnonzero(labels == c).tolist())
            best = max(best, len(target & other) / len(target | other))
        values.append(best)
    return float(np.mean(values))


def dominant(labels: np.ndarray, weights: np.ndarray | None = None) -> int:
    """The cluster with the most members (or the largest total weight, e.g. importance); ties: lowest index."""
    k = int(labels.max()) + 1 if len(labels) else 1
    totals = np.bincount(labels, weights=weights, minlength=k)
    return int(np.argmax(totals))
