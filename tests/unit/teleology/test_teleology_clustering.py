"""Clustering for the north star and sub-goals, on planted themes: k by silhouette, the dominant cluster, its
stability across restarts, coherence against a loop, and c-TF-IDF labels that name each theme."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from contextgraph.teleology.clustering import cluster, coherence, dominant, member_silhouettes, stability, unit
from contextgraph.teleology.labels import characteristic_terms, class_tfidf


def blobs(sizes, dim=32, spread=0.15, seed=0):
    rng = np.random.default_rng(seed)
    centres = unit(rng.normal(size=(len(sizes), dim)))
    x = np.concatenate([c + spread * rng.normal(size=(n, dim)) for c, n in zip(centres, sizes)])
    labels = np.concatenate([[i] * n for i, n in enumerate(sizes)])
    return x, labels


def test_cluster_recovers_planted_themes_and_chooses_k_by_silhouette():
    x, truth = blobs([40, 25, 20, 15])
    c = cluster(x, 2, 8, seed=0)
    assert c.k == 4 and adjusted_rand_score(truth, c.labels) == pytest.approx(1.0)
    assert max(c.silhouettes_by_k, key=lambda k: c.silhouettes_by_k[k]) == 4
    assert np.allclose(np.linalg.norm(c.centroids, axis=1), 1.0)
    d = dominant(c.labels)
    assert (c.labels == d).sum() == 40


def test_dominant_by_weight_and_ties():
    labels = np.array([0, 0, 1, 1, 1, 2])
    assert dominant(labels) == 1
    assert dominant(labels, weights=np.array([5.0, 5.0, 1, 1, 1, 1])) == 0
    assert dominant(np.array([0, 1])) == 0  # a tie: the lowest index


def test_stability_is_one_for_a_real_theme_and_lower_for_noise():
    x, truth = blobs([40, 30, 30], seed=1)
    assert stability(x, np.flatnonzero(truth == 0), 3, seeds=4) == pytest.approx(1.0)
    noise = np.random.default_rng(2).normal(size=(100, 32))
    c = cluster(noise, 3, 3, seed=0)
    assert stability(noise, np.flatnonzero(c.labels == dominant(c.labels)), 3, seeds=4) < 0.95


def test_coherence_and_silhouettes_against_loops():
    x, _ = blobs([10, 10], seed=3)
    c = cluster(x, 2, 2)
    coh = coherence(x, c.labels, c.centroids)
    u = unit(x)
    for k in range(2):
        rows = [i for i in range(len(x)) if c.labels[i] == k]
        assert coh[k] == pytest.approx(sum(float(u[i] @ c.centroids[k]) for i in rows) / len(rows))
    sil = member_silhouettes(x, c.labels)
    i = 0
    same = [j for j in range(len(x)) if c.labels[j] == c.labels[i] and j != i]
    other = [j for j in range(len(x)) if c.labels[j] != c.labels[i]]
    a = np.mean([1 - u[i] @ u[j] for j in same])
    b = np.mean([1 - u[i] @ u[j] for j in other])
    assert sil[i] == pytest.approx((b - a) / max(a, b), abs=1e-9)


def test_degenerate_inputs_give_one_cluster():
    same = np.ones((5, 4))
    c = cluster(same, 2, 5)
    assert c.k == 1 and (c.labels == 0).all()
    assert cluster(np.zeros((0, 4)), 2, 5).k == 1


def test_labels_name_each_theme_by_its_distinctive_terms():
    texts = ["the kubernetes pod crashed", "a kubernetes node drained", "kubernetes pod restarted",
             "the sourdough bread rose", "bread dough rested overnight", "sourdough starter bubbled"]
    labels = np.array([0, 0, 0, 1, 1, 1])
    terms = characteristic_terms(texts, labels, 2, 3)
    assert terms[0][0] == "kubernetes" and "pod" in terms[0]
    assert terms[1][0] in ("sourdough", "bread") and "kubernetes" not in terms[1]
    weights, vocab = class_tfidf(texts, labels, 2)
    # c-TF-IDF: tf in the class × log(1 + mean words per class / frequency overall)
    words = [sum(len([w for w in t.split() if w not in ("the", "a")]) for t, lab in zip(texts, labels) if lab == c)
             for c in range(2)]
    k = vocab.index("kubernetes")
    expected = (3 / words[0]) * np.log(1 + np.mean(words) / 3)
    assert weights[0, k] == pytest.approx(expected)
    assert characteristic_terms(["the a an", "of the"], np.array([0, 1]), 2, 3) == [[], []]
