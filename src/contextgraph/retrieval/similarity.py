"""Per-space similarity in [0, 1]: how close a fingerprint is to its neighbours in one space, in that space's own
measure. Shared by the UTL computation (ΔS/ΔC), epistemic focal nodes and anything else that compares a memory
with its neighbourhood space by space. Pure numpy: the embedders passed in only compute."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from contextgraph.fingerprint import SPACES, Fingerprint, Space, sparse
from contextgraph.vectors import clip_unit


class SpaceMeasure(Protocol):
    """A space's own similarity (every embedder has one): the only thing these kernels ask of an embedder."""

    def similarity(self, query: Any, docs: Any) -> np.ndarray: ...


class SpaceColumns(Protocol):
    """Many fingerprints as one column per space (storage's FingerprintColumns): `docs[space]` is that space's
    vectors, one [n, dim] array for a dense or binary space, so a measure need not stack them."""

    def __len__(self) -> int: ...

    def __getitem__(self, space: int) -> Any: ...


Docs = Sequence[Fingerprint] | SpaceColumns


def jaccard_many(terms: np.ndarray, others: Sequence[np.ndarray]) -> np.ndarray:
    """jaccard(terms, o) for every o at once (one membership test over all their terms, not one set operation
    per document: ~10x faster for a 64-document sample). Each array holds unique term ids, as Sparse does."""
    lengths = np.array([len(o) for o in others], dtype=np.int64)
    if not len(others):
        return np.zeros(0)
    flat = np.concatenate([np.asarray(o) for o in others]) if lengths.sum() else np.zeros(0, dtype=np.int64)
    owner = np.repeat(np.arange(len(others)), lengths)
    shared = np.bincount(owner, weights=np.isin(flat, terms), minlength=len(others))
    union = len(terms) + lengths - shared
    return np.divide(shared, union, out=np.zeros(len(others)), where=union > 0)


def space_similarities(by_space: Mapping[int, SpaceMeasure], space: Space, fingerprint: Fingerprint,
                       neighbours: Docs) -> np.ndarray:
    """Similarities in [0, 1] of `fingerprint` to each neighbour in one space, in that space's own measure."""
    if not len(neighbours):
        return np.zeros(0)
    column = [fp[space.id] for fp in neighbours] if isinstance(neighbours, Sequence) else neighbours[space.id]
    if space.kind == "sparse":  # raw tf dot products are unbounded: compare term sets (Jaccard), docs/utl.md#surprise
        sims = jaccard_many(sparse(fingerprint[space.id]).indices, [sparse(doc).indices for doc in column])
    else:
        sims = np.asarray(by_space[space.id].similarity(fingerprint[space.id], column), dtype=np.float64)
    return clip_unit(sims)


LATE_INTERACTION, SEMANTIC = 12, 1


def context_similarities(by_space: Mapping[int, SpaceMeasure], context: Fingerprint, docs: Docs) -> np.ndarray:
    """[len(docs), 13]: each doc's similarity to `context` in every space's own [0, 1] measure: what binding
    compares with the context's similarities to a sample of the store (gwt.binding.context_agreements). E12
    borrows E1's: MaxSim against a whole reference sample costs more than every other space together."""
    out = np.zeros((len(docs), len(SPACES)))
    for column, space in enumerate(SPACES):
        if space.id == LATE_INTERACTION:
            continue
        out[:, column] = space_similarities(by_space, space, context, docs)
    out[:, LATE_INTERACTION - 1] = out[:, SEMANTIC - 1]
    return out
