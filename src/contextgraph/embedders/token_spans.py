"""Token ↔ character-span lookups for whole arrays of tokens at once (E7, E11, E12): which tokens a set of
character spans covers, the token range of each span, and how many alphanumeric characters each token holds.
They replace one numpy pass over every token per span (vectors.span_token_mask) with a binary search.

Token offsets from the backbone's tokenizer are character spans in text order: the non-special tokens' starts
and ends never decrease. Under that order the tokens overlapping a half-open span [lo, hi) are one contiguous
range — those that start before hi (a prefix) and end after lo (a suffix). Where a tokenizer ever breaks the
order, every function here falls back to the direct overlap test, so the answer is always the overlap set."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# str.isalnum of each ASCII code point, so only non-ASCII characters are asked one by one
_ASCII_ALNUM = np.array([chr(c).isalnum() for c in range(128)], dtype=bool)


def ordered(offsets: np.ndarray, special: np.ndarray) -> bool:
    real = offsets[~special]
    return bool((np.diff(real[:, 0]) >= 0).all() and (np.diff(real[:, 1]) >= 0).all())


def span_ranges(offsets: np.ndarray, special: np.ndarray,
                spans: Sequence[tuple[int, int]] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first, stop) int64 arrays, one pair per span: the non-special tokens overlapping span j are
    real[first[j]:stop[j]], with real = np.flatnonzero(~special) (an empty range when none overlaps).
    Needs the ordered offsets (see module docstring); `span_mask` handles any order."""
    real = offsets[~special]
    bounds = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
    # overlap ⟺ token start < hi and token end > lo
    first = np.searchsorted(real[:, 1], bounds[:, 0], side="right")
    stop = np.searchsorted(real[:, 0], bounds[:, 1], side="left")
    return first, np.maximum(stop, first)


def span_mask(offsets: np.ndarray, special: np.ndarray, spans: Sequence[tuple[int, int]]) -> np.ndarray:
    """bool [T]: the non-special tokens whose character range overlaps any of the half-open `spans` (the same
    set as vectors.span_token_mask, found by binary search instead of one pass per span)."""
    mask = np.zeros(len(offsets), dtype=bool)
    if len(spans) == 0:
        return mask
    if not ordered(offsets, special):
        starts, ends = offsets[:, 0], offsets[:, 1]
        for lo, hi in spans:
            mask |= (starts < hi) & (ends > lo)
        return mask & ~special
    first, stop = span_ranges(offsets, special, spans)
    # mark each range with +1 at its start and -1 at its stop; a token is covered where the running sum is > 0
    real = np.flatnonzero(~special)
    edges = np.zeros(len(real) + 1, dtype=np.int64)
    np.add.at(edges, first, 1)
    np.add.at(edges, stop, -1)
    mask[real] = np.cumsum(edges[:-1]) > 0
    return mask


def alnum_in_spans(text: str, offsets: np.ndarray) -> np.ndarray:
    """int64 [T]: how many alphanumeric characters (str.isalnum) lie in each token's character span."""
    points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    alnum = np.zeros(len(points), dtype=bool)
    ascii_ = points < 128
    alnum[ascii_] = _ASCII_ALNUM[points[ascii_]]
    for i in np.flatnonzero(~ascii_).tolist():
        alnum[i] = text[i].isalnum()
    running = np.concatenate([[0], np.cumsum(alnum, dtype=np.int64)])
    bounded = np.clip(offsets.astype(np.int64), 0, len(points))
    return running[bounded[:, 1]] - running[bounded[:, 0]]
