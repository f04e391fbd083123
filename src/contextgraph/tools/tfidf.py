"""A small TF-IDF index over tool metadata (docs/tools.md): built once at start-up, cosine-ranked queries.

Documents are token lists; tokens are lower-cased words split on anything non-alphanumeric (so `tool_find`
gives `tool`, `find`), stop words dropped and plural/verb endings folded by a light suffix rule, so that
"memories" finds `store_memory` and "loading" finds `tool_load`. Weights: tf = raw count, idf = ln((1+N)/(1+df)) + 1,
vectors L2-normalised; score = cosine."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    "a an and are as at be by for from has have how i in is it its of on or that the this to was what when "
    "where which who why will with you your do does not no can into than then there these those".split()
)


def stem(word: str) -> str:
    for suffix, keep in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            return word[: -len(suffix)] + keep
    return word


def tokens(text: str) -> list[str]:
    return [stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP]


class TfIdfIndex:
    def __init__(self, documents: Mapping[str, Iterable[str]]) -> None:
        counts = {key: Counter(toks) for key, toks in documents.items()}
        n = len(counts)
        df: Counter[str] = Counter()
        for c in counts.values():
            df.update(c.keys())
        self.idf = {term: math.log((1 + n) / (1 + d)) + 1.0 for term, d in df.items()}
        self.vectors: dict[str, dict[str, float]] = {key: self._weigh(c) for key, c in counts.items()}

    def _weigh(self, counts: Mapping[str, int]) -> dict[str, float]:
        vec = {t: tf * self.idf[t] for t, tf in counts.items() if t in self.idf}
        norm = math.sqrt(sum(w * w for w in vec.values()))
        return {t: w / norm for t, w in vec.items()} if norm else {}

    def search(self, query: str, limit: int, keys: Iterable[str] | None = None) -> list[tuple[str, float]]:
        """(key, score) for documents sharing a term with the query, best first, ties by key."""
        q = self._weigh(Counter(tokens(query)))
        if not q:
            return []
        candidates = self.vectors if keys is None else {k: self.vectors[k] for k in keys if k in self.vectors}
        scored = []
        for key, vec in candidates.items():
            score = sum(w * vec.get(t, 0.0) for t, w in q.items())
            if score > 0.0:
                scored.append((key, score))
        scored.sort(key=lambda kv: (-kv[1], kv[0]))
        return scored[:limit]
