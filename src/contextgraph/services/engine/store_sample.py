"""The samples of the store that the store model is fitted on: fingerprints drawn uniformly over sequence
numbers, the clusters of E1 vectors (the topics the coherence weights' second leave-one-out pass leaves out, and
the prototypes of ΔC's fallback silhouette before there is a leave-one-out sample), and a memory's distances to
the clusters nearest it."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

import numpy as np

from contextgraph.fingerprint import SPACES, Fingerprint, dense
from contextgraph.retrieval.similarity import LATE_INTERACTION, SpaceMeasure, space_similarities
from contextgraph.services.engine.store_model import Clusters
from contextgraph.storage.base import MemoryStore
from contextgraph.utl import delta_c as dc


def sample_fingerprints(store: MemoryStore, size: int,
                        spaces: Sequence[int] | None) -> tuple[list[int], list[Fingerprint]]:
    """Up to `size` stored fingerprints, drawn uniformly over sequence numbers (deleted ones are skipped),
    deterministic for a given store state."""
    last = store.last_seq()
    rng = random.Random(last)
    seqs = list(range(1, last + 1)) if last <= size else sorted(rng.sample(range(1, last + 1), size))
    fps = store.fingerprints(seqs, spaces=spaces) if spaces is not None else store.fingerprints(seqs)
    kept = [(s, f) for s, f in zip(seqs, fps) if f is not None]
    return [s for s, _ in kept], [f for _, f in kept]


def fit_clusters(store: MemoryStore, by_space: Mapping[int, SpaceMeasure], seqs: list[int],
                 sample: list[Fingerprint], per_cluster: int, max_clusters: int) -> Clusters | None:
    """Spherical k-means clusters of the sample's E1 vectors, each kept as its `per_cluster` prototype members;
    per space, how far apart the clusters stand (separations) and the median similarity of memories in
    different clusters (the baseline ΔC's connectivity is measured above). None below two clusters."""
    c = dc.cluster_count(len(seqs), 2, max_clusters)
    if c < 2:
        return None
    x = np.stack([dense(f[1]) for f in sample]).astype(np.float64)
    centroids, labels = dc.spherical_kmeans(x, c, seed=len(seqs))
    groups = dc.prototypes(x, centroids, labels, per_cluster)
    member_seqs = [[seqs[i] for i in g] for g in groups]
    flat = [s for g in member_seqs for s in g]
    fps = {s: f for s, f in zip(flat, store.fingerprints(flat)) if f is not None}  # deleted ones are skipped
    members = [[s for s in g if s in fps] for g in member_seqs]
    keep = [j for j, g in enumerate(members) if g]
    if len(keep) < 2:
        return None
    centroids = centroids[keep]
    members = [members[j] for j in keep]
    member_fps = [[fps[s] for s in g] for g in members]
    flat_fps = [f for g in member_fps for f in g]
    groups_idx, start = [], 0
    for g in members:
        groups_idx.append(list(range(start, start + len(g))))
        start += len(g)
    separation: dict[int, np.ndarray] = {}
    baseline: dict[int, float] = {}
    owner = np.repeat(np.arange(len(members)), [len(g) for g in members])
    across = owner[:, None] != owner[None, :]
    for space in SPACES:
        if space.id == LATE_INTERACTION:  # measured by E1 (below): E12 borrows E1's neighbours too
            continue
        dist = np.stack([1.0 - space_similarities(by_space, space, f, flat_fps) for f in flat_fps])
        np.fill_diagonal(dist, 0.0)
        separation[space.id] = dc.separations(dist, groups_idx)
        baseline[space.id] = float(np.median(1.0 - dist[across]))
    separation[LATE_INTERACTION] = separation[1]
    baseline[LATE_INTERACTION] = baseline[1]
    return Clusters(centroids, members, member_fps, separation, baseline)


def cluster_distances(clusters: Clusters | None, by_space: Mapping[int, SpaceMeasure], fp: Fingerprint,
                      exclude: frozenset[int], considered: int) -> dict[int, list[tuple[np.ndarray, float]]]:
    """Per space, for the `considered` clusters nearest `fp` in E1: (its distances to the cluster's prototypes,
    the cluster's separation b). `exclude` (the scored memory) is left out of the prototypes."""
    cl = clusters
    if cl is None:
        return {}
    v = np.nan_to_num(np.asarray(fp[1], dtype=np.float64))
    norm = np.linalg.norm(v)
    near = np.argsort(-(cl.centroids @ (v / norm if norm > 0 else v)), kind="stable")[:considered]
    chosen, rows = [], []
    for c in near.tolist():
        keep = [cl.prototype_starts[c] + i for i, s in enumerate(cl.members[c]) if s not in exclude]
        if keep:
            chosen.append((c, keep))
            rows.extend(keep)
    out: dict[int, list[tuple[np.ndarray, float]]] = {}
    flat = cl.prototype_columns.take(rows)
    bounds = np.cumsum([0] + [len(keep) for _, keep in chosen])
    for space in SPACES:  # one similarity call per space over every chosen prototype
        if space.id == LATE_INTERACTION:
            continue
        dist = 1.0 - space_similarities(by_space, space, fp, flat)
        out[space.id] = [(dist[bounds[j]:bounds[j + 1]], float(cl.separation[space.id][c]))
                         for j, (c, _) in enumerate(chosen)]
    # E12's MaxSim over every prototype's token matrix costs more than the rest together; its ClusterFit
    # is E1's, as its neighbours are E1's
    out[LATE_INTERACTION] = out[1]
    return out


def same_cluster(clusters: Clusters | None, seqs: Sequence[int],
                 sample: Sequence[Fingerprint]) -> dict[int, frozenset[int]]:
    """Per sampled memory, the sampled memories of its own cluster (itself included; each joins the centroid
    nearest its E1 vector, as k-means left them): what is left out to score it as if its topic were not stored.
    No clusters → {}."""
    if clusters is None or not len(seqs):
        return {}
    x = np.stack([dense(f[1]) for f in sample]).astype(np.float64)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    labels = (np.divide(x, norms, out=np.zeros_like(x), where=norms > 0) @ clusters.centroids.T).argmax(axis=1)
    groups: dict[int, list[int]] = {}
    for seq, label in zip(seqs, labels.tolist()):
        groups.setdefault(label, []).append(seq)
    members = {label: frozenset(g) for label, g in groups.items()}
    return {seq: members[label] for seq, label in zip(seqs, labels.tolist())}
