"""A cluster's most characteristic terms: class-based TF-IDF (BERTopic's c-TF-IDF). Each cluster's texts are one
document; a term's weight is its frequency in the cluster (normalised by the cluster's length) times
log(1 + A / f), A the mean number of words per cluster and f the term's frequency over all clusters, so a term
that is frequent here and rare elsewhere ranks first. English stop words and tokens under 3 letters are dropped."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

_TOKENS = r"(?u)\b[a-zA-Z][a-zA-Z0-9_]{2,}\b"


def class_tfidf(texts: Sequence[str], labels: np.ndarray, k: int) -> tuple[np.ndarray, list[str]]:
    """([k, V] c-TF-IDF weights, vocabulary)."""
    # imported here, not with the module: `serve` imports this module before it answers tools/list, and the
    # handshake has no use for scikit-learn (docs/budgets.md#cpu-budgets)
    from sklearn.feature_extraction.text import CountVectorizer

    joined = [" ".join(t for t, lab in zip(texts, labels) if lab == c) for c in range(k)]
    vectorizer = CountVectorizer(stop_words="english", token_pattern=_TOKENS, lowercase=True)
    try:
        counts = np.asarray(vectorizer.fit_transform(joined).toarray(), dtype=np.float64)  # pyright: ignore
    except ValueError:  # nothing but stop words
        return np.zeros((k, 0)), []
    words_per_class = counts.sum(axis=1, keepdims=True)
    tf = counts / np.where(words_per_class > 0, words_per_class, 1.0)
    frequency = counts.sum(axis=0)
    mean_words = float(words_per_class.mean())
    idf = np.log(1.0 + mean_words / np.where(frequency > 0, frequency, 1.0))
    return tf * idf, list(vectorizer.get_feature_names_out())


def characteristic_terms(texts: Sequence[str], labels: np.ndarray, k: int, n_terms: int) -> list[list[str]]:
    """The `n_terms` highest-weighted terms of each of the k clusters (fewer when it has fewer words)."""
    weights, vocabulary = class_tfidf(texts, labels, k)
    out: list[list[str]] = []
    for row in weights:
        order = np.lexsort((np.arange(len(row)), -row))  # by weight, then vocabulary order
        out.append([vocabulary[i] for i in order[:n_terms] if row[i] > 0])
    return out
