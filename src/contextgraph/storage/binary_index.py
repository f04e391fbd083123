"""Exact Hamming search over packed bit vectors (E9: 1024 bits = uint8[128]); labels are memory seqs.

Rows are kept as a growing uint64 matrix, so a query is XOR + popcount (`np.bitwise_count`, numpy ≥ 2) over
16 words per row. Order of rows is irrelevant, so a delete moves the last row into the hole: no tombstones.

A cache, rebuildable from the store. Not thread-safe for mutation: IndexSet serialises mutation against searches.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from contextgraph.storage.seq_map import SeqMap

_CHUNK = 32768  # rows per XOR/popcount pass: bounds the temporaries (~4 MB each at 1024 bits)


class BinaryIndex:
    def __init__(self, bits: int, capacity: int = 1024) -> None:
        if bits <= 0 or bits % 8:
            raise ValueError(f"bits must be a positive multiple of 8, not {bits}")
        self.bits = bits
        self._nbytes = bits // 8
        self._words = -(-self._nbytes // 8)  # rows are zero-padded to whole words; zeros XOR to zero
        self._rows = np.zeros((max(capacity, 16), self._words), dtype=np.uint64)
        self._seq = np.zeros(len(self._rows), dtype=np.int64)  # row → seq
        self._n = 0
        self._row_of = SeqMap()  # seq → row

    def __len__(self) -> int:
        return self._n

    def _as_words(self, packed: np.ndarray) -> np.ndarray:
        packed = np.asarray(packed, dtype=np.uint8).reshape(-1, self._nbytes)
        if self._words * 8 != self._nbytes:
            packed = np.pad(packed, ((0, 0), (0, self._words * 8 - self._nbytes)))
        return np.ascontiguousarray(packed).view(np.uint64)

    def add(self, seqs: Sequence[int], packed: np.ndarray) -> None:
        """`packed`: uint8 [n, bits / 8], one row of packed bits per seq; re-adding a seq replaces its row."""
        words = self._as_words(packed)
        if len(words) != len(seqs):
            raise ValueError(f"{len(seqs)} seqs but {len(words)} rows of {self._nbytes} bytes")
        for seq, row in zip(seqs, words):
            seq = int(seq)
            at = self._row_of.get(seq)
            if at is None:
                if self._n == len(self._rows):
                    self._rows = np.concatenate([self._rows, np.zeros_like(self._rows)])
                    self._seq = np.concatenate([self._seq, np.zeros_like(self._seq)])
                at = self._n
                self._n += 1
                self._row_of[seq] = at
                self._seq[at] = seq
            self._rows[at] = row

    def remove(self, seq: int) -> None:
        at = self._row_of.pop(seq)
        if at is None:
            return
        last = self._n - 1
        if at != last:
            self._rows[at] = self._rows[last]
            self._seq[at] = self._seq[last]
            self._row_of[int(self._seq[at])] = at
        self._n = last

    def distances(self, query_bits: np.ndarray) -> np.ndarray:
        """int32 [len(self)]: Hamming distance from the query to every row, in row order."""
        q = self._as_words(query_bits)[0]
        out = np.empty(self._n, dtype=np.int32)
        ones = np.ones(self._words, dtype=np.float32)
        for a in range(0, self._n, _CHUNK):
            b = min(a + _CHUNK, self._n)
            # the per-word counts summed by a float32 matrix-vector product: exact (a row's sum is at most `bits`,
            # far below 2^24) and ~2x faster than numpy's integer sum along 16-word rows (52 -> 30 ms at 1M rows)
            out[a:b] = np.bitwise_count(self._rows[a:b] ^ q).astype(np.float32) @ ones
        return out

    def search(self, query_bits: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The k nearest as (seq, 1 − hamming / bits), best first."""
        k = min(k, self._n)
        if k <= 0:
            return []
        dist = self.distances(query_bits)
        # every row as close as the k-th, ordered by (distance, seq): ties resolve the same way whatever order
        # the rows were added or moved in, so a rebuilt index answers exactly like an incremental one
        top = np.flatnonzero(dist <= np.partition(dist, k - 1)[k - 1]) if k < self._n else np.arange(self._n)
        top = top[np.lexsort((self._seq[top], dist[top]))][:k]
        scores = 1.0 - dist[top] / self.bits
        return list(zip(self._seq[top].tolist(), scores.tolist()))

    def save(self, path: Path | str) -> None:
        with open(path, "wb") as f:
            np.savez(f, bits=np.int64(self.bits), rows=self._rows[: self._n], seqs=self._seq[: self._n])

    @classmethod
    def load(cls, path: Path | str) -> BinaryIndex:
        with np.load(path) as data:
            rows, seqs, bits = data["rows"], data["seqs"], int(data["bits"])
        # room to grow: with none, the first add after opening would copy every row (~1 s at 1M, on a store)
        self = cls(bits, capacity=len(rows) + max(len(rows) // 8, 1024))
        if rows.ndim != 2 or rows.shape[1] != self._words or len(seqs) != len(rows):
            raise ValueError(f"binary index: {rows.shape} rows for {len(seqs)} seqs of {bits} bits")
        self._rows[: len(rows)] = rows
        self._seq[: len(seqs)] = seqs
        self._n = len(rows)
        self._row_of = SeqMap.of(seqs)
        return self
