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
from contextgraph.vectors import as_matrix

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
_FOLD_ROWS = -(-HYPER_BITS // FOLDED_BITS)  # 10: the 10,000 bits zero-padded to 10 rows of 1,024
# Bit counting adds unpacked 0/1 bytes as eight lanes of a uint64 (SWAR): a lane holds at most 255, so a text's
# trigrams are bound and counted in runs of at most 255 rows (≈ 2.5 MB unpacked, cache-sized), ~8x fewer
# additions than a uint32 sum per bit and no batch-sized intermediate array.
_RUN = 255


def _normalised(text: str) -> str:
    return f" {_SPACE.sub(' ', text.lower()).strip()} "


def trigram_counts(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(uint32 [len(texts), HYPER_BITS], int64 [len(texts)]): per text, how many of its character trigrams set
    each bit, and how many trigrams it has. One table of the batch's distinct characters (each character's
    hypervector made once per batch), then per run of trigrams one gather-and-XOR and one SWAR sum."""
    chars = [_normalised(t) for t in texts]
    lengths = np.array([len(c) for c in chars], dtype=np.int64)
    n = np.maximum(lengths - N_GRAM + 1, 0)
    counts = np.zeros((len(texts), HYPER_BITS), dtype=np.uint32)
    if not n.any():
        return counts, n
    points = np.frombuffer("".join(chars).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    alphabet, codes = np.unique(points, return_inverse=True)
    table = np.stack([_letter(chr(int(c))) for c in alphabet])  # [U, 3, HYPER_BITS/8]
    rho2, rho1, rho0 = (np.ascontiguousarray(table[:, shift]) for shift in (2, 1, 0))
    start = 0
    for row, (length, trigrams) in enumerate(zip(lengths.tolist(), n.tolist())):
        c = codes[start : start + length]
        start += length
        for lo in range(0, trigrams, _RUN):
            hi = min(lo + _RUN, trigrams)
            # trigram i = ρ²(cᵢ) ⊕ ρ(cᵢ₊₁) ⊕ cᵢ₊₂
            bound = rho2[c[lo:hi]] ^ rho1[c[lo + 1 : hi + 1]] ^ rho0[c[lo + 2 : hi + 2]]
            bits = np.unpackbits(np.asarray(bound, dtype=np.uint8), axis=1)
            counts[row] += bits.view(np.uint64).sum(axis=0).view(np.uint8)
    return counts, n


def hypervectors(texts: Sequence[str]) -> np.ndarray:
    """bool [len(texts), HYPER_BITS]: the bundled trigram code of each text before folding."""
    counts, n = trigram_counts(texts)
    return _majority(counts, n[:, None], _TIE_FULL)


def hypervector(text: str) -> np.ndarray:
    """bool [HYPER_BITS]: the bundled trigram code of `text` before folding."""
    return hypervectors([text])[0]


def fold(bits: np.ndarray) -> np.ndarray:
    """bool [..., FOLDED_BITS]: majority of the bits at each position modulo FOLDED_BITS (one vector or a batch)."""
    bits = np.asarray(bits, dtype=bool)
    padded = np.zeros((*bits.shape[:-1], _FOLD_ROWS * FOLDED_BITS), dtype=np.uint8)
    padded[..., :HYPER_BITS] = bits
    counts = padded.reshape(*bits.shape[:-1], _FOLD_ROWS, FOLDED_BITS).sum(axis=-2, dtype=np.int64)
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
        return self.embed_texts([text])[0]

    def embed_texts(self, texts: Sequence[str]) -> list[np.ndarray]:
        return list(np.packbits(fold(hypervectors(texts)), axis=1)) if texts else []

    def embed_batch(self, items: Sequence[MemoryInput]) -> list[np.ndarray]:
        return self.embed_texts([item.text for item in items])

    def similarity(self, query: np.ndarray, docs: Sequence[np.ndarray]) -> np.ndarray:
        if len(docs) == 0:
            return np.zeros(0, dtype=np.float32)
        return hamming_similarity(np.asarray(query, dtype=np.uint8), as_matrix(docs, np.uint8))
