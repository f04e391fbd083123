"""Many memories' fingerprints held as one column per space: what stage 3 of retrieval scores.

A dense or binary space is one 2-D array [memories, dim] (each space's measure then runs as one matrix product
instead of first stacking a few hundred small arrays); a sparse space is a list of Sparse; E12 (multivector) a
list of [tokens, dim] arrays, views of one array. `decode_columns` (storage.codec) builds one straight from the
stored blobs, decoding only the spaces asked for; `from_fingerprints` from fingerprints already decoded (the UTL
neighbourhood that inject_context ranks). Both give the same numbers.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from contextgraph.fingerprint import SPACE_BY_ID, Fingerprint

Column = Any  # np.ndarray [n, dim] (dense, binary) or list (sparse: Sparse; multivector: [tokens, dim] arrays)


@dataclass(frozen=True, slots=True)
class FingerprintColumns:
    seqs: list[int]  # the memories held, in the order asked for (a memory not found is left out)
    columns: dict[int, Column]  # space → its column, one row per seq

    def __len__(self) -> int:
        return len(self.seqs)

    def __getitem__(self, space: int) -> Column:
        return self.columns[space]

    def fingerprint(self, row: int) -> Fingerprint:
        """Row `row` as a fingerprint of the spaces held (views, not copies: treat as values)."""
        return {space: column[row] for space, column in self.columns.items()}

    def rows(self) -> Rows:
        """The memories as fingerprints, each made when asked for (stage 4 and the answer need a few)."""
        return Rows(self)

    def take(self, rows: Sequence[int]) -> FingerprintColumns:
        """The given rows, in that order."""
        rows = list(rows)
        picked = np.asarray(rows, dtype=np.int64)
        return FingerprintColumns(
            [self.seqs[r] for r in rows],
            {space: column[picked] if isinstance(column, np.ndarray) else [column[r] for r in rows]
             for space, column in self.columns.items()})

    @classmethod
    def from_fingerprints(cls, seqs: Iterable[int], fingerprints: Iterable[Fingerprint | None],
                          spaces: Iterable[int] | None = None) -> FingerprintColumns:
        """The columns of decoded fingerprints (None: deleted since, left out). `spaces`: those to hold, by
        default every space of the first fingerprint."""
        pairs = [(seq, fp) for seq, fp in zip(seqs, fingerprints) if fp is not None]
        if spaces is None:
            spaces = sorted(pairs[0][1]) if pairs else []
        columns: dict[int, Column] = {}
        for space in spaces:
            values = [fp[space] for _, fp in pairs]
            columns[space] = stacked(space, values)
        return cls([seq for seq, _ in pairs], columns)


class Rows(Sequence[Fingerprint]):
    """A read-only sequence of FingerprintColumns' rows as fingerprints."""

    def __init__(self, columns: FingerprintColumns) -> None:
        self._columns = columns

    def __len__(self) -> int:
        return len(self._columns)

    def __getitem__(self, row: Any) -> Any:  # Sequence's int and slice overloads: only int is meaningful here
        if isinstance(row, slice):
            return [self._columns.fingerprint(r) for r in range(len(self))[row]]
        if not -len(self) <= row < len(self):
            raise IndexError(row)
        return self._columns.fingerprint(row % len(self))


def stacked(space: int, values: list[Any]) -> Column:
    """A dense or binary space's vectors as one array when they have one shape (a store mid-reindex may mix
    dimensions: then the list, and the space's measure reports the mismatch as it always did)."""
    kind = SPACE_BY_ID[space].kind
    if kind not in ("dense", "binary") or not values:
        return values
    if len({np.shape(v) for v in values}) != 1:
        return values
    return np.stack(values).astype(np.uint8 if kind == "binary" else np.float32, copy=False)
