"""Coherence ΔC (docs/utl.md#coherence): ΔC = 0.4·Connectivity + 0.4·ClusterFit + 0.2·Consistency, each in [0, 1].

    Connectivity  how far the memory's nearest neighbours stand above the similarity of unrelated memories
                  (`graded_connectivity`; `connectivity`: the mean similarity above a fixed threshold)
    ClusterFit    (`weighted_clustering`) whether the memory's nearest neighbours form a cluster it fits: the
                  weighted local clustering coefficient of the memory in the nearest-neighbour graph, ranked
                  against the store as connectivity is (`store_standing`). Until the store has a leave-one-out
                  sample to rank against, a silhouette against the clusters of the stored memories, mapped to [0, 1] as
                  (s + 1)/2: the memory joins the cluster it is closest to (mean distance a to that cluster's
                  prototype members), and s = (b − a)/max(a, b) with b that cluster's own separation — the mean,
                  over its members, of their mean distance to the nearest other cluster (`separations`). A
                  memory as close to the cluster as its members are to each other scores like a member (the
                  cluster's silhouette); one farther from every cluster than the clusters are from each other has
                  a > b and scores below 0.5. The clusters are spherical k-means of stored E1 vectors
                  (`spherical_kmeans`); distances are measured in each space's own measure.
    Consistency   1 − 4·mean squared difference between the recent coherence values and this operation's (a
                  spread of values in [0, 1] is at most ¼): the history's variance plus how far this memory's
                  coherence lies from the recent mean (`consistency`)

ClusterFit is required, never dropped (docs/utl.md). Where it is undefined — fewer than two clusters, no prototype
to compare with (an empty store, a handful of memories) — it is 0.5, the silhouette's "on the border" value, so
it neither rewards nor punishes what cannot be judged yet.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from contextgraph.vectors import clip_unit

WEIGHTS = {"connectivity": 0.4, "cluster_fit": 0.4, "consistency": 0.2}
NEUTRAL_FIT = 0.5


def _unit(x: float) -> float:
    return min(max(float(x), 0.0), 1.0) if math.isfinite(x) else 0.0


def connectivity(similarities: Sequence[float] | np.ndarray, threshold: float) -> float:
    s = clip_unit(np.asarray(similarities, dtype=np.float64))
    above = s[s > threshold]
    return float(above.mean()) if above.size else 0.0


def graded_connectivity(similarities: Sequence[float] | np.ndarray, baseline: float) -> float:
    """Mean over the neighbours of (s − θ)/(1 − θ) clipped to [0, 1], θ the baseline similarity of unrelated
    memories in the space: 0 for neighbours no closer than unrelated memories, 1 for identical ones, graded in
    between (a hard threshold made every new fact on a stored topic as unconnected as an unrelated text).
    None → 0."""
    s = clip_unit(np.asarray(similarities, dtype=np.float64))
    if s.size == 0:
        return 0.0
    theta = min(max(float(baseline) if math.isfinite(baseline) else 0.0, 0.0), 1.0 - 1e-6)
    return _unit(float(np.clip((s - theta) / (1.0 - theta), 0.0, 1.0).mean()))


def silhouette(a: float, b: float) -> float:
    """(b − a)/max(a, b) ∈ [−1, 1]; both distances 0 (identical points) → 0."""
    if not (math.isfinite(a) and math.isfinite(b)):
        return 0.0
    m = max(a, b)
    return 0.0 if m <= 0.0 else min(max((b - a) / m, -1.0), 1.0)


def _cosine_distances(x: np.ndarray, points: np.ndarray) -> np.ndarray:
    x = np.nan_to_num(np.asarray(x, dtype=np.float64).ravel())
    p = np.nan_to_num(np.asarray(points, dtype=np.float64).reshape(-1, x.size))
    nx = np.linalg.norm(x)
    np_ = np.linalg.norm(p, axis=1)
    denom = nx * np_
    cos = np.divide(p @ x, denom, out=np.zeros(p.shape[0]), where=denom > 0)
    return np.clip(1.0 - cos, 0.0, 2.0)


def cluster_fit(vector: np.ndarray, own: np.ndarray, others: Sequence[np.ndarray]) -> float:
    """ClusterFit ∈ [0, 1] of `vector` against its own cluster's members (rows of `own`, itself excluded) and the
    members of every other cluster, by cosine distance."""
    own = np.asarray(own, dtype=np.float64)
    nonempty = [np.asarray(o, dtype=np.float64) for o in others if np.asarray(o).size]
    if own.size == 0 or not nonempty or np.asarray(vector).size == 0:
        return NEUTRAL_FIT
    a = float(_cosine_distances(vector, own).mean())
    b = min(float(_cosine_distances(vector, o).mean()) for o in nonempty)
    return _unit((silhouette(a, b) + 1.0) / 2.0)


def cluster_fit_from_distances(own: Sequence[float] | np.ndarray, other: Sequence[float] | np.ndarray) -> float:
    """ClusterFit from distances already measured (a space with its own similarity measure): `own` to the
    memory's cluster mates, `other` to the nearest other group. Either empty → neutral 0.5."""
    a_d = np.asarray([d for d in own if math.isfinite(d)], dtype=np.float64)
    b_d = np.asarray([d for d in other if math.isfinite(d)], dtype=np.float64)
    if a_d.size == 0 or b_d.size == 0:
        return NEUTRAL_FIT
    return _unit((silhouette(float(a_d.mean()), float(b_d.mean())) + 1.0) / 2.0)


def neighbourhood_closeness(similarities: Sequence[float] | np.ndarray, k: int) -> float:
    """The mean similarity of the 2nd to (k+1)-th nearest: how close the memory's neighbourhood stands, the single
    nearest left out, since whether it restates one memory is ΔS's d₁ (a paraphrase is then as connected as a new
    fact on its topic, not more). One neighbour: its similarity; none (or NaN) count as −1."""
    s = np.sort(np.nan_to_num(np.asarray(similarities, dtype=np.float64).ravel(), nan=-1.0))[::-1]
    if s.size == 0:
        return -1.0
    return float(s[1 : k + 1].mean()) if s.size > 1 else float(s[0])


def weighted_jaccard(terms: Sequence[int] | np.ndarray, others: Sequence[Sequence[int] | np.ndarray],
                     idf: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Per term set in `others`: Σ idf over the terms it shares with `terms` / Σ idf over the terms of either (0
    when both are empty); each set holds unique term ids, as Sparse does. ΔC compares E6/E13 term sets so: a shared
    rare term says more about a topic than a shared common word, which an unrelated text has as many of as a
    related one. idf ≡ 1 → the plain Jaccard index. One membership test over all the others' terms at once."""
    if not len(others):
        return np.zeros(0)
    a = np.asarray(terms, dtype=np.int64).ravel()
    total = float(np.asarray(idf(a), dtype=np.float64).sum())
    lengths = np.array([len(o) for o in others], dtype=np.int64)
    flat = (np.concatenate([np.asarray(o, dtype=np.int64).ravel() for o in others]) if lengths.sum()
            else np.zeros(0, dtype=np.int64))
    owner = np.repeat(np.arange(len(others)), lengths)
    weights = np.asarray(idf(flat), dtype=np.float64)
    shared = np.bincount(owner, weights=weights * np.isin(flat, a), minlength=len(others))
    union = total + np.bincount(owner, weights=weights, minlength=len(others)) - shared
    return np.clip(np.divide(shared, union, out=np.zeros(len(others)), where=union > 0), 0.0, 1.0)  # rounding


def weighted_clustering(similarities: Sequence[float] | np.ndarray, between: np.ndarray) -> float:
    """How far the memory's nearest neighbours form a cluster it belongs to: the weighted local clustering
    coefficient (Onnela et al. 2005) of the memory in the store's nearest-neighbour graph, the mean over neighbour
    pairs j < l of ∛(wⱼ·wₗ·wⱼₗ), wⱼ its similarity to neighbour j (`similarities`), wⱼₗ theirs to each other
    (`between`, symmetric), each clipped to [0, 1]. Neighbours on one topic that the memory is close to → high; an
    unrelated text's nearest come from scattered topics, unlike each other → low, even where its similarity to
    each is as high as a new fact's to its topic. Fewer than two neighbours (or NaN) → NaN (not measurable)."""
    w = np.clip(np.nan_to_num(np.asarray(similarities, dtype=np.float64).ravel(), nan=-1.0), 0.0, 1.0).tolist()
    n = len(w)
    b = np.asarray(between, dtype=np.float64).reshape(n, n)
    if n < 2 or not np.isfinite(b).all():
        return math.nan
    rows = np.clip(b, 0.0, 1.0).tolist()  # a handful of neighbours: plain floats beat numpy's per-call overhead
    pairs = [(w[j] * w[m] * rows[j][m]) ** (1.0 / 3.0) for j in range(n) for m in range(j + 1, n)]
    return sum(pairs) / len(pairs)


def store_percentile(value: float, sample: Sequence[float] | np.ndarray) -> float:
    """Where `value` stands among the store's own leave-one-out values of the same statistic (`sample`, sorted
    ascending): the mid-rank (below + ½·equal + ½)/(n + 1) ∈ (0, 1), so a memory as connected as the store's
    typical memory scores about 0.5, one below every stored memory about 0 and a duplicate about 1
    (docs/utl.md#coherence). No sample → the raw value, clamped: nothing to compare with yet; NaN (not
    measurable) → the neutral 0.5."""
    s = np.asarray(sample, dtype=np.float64)
    v = float(value)
    if math.isnan(v):
        return NEUTRAL_FIT
    if s.size == 0:
        return _unit(v)
    below = int(np.searchsorted(s, v, side="left"))
    equal = int(np.searchsorted(s, v, side="right")) - below
    return _unit((below + 0.5 * equal + 0.5) / (s.size + 1))


_MAD_TO_SD = 1.4826  # the MAD of a normal sample times this estimates its standard deviation
_LOGISTIC_SLOPE = math.pi / math.sqrt(3.0)  # a logistic with unit standard deviation
_MIN_ROBUST_SAMPLE = 5


def store_standing(value: float, sample: Sequence[float] | np.ndarray) -> float:
    """How `value` stands among the store's own leave-one-out values of the same statistic (`sample`):
    sigmoid(π/√3 · (value − median)/(1.4826·MAD)), a logistic with the sample's robust location and spread. The
    store's typical memory scores 0.5; a value several spreads below it ~0, whatever the space's raw scale.

    Median and MAD, as the ΔS calibration: a store that holds unrelated texts has a tail of isolated memories,
    and a rank among them (`store_percentile`) lifted the next unrelated text to 0.1-0.2, as if it fitted a
    little. Fewer than five values, or no spread (ties) → the mid-rank percentile; no sample → the raw value,
    clamped; NaN (not measurable) → the neutral 0.5."""
    s = np.asarray(sample, dtype=np.float64)
    return standing_at(value, s, robust_location(s))


def robust_location(sample: np.ndarray) -> tuple[float, float] | None:
    """(median, 1.4826·MAD) of a leave-one-out sample, or None where store_standing falls back to the mid-rank
    (fewer than five values, or no spread): a store model computes it once per sample, not per memory scored."""
    if sample.size < _MIN_ROBUST_SAMPLE:
        return None
    median = float(np.median(sample))
    spread = _MAD_TO_SD * float(np.median(np.abs(sample - median)))
    return (median, spread) if spread > 1e-12 else None


def standing_at(value: float, sample: np.ndarray, location: tuple[float, float] | None) -> float:
    """store_standing with the sample's robust_location given."""
    v = float(value)
    if math.isnan(v) or location is None:
        return store_percentile(v, sample)
    median, spread = location
    x = _LOGISTIC_SLOPE * (v - median) / spread
    return _unit(1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x)))


MAX_SEPARATION = 3.0


def separation(on: Sequence[float] | np.ndarray, off: Sequence[float] | np.ndarray) -> float:
    """How well a space's coherence statistic tells a stored memory on its topic from the same memory with its
    topic left out: d′ = (median(on) − median(off)) / √(½(σ_on² + σ_off²)), σ = 1.4826·MAD, clipped to
    [0, MAX_SEPARATION]. `on`: the leave-one-out values (each memory against the store without itself); `off`:
    the same memories against the store without their own cluster. A space whose statistic does not move when a
    memory's topic is removed (character n-grams, the words every text uses) has d′ ≈ 0: its ΔC is noise about
    topics, and C weighs it by this (docs/utl.md#learning-score). Fewer than five values in either → 1 (no
    evidence either way: the space counts as much as any); no spread at all → MAX_SEPARATION when the medians
    differ, else 0."""
    a = np.asarray([v for v in np.asarray(on, dtype=np.float64).ravel() if math.isfinite(v)])
    b = np.asarray([v for v in np.asarray(off, dtype=np.float64).ravel() if math.isfinite(v)])
    if a.size < _MIN_ROBUST_SAMPLE or b.size < _MIN_ROBUST_SAMPLE:
        return 1.0
    m_on, m_off = float(np.median(a)), float(np.median(b))
    spread = _MAD_TO_SD * math.sqrt(0.5 * (float(np.median(np.abs(a - m_on))) ** 2
                                           + float(np.median(np.abs(b - m_off))) ** 2))
    gap = m_on - m_off
    if not spread > 1e-12:
        return MAX_SEPARATION if gap > 0 else 0.0
    return min(max(gap / spread, 0.0), MAX_SEPARATION)


def consistency(history: Sequence[float], current: float | None = None) -> float:
    """How consistent coherence is with the recent history, scaled so the largest spread of values in [0, 1]
    (a variance of ¼) maps to 0:

        no `current`:  1 − 4·variance of the recent coherence values
        `current`:     1 − 4·mean (hⱼ − current)² = 1 − 4·(variance + (mean − current)²): the same spread,
                       measured around this operation's own coherence, so a memory that coheres unlike the
                       recent ones (an unrelated text in a focused session, a duplicate in a scattered one) is
                       less consistent

    Fewer than two values in all → 1 (no inconsistency shown yet)."""
    h = np.clip(np.asarray([float(v) for v in history if math.isfinite(float(v))], dtype=np.float64), 0.0, 1.0)
    if current is None or not math.isfinite(float(current)):
        return 1.0 if h.size < 2 else _unit(1.0 - 4.0 * float(h.var()))
    if h.size < 1:
        return 1.0
    c = min(max(float(current), 0.0), 1.0)
    return _unit(1.0 - 4.0 * float(np.mean((h - c) ** 2)))


def delta_c(connectivity_value: float, cluster_fit_value: float, consistency_value: float,
            weights: Mapping[str, float] = WEIGHTS) -> float:
    return _unit(weights["connectivity"] * _unit(connectivity_value)
                 + weights["cluster_fit"] * _unit(cluster_fit_value)
                 + weights["consistency"] * _unit(consistency_value))


# --- clusters of the stored memories ----------------------------------------------------------------------------


def _unit_rows(x: np.ndarray) -> np.ndarray:
    x = np.nan_to_num(np.asarray(x, dtype=np.float64))
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


def cluster_count(n: int, lo: int = 2, hi: int = 24) -> int:
    """√(n/2) clusters (the classic rule of thumb), within [lo, hi]; 0 below 4 memories (nothing to cluster)."""
    if n < 4:
        return 0
    return int(min(max(round(math.sqrt(n / 2.0)), lo), hi, n))


def spherical_kmeans(x: np.ndarray, k: int, iterations: int = 25, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(centroids [k, d] unit rows, labels [n]) of the rows of `x` by cosine: k-means++ seeding, then Lloyd
    steps on unit vectors until no label changes. Deterministic for a seed. k is capped at the number of rows;
    an emptied cluster is reseeded with the row farthest from its centroid."""
    u = _unit_rows(x)
    n = u.shape[0]
    k = int(min(max(k, 1), n))
    rng = np.random.default_rng(seed)
    centroids = np.empty((k, u.shape[1]))
    centroids[0] = u[rng.integers(n)]
    closest = np.clip(1.0 - u @ centroids[0], 0.0, None)
    for j in range(1, k):
        total = float(closest.sum())
        idx = int(rng.choice(n, p=closest / total)) if total > 0 else int(rng.integers(n))
        centroids[j] = u[idx]
        closest = np.minimum(closest, np.clip(1.0 - u @ centroids[j], 0.0, None))
    labels = np.full(n, -1)
    for _ in range(max(iterations, 1)):
        sims = u @ centroids.T
        new = sims.argmax(axis=1)
        if np.array_equal(new, labels):
            break
        labels = new
        for j in range(k):
            members = u[labels == j]
            if members.shape[0] == 0:
                far = int(np.argmin(sims.max(axis=1)))
                centroids[j] = u[far]
                labels[far] = j
                continue
            c = members.sum(axis=0)
            norm = np.linalg.norm(c)
            centroids[j] = c / norm if norm > 0 else members[0]
    return centroids, labels


def prototypes(x: np.ndarray, centroids: np.ndarray, labels: np.ndarray, per_cluster: int) -> list[np.ndarray]:
    """Per cluster, the row indices of its `per_cluster` members closest to the centroid (medoid-like
    prototypes that stand for the cluster in every space)."""
    u = _unit_rows(x)
    out = []
    for j in range(centroids.shape[0]):
        idx = np.flatnonzero(labels == j)
        order = np.argsort(-(u[idx] @ centroids[j]), kind="stable")
        out.append(idx[order[:per_cluster]])
    return out


def separations(distances: np.ndarray, groups: Sequence[Sequence[int]]) -> np.ndarray:
    """b of each cluster: over its prototypes, the mean of their smallest mean distance to another cluster's
    prototypes. `distances` [P, P] between all prototypes, `groups` the prototype indices of each cluster.
    A cluster with no other cluster (or no prototypes) gets NaN."""
    dist = np.asarray(distances, dtype=np.float64)
    out = np.full(len(groups), np.nan)
    for j, own in enumerate(groups):
        if not len(own):
            continue
        per_member = []
        for i in own:
            means = [float(dist[i, list(g)].mean()) for c, g in enumerate(groups) if c != j and len(g)]
            if means:
                per_member.append(min(means))
        if per_member:
            out[j] = float(np.mean(per_member))
    return out


def cluster_silhouette(distances: Sequence[Sequence[float]], separation: Sequence[float]) -> float:
    """ClusterFit ∈ [0, 1] of a memory: `distances[c]` its distances to cluster c's prototypes (itself left
    out), `separation[c]` that cluster's b. Own cluster: the smallest mean distance a; s = (b − a)/max(a, b)
    against the own cluster's b; (s + 1)/2. No usable cluster → 0.5."""
    best_a, best_b = math.inf, math.nan
    for d, b in zip(distances, separation):
        d = np.asarray([v for v in np.asarray(d, dtype=np.float64).ravel() if math.isfinite(v)])
        if d.size == 0 or not math.isfinite(b):
            continue
        a = float(d.mean())
        if a < best_a:
            best_a, best_b = a, float(b)
    if not math.isfinite(best_a):
        return NEUTRAL_FIT
    return _unit((silhouette(best_a, best_b) + 1.0) / 2.0)
