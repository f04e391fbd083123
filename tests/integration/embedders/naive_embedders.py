"""The per-memory embedders as they were before the batch paths (issue 19.1), kept verbatim as the naive
reference that tests/unit/embedders/test_batch_embedders.py compares the vectorised embedders with: one Python
loop per memory, one numpy call per entity mention, span and token."""

from __future__ import annotations

import re

import numpy as np

from contextgraph.embedders import entities as en
from contextgraph.embedders.base import MemoryInput
from contextgraph.embedders.code_lexer import CLASSES, identifier_spans, keyword_spans, token_class_histogram
from contextgraph.embedders.e01_semantic import sentence_vector
from contextgraph.embedders.e07_code import CODE_MODALITIES, HISTOGRAM_SCALE, IDENTIFIER_WEIGHT, KEYWORD_WEIGHT
from contextgraph.embedders.e09_hdc import _TIE_FOLDED, _TIE_FULL, FOLDED_BITS, HYPER_BITS, N_GRAM, _letter
from contextgraph.embedders.e12_late_interaction import MAX_TOKENS
from contextgraph.embedders.entities import entities, triples
from contextgraph.vectors import l2_normalize, span_token_mask, weighted_mean

_SPACE = re.compile(r"\s+")
_FOLD_VOTES = np.bincount(np.arange(HYPER_BITS) % FOLDED_BITS, minlength=FOLDED_BITS)


# --- E9 ---------------------------------------------------------------------------------------------------------
def _majority(counts: np.ndarray, votes: np.ndarray, tie: np.ndarray) -> np.ndarray:
    twice = 2 * counts.astype(np.int64)
    return np.where(twice == votes, tie, twice > votes)


def hypervector(text: str) -> np.ndarray:
    chars = f" {_SPACE.sub(' ', text.lower()).strip()} "
    letters = np.stack([_letter(c) for c in chars])  # [n, 3, 1250]
    n = len(chars) - N_GRAM + 1
    trigrams = letters[:n, 2] ^ letters[1 : n + 1, 1] ^ letters[2 : n + 2, 0]
    counts = np.add.reduce(np.unpackbits(np.asarray(trigrams, dtype=np.uint8), axis=1), axis=0, dtype=np.uint32)
    return _majority(counts, np.full(HYPER_BITS, n), _TIE_FULL)


def fold(bits: np.ndarray) -> np.ndarray:
    counts = np.bincount(np.flatnonzero(bits) % FOLDED_BITS, minlength=FOLDED_BITS)
    return _majority(counts, _FOLD_VOTES, _TIE_FOLDED)


def e9(text: str) -> np.ndarray:
    return np.packbits(fold(hypervector(text)))


# --- E7 ---------------------------------------------------------------------------------------------------------
def e7_token_weights(item: MemoryInput) -> np.ndarray:
    encoded = item.encoded
    weights = np.where(encoded.special, 0.0, 1.0)
    if item.modality in CODE_MODALITIES:
        keyword = span_token_mask(encoded.offsets, encoded.special, keyword_spans(item.text))
        weights[keyword] = KEYWORD_WEIGHT
    identifier = span_token_mask(encoded.offsets, encoded.special, identifier_spans(item.text))
    weights[identifier] = IDENTIFIER_WEIGHT
    return weights


def e7(item: MemoryInput) -> np.ndarray:
    states = item.encoded.states
    pooled = weighted_mean(states, e7_token_weights(item))
    if not pooled.any():
        pooled = states.mean(axis=0)
    histogram = np.zeros(len(CLASSES), dtype=np.float32)
    if item.modality in CODE_MODALITIES:
        histogram = HISTOGRAM_SCALE * l2_normalize(token_class_histogram(item.text))
    norm = np.sqrt(1.0 + float(histogram @ histogram))
    return (np.concatenate([l2_normalize(pooled), histogram]) / norm).astype(np.float32)


# --- E11 --------------------------------------------------------------------------------------------------------
def e11(item: MemoryInput, pooling: str = "mean") -> np.ndarray:
    encoded = item.encoded
    mentions = []
    for mention in entities(encoded.text):
        mask = span_token_mask(encoded.offsets, encoded.special, [(mention.start, mention.end)])
        if mask.any():
            mentions.append(l2_normalize(encoded.states[mask].mean(axis=0)))
    if not mentions:
        return sentence_vector(encoded, pooling)
    return l2_normalize(np.mean(mentions, axis=0))


def e11_triples(item: MemoryInput) -> list[tuple[str, str, str, np.ndarray, np.ndarray]]:
    encoded = item.encoded
    text = encoded.text
    out = []
    for head, relation, tail in triples(text):
        h_at = text.find(head)
        t_at = text.find(tail, h_at + len(head)) if h_at >= 0 else -1
        if h_at < 0 or t_at < 0:
            continue
        vectors = []
        for start, term in ((h_at, head), (t_at, tail)):
            mask = span_token_mask(encoded.offsets, encoded.special, [(start, start + len(term))])
            if not mask.any():
                break
            vectors.append(l2_normalize(encoded.states[mask].mean(axis=0)).astype(np.float32))
        if len(vectors) == 2:
            out.append((head, relation, tail, vectors[0], vectors[1]))
    return out


# --- E12 --------------------------------------------------------------------------------------------------------
def e12_kept_tokens(item: MemoryInput, limit: int = MAX_TOKENS) -> np.ndarray:
    encoded = item.encoded
    text = encoded.text
    content = [
        i for i, ((start, end), special) in enumerate(zip(encoded.offsets.tolist(), encoded.special.tolist()))
        if not special and any(ch.isalnum() for ch in text[start:end])
    ]
    if len(content) > limit:
        ids = encoded.token_ids[content]
        rarest = np.argsort(-ids.astype(np.int64), kind="stable")[:limit]
        content = [content[i] for i in np.sort(rarest)]
    return np.array(content, dtype=np.int64)


def e12(item: MemoryInput, projection: np.ndarray) -> np.ndarray:
    encoded = item.encoded
    keep = e12_kept_tokens(item)
    states = encoded.states[keep] if len(keep) else encoded.states.mean(axis=0, keepdims=True)
    return l2_normalize(states @ projection)


# --- entities.py's sentence-opener and version-name tests, as regex searches over text[:start] ---------------
def opens_sentence(text: str, start: int) -> bool:
    return re.search(r"(?:^|[.!?:]\s+|\n\s*)$", text[:start]) is not None


def after_a_name(text: str, start: int, stop_words: frozenset[str]) -> bool:
    before = re.search(r"([A-Za-z][\w\-]*)\s$", text[:start])
    return before is not None and before.group(1).lower() not in stop_words


def naive_entities(text: str) -> list[en.Entity]:
    """entities.entities as it was: every earlier mention scanned for overlap, the regex searches above."""
    taken: list[tuple[int, int]] = []
    found: list[en.Entity] = []
    for kind, pattern in en._PATTERNS:
        for m in pattern.finditer(text):
            start, end = m.span()
            if kind == "phrase":
                start = en._skip_common_words(text, start, end)
                if start is None:
                    continue
                word = text[start:end]
                if (opens_sentence(text, start) and " " not in word
                        and re.fullmatch(r"[A-Z][a-z\-]*", word) is not None):
                    continue
            if kind == "loose_version" and not after_a_name(text, start, en._STOP):
                continue
            if any(start < hi and end > lo for lo, hi in taken):
                continue
            taken.append((start, end))
            found.append(en.Entity(text[start:end], kind.removeprefix("loose_"), start, end))
    return sorted(found, key=lambda e: e.start)
