"""Approximate nearest neighbours for one dense space, over hnswlib; labels are memory seqs.

A cache, rebuildable from the store. Not thread-safe for mutation: IndexSet serialises mutation against searches.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import hnswlib
import numpy as np

# Label states, one byte per seq: hnswlib cannot say cheaply whether a label is live, and it matters (below).
_ABSENT, _LIVE, _DELETED = 0, 1, 2
_PARALLEL_FROM = 64  # hnswlib spawns threads per add_items call; for a handful of vectors that costs more


class DenseIndex:
    def __init__(
        self,
        dim: int,
        space: str = "cosine",
        M: int = 16,
        ef_construction: int = 200,
        ef_search: int = 64,
        capacity: int = 1024,
    ) -> None:
        if space not in ("ip", "cosine"):
            raise ValueError(f"space must be 'ip' or 'cosine', not {space!r}")
        self.dim, self.space, self.M = dim, space, M
        self.ef_construction, self.ef_search = ef_construction, ef_search
        self._index = hnswlib.Index(space=space, dim=dim)
        self._index.init_index(
            max_elements=max(capacity, 16), ef_construction=ef_construction, M=M,
            allow_replace_deleted=True,  # pyright: ignore[reportCallIssue]  (hnswlib ≥ 0.7 has it; its stub lags)
        )
        self._index.set_ef(ef_search)
        self._state = np.zeros(1024, dtype=np.uint8)  # indexed by seq
        self._live = 0

    def __len__(self) -> int:
        return self._live

    def _states(self, seqs: np.ndarray) -> np.ndarray:
        top = int(seqs.max()) + 1
        if top > len(self._state):
            grown = np.zeros(max(top, 2 * len(self._state)), dtype=np.uint8)
            grown[: len(self._state)] = self._state
            self._state = grown
        return self._state[seqs]

    def add(self, seqs: Sequence[int], matrix: np.ndarray) -> None:
        labels = np.asarray(seqs, dtype=np.int64)
        if not len(labels):
            return
        data = np.ascontiguousarray(matrix, dtype=np.float32).reshape(len(labels), -1)
        if data.shape[1] != self.dim:
            raise ValueError(f"vectors have dim {data.shape[1]}, index has {self.dim}")
        state = self._states(labels)
        # Re-adding a label must update its own slot. hnswlib's replace_deleted=True would instead move the
        # label into any vacant slot and leave the old slot's label mapping behind, to be erased later; so
        # deleted labels are revived in place (unmark) and only brand-new labels may take vacant slots.
        fresh = state == _ABSENT
        for i in np.flatnonzero(state == _DELETED):
            try:
                self._index.unmark_deleted(int(labels[i]))
            except RuntimeError:  # its slot was reused by another label: it is new again
                fresh[i] = True
        needed = self._index.element_count + int(fresh.sum())
        if needed > self._index.max_elements:
            self._index.resize_index(max(needed, 2 * self._index.max_elements))
        threads = 1 if len(labels) < _PARALLEL_FROM else -1
        if fresh.any():
            self._index.add_items(data[fresh], labels[fresh], num_threads=threads, replace_deleted=True)
        if not fresh.all():
            self._index.add_items(data[~fresh], labels[~fresh], num_threads=threads, replace_deleted=False)
        self._live += int((state != _LIVE).sum())
        self._state[labels] = _LIVE

    def remove(self, seq: int) -> None:
        if seq < len(self._state) and self._state[seq] == _LIVE:
            self._index.mark_deleted(seq)
            self._state[seq] = _DELETED
            self._live -= 1

    def search(self, vec: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The k nearest as (seq, similarity), best first: similarity is the dot product ("ip") or cosine."""
        k = min(k, self._live)
        query = np.ascontiguousarray(vec, dtype=np.float32).reshape(1, -1)
        while k > 0:
            try:
                labels, distances = self._index.knn_query(query, k=k, num_threads=1)
                break
            except RuntimeError:
                # hnswlib found fewer than k (many deleted neighbours): ask for fewer rather than fail
                k //= 2
        else:
            return []
        return [(int(s), 1.0 - float(d)) for s, d in zip(labels[0], distances[0])]

    # --- persistence -------------------------------------------------------------------------------------------

    @staticmethod
    def _meta_path(path: Path) -> Path:
        return path.with_name(path.name + ".meta.json")

    @staticmethod
    def _state_path(path: Path) -> Path:
        return path.with_name(path.name + ".state.npy")

    def save(self, path: Path | str) -> None:
        """Writes `path` (the graph) and two small siblings (parameters, label states)."""
        path = Path(path)
        self._index.save_index(str(path))
        np.save(self._state_path(path), self._state)
        meta = {"dim": self.dim, "space": self.space, "M": self.M, "ef_construction": self.ef_construction,
                "ef_search": self.ef_search, "live": self._live}
        self._meta_path(path).write_text(json.dumps(meta))

    @classmethod
    def load(cls, path: Path | str, ef_search: int | None = None) -> DenseIndex:
        path = Path(path)
        meta = json.loads(cls._meta_path(path).read_text())
        self = cls.__new__(cls)
        self.dim, self.space, self.M = meta["dim"], meta["space"], meta["M"]
        self.ef_construction = meta["ef_construction"]
        self.ef_search = ef_search if ef_search is not None else meta["ef_search"]
        self._index = hnswlib.Index(space=self.space, dim=self.dim)
        self._index.load_index(str(path), allow_replace_deleted=True)  # pyright: ignore[reportCallIssue]  (as above)
        self._index.set_ef(self.ef_search)
        self._state = np.load(self._state_path(path))
        self._live = int(meta["live"])
        # the three files must describe one index: a torn or mismatched sibling would answer wrong, not fail
        if self._state.ndim != 1 or int(np.count_nonzero(self._state == _LIVE)) != self._live:
            raise ValueError(f"{path.name}: the label states disagree with the {self._live} live entries")
        if self._index.element_count < self._live:
            raise ValueError(f"{path.name}: the graph holds {self._index.element_count} of {self._live} entries")
        return self
