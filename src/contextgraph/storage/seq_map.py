"""seq → row (or slot) for an index, as one int32 array indexed by seq instead of a dict: 4 bytes a seq where a
dict of Python ints costs ~100 bytes a memory (≈ 100 MB an index at 1M memories, issue 19.5). Seqs are dense
(never reused, one a memory), so the array's holes are the deleted memories."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

_ABSENT = -1


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
        if seq >= len(self._at):
            grown = np.full(max(seq + 1, 2 * len(self._at)), _ABSENT, dtype=np.int32)
            grown[: len(self._at)] = self._at
            self._at = grown
        self._n += int(self._at[seq] == _ABSENT)
        self._at[seq] = at

    def pop(self, seq: int) -> int | None:
        at = self.get(seq)
        if at is not None:
            self._at[seq] = _ABSENT
            self._n -= 1
        return at
