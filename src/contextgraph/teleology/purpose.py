"""Purpose vectors: PV = [A(E1,V) … A(E13,V)], A the similarity of a memory V to the north star in each space,
in that space's own measure (cosine for dense spaces, Jaccard of term sets for E6/E13, Hamming for E9, MaxSim
for E12), clipped to [0, 1] (retrieval.similarity.space_similarities, the measure the UTL uses too).

From a PV: the 78 cross-correlations (every pair i < j, cᵢⱼ = pvᵢ·pvⱼ: both spaces agree that the memory
serves the star), the 6 group alignments (mean PV over each group's spaces) and the scalar alignment (the PV's
weighted mean under the alignment weights, each space relative to the star's typical member: what stage 4, the
workspace and drift read)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from contextgraph.fingerprint import SPACES, Fingerprint
from contextgraph.retrieval.similarity import SpaceMeasure, space_similarities

N_SPACES = len(SPACES)
PAIRS: tuple[tuple[int, int], ...] = tuple((i, j) for i in range(N_SPACES) for j in range(i + 1, N_SPACES))
_ROWS, _COLS = (np.array(x) for x in zip(*PAIRS))


def purpose_vectors(by_space: Mapping[int, SpaceMeasure], star: Fingerprint, docs: Sequence[Fingerprint],
                    spaces: Sequence[int] | None = None) -> np.ndarray:
    """[len(docs), 13]: each doc's alignment to `star` in every space (only `spaces` computed; others 0)."""
    out = np.zeros((len(docs), N_SPACES))
    wanted = None if spaces is None else frozenset(spaces)
    for column, space in enumerate(SPACES):
        if wanted is not None and space.id not in wanted:
            continue
        out[:, column] = space_similarities(by_space, space, star, docs)
    return out


def cross_correlations(pv: np.ndarray) -> np.ndarray:
    """[..., 78]: pvᵢ·pvⱼ for every pair i < j (row-major over (i, j)), for one PV or a batch."""
    pv = np.asarray(pv, dtype=np.float64)
    return pv[..., _ROWS] * pv[..., _COLS]


def pair_names() -> list[str]:
    return [f"E{i + 1}xE{j + 1}" for i, j in PAIRS]


def group_alignments(pv: np.ndarray, groups: Mapping[str, Sequence[int]]) -> dict[str, np.ndarray]:
    """Mean PV over each group's spaces (space ids 1..13), for one PV or a batch."""
    pv = np.asarray(pv, dtype=np.float64)
    return {name: pv[..., [s - 1 for s in spaces]].mean(axis=-1) for name, spaces in groups.items()}


def weight_vector(weights: Mapping[int, float] | Sequence[float]) -> np.ndarray:
    """13 non-negative weights summing to 1 (a mapping space → weight, missing spaces 0, or a sequence)."""
    if isinstance(weights, Mapping):
        w = np.array([float(weights.get(s.id, 0.0)) for s in SPACES])
    else:
        w = np.asarray(weights, dtype=np.float64)
    if w.shape != (N_SPACES,) or not np.all(np.isfinite(w)) or (w < 0).any() or w.sum() <= 0:
        raise ValueError("alignment weights must be 13 finite non-negative numbers with a positive sum")
    return w / w.sum()


def alignment(pv: np.ndarray, weights: np.ndarray, reference: np.ndarray | None = None) -> np.ndarray:
    """The scalar alignment of each PV: its weighted mean (weights from weight_vector). With `reference` (13
    per-space similarities of a typical member of the star's own cluster: their median), each space's value is
    taken relative to it and capped at 1 first, so 1 means "as aligned as a typical member of the theme" in
    every space. Why: the raw similarities live on different scales per space (a member's E1 cosine to the
    centroid is ~0.65, its term-set Jaccard ~0.2), so a fixed threshold on their raw mean would cut through the
    theme itself; relative to the theme's own members it separates the theme from the rest."""
    pv = np.asarray(pv, dtype=np.float64)
    if reference is not None:
        ref = np.asarray(reference, dtype=np.float64)
        pv = np.minimum(pv / np.where(ref > 0, ref, 1.0), 1.0)
    return pv @ weights


def member_reference(member_pvs: np.ndarray, floor: float = 0.05) -> np.ndarray:
    """The per-space median PV of the star's members (at least `floor`, so no space divides by ~0)."""
    return np.maximum(np.median(np.asarray(member_pvs, dtype=np.float64), axis=0), floor)
