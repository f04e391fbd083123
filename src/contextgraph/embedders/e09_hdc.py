"""E9 hdc: a hyperdimensional (binary spatter code) encoding of the text's characters.

    letter hypervectors   each character gets a random 10,000-bit vector from a generator seeded by a keyed
                          BLAKE2b hash of the character (stable across processes; no table to ship)
    binding by position   a character trigram (a, b, c) is ρ²(a) ⊕ ρ(b) ⊕ c: ρ is a cyclic shift of the bits
                          (np.roll), ⊕ is XOR (the product of bipolar vectors), so "abc" and "cba" differ
    bundling              the text vector is the bitwise majority of all its trigrams (ties broken by a fixed
                          seeded vector), over the lowercased text with whitespace collapsed and a space at
                          each end, so word boundaries and word order (across the space) are encoded too
    folding               10,000 → 1,024 bits by majority over the chunks that share a position modulo 1,024
                          (10 or 9 votes, ties again broken by a seeded vector)

The tokens are characters, not words: a one-character typo changes three trigrams out of a few hundred, where a
word code would replace a whole word. Majority folding keeps similar vectors similar (a flipped source bit flips
a folded bit only when its chunk's vote was close); XOR folding would multiply every difference ~10×.
Similarity is 1 − Hamming/1024: about 0.5 for unrelated random vectors, 1 for equal texts."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from contextgraph.embedders.base import MemoryInput
from contextgraph.fingerprint import SPACES, Kind

HYPER_BITS = 10_000
FOLDED_BITS = 1_024
N_GRAM = 3
SEED = 20_251_109
_HASH_KEY = b"contextgraph-e9"
_SPACE = re.compile(r"\s+")


@lru_cache(maxsize=4096)
def _letter(char: str) -> np.ndarray:
    """uint8 [N_GRAM, HYPER_BITS/8]: the character's hypervector shifted by 0, 1, 2, packed."""
    digest = hashlib.blake2b(char.encode("utf-8", "surrogatepass"), digest_size=8, key=_HASH_KEY).digest()
    bits = np.random.default_rng(int.from_bytes(digest, "big")).integers(0, 2, HYPER_BITS, dtype=np.uint8)
    return np.stack([np.packbits(np.roll(bits, shift)) for shift in range(N_GRAM)])


def _tie_breakers() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(SEED)
    return rng.integers(0, 2, HYPER_BITS, dtype=np.uint8).astype(bool), rng.integers(0, 2, FOLDED_BITS).astype(bool)


_TIE_FULL, _TIE_FOLDED = _tie_breakers()
# How many 10,000-bit positions fold onto each of the 1,024: 10 for the first 784, 9 for the rest.
_FOLD_VOTES = np.bincount(np.arange(HYPER_BITS) % FOLDED_BITS, minlength=FOLDED_BITS)


def hypervector(text: str) -> np.ndarray:
    """bool [HYPER_BITS]: the bundled trigram code of `text` before folding."""
    chars = f" {_SPACE.sub(' ', text.lower()).strip()} "
    letters = np.stack([_letter(c) for c in chars])  # [n, 3, 1250]
    n = len(chars) - N_GRAM + 1
    # trigram i = ρ²(cᵢ) ⊕ ρ(cᵢ₊₁) ⊕ cᵢ₊₂
    trigrams = letters[:n, 2] ^ letters[1 : n + 1, 1] ^ letters[2 : n + 2, 0]
    counts = np.add.reduce(np.unpackbits(np.asarray(trigrams, dtype=np.uint8), axis=1), axis=0, dtype=np.uint32)
    return _majority(counts, np.full(HYPER_BITS, n), _TIE_FULL)


def fold(bits: np.ndarray) -> np.ndarray:
    """bool [FOLDED_BITS]: majority of the bits at each position modulo FOLDED_BITS."""
    counts = np.bincount(np.flatnonzero(bits) % FOLDED_BITS, minlength=FOLDED_BITS)
    return _majority(counts, _FOLD_VOTES, _TIE_FOLDED)


def _majority(counts: np.ndarray, votes: np.ndarray, tie: np.ndarray) -> np.ndarray:
    twice = 2 * counts.astype(np.int64)
    return np.where(twice == votes, tie, twice > votes)


def hamming_similarity(query: np.ndarray, docs: np.ndarray) -> np.ndarray:
    """1 − Hamming/bits between packed uint8 vectors: query [B], docs [n, B]."""
    differing = np.bitwise_count(np.bitwise_xor(docs, query)).sum(axis=1, dtype=np.int64)
    return (1.0 - differing / (8.0 * query.shape[-1])).astype(np.float32)


class HdcEmbedder:
    space = 9
    name = SPACES[8].name
    kind: Kind = "binary"
    dim = FOLDED_BITS
    method = (
        f"binary spatter code: seeded {HYPER_BITS}-bit letter vectors, character trigrams bound by cyclic shift + "
        f"XOR, majority bundle, majority-folded to {FOLDED_BITS} bits (seed {SEED})"
    )

    def embed_text(self, text: str) -> np.ndarray:
        return np.packbits(fold(hypervector(text)))

    def embed_batch(self, items: Sequence[MemoryInput]) -> list[np.ndarray]:
        return [self.embed_text(item.text) for item in items]

    def similarity(self, query: np.ndarray, docs: Sequence[np.ndarray]) -> np.ndarray:
        if len(docs) == 0:
            return np.zeros(0, dtype=np.float32)
        return hamming_similarity(np.asarray(query, dtype=np.uint8), np.stack(docs).astype(np.uint8, copy=False))
