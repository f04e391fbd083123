"""seq → row (or slot) for an index, as one int32 array indexed by seq instead of a dict: 4 bytes a seq where a
dict of Python ints costs ~100 bytes a memory (≈ 100 MB an index at 1M memories). Seqs are dense
(never reused, one a memory), so the array's holes are the deleted memories."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

_ABSENT = -1


def grown(array: np.ndarray, top: int, fill: int = 0) -> np.ndarray:
    """`array` (indexed by seq on its first axis) with room for seq top − 1: itself when it has it, else a copy
    at least twice as long, the new rows `fill`."""
    if top <= len(array):
        return array
    out = np.full((max(top, 2 * len(array)), *array.shape[1:]), fill, dtype=array.dtype)
    out[: len(array)] = array
    return out


class SeqMap:
    def __init__(self) -> None:
        self._at = np.full(1024, _ABSENT, dtype=np.int32)
        self._n = 0

    @classmethod
    def of(cls, seqs: Sequence[int] | np.ndarray) -> SeqMap:
        """Each of the distinct `seqs` mapped to its place in them (0, 1, …)."""
        self = cls()
        labels = np.asarray(seqs, dtype=np.int64)
        if len(labels):
            self._at = np.full(max(int(labels.max()) + 1, 1024), _ABSENT, dtype=np.int32)
            self._at[labels] = np.arange(len(labels), dtype=np.int32)
            self._n = len(labels)
        return self

    def __len__(self) -> int:
        return self._n

    def __contains__(self, seq: int) -> bool:
        return self.get(seq) is not None

    def get(self, seq: int) -> int | None:
        if 0 <= seq < len(self._at) and (at := int(self._at[seq])) != _ABSENT:
            return at
        return None

    def __setitem__(self, seq: int, at: int) -> None:
        self._at = grown(self._at, seq + 1, _ABSENT)
        self._n += int(self._at[seq] == _ABSENT)
        self._at[seq] = at

    def pop(self, seq: int) -> int | None:
        at = self.get(seq)
        if at is not None:
            self._at[seq] = _ABSENT
            self._n -= 1
        return at
