"""Tucker decomposition by HOSVD (De Lathauwer et al. 2000) of a memory × space × feature tensor.

Each mode's factor is the leading left singular vectors of the tensor's unfolding along that mode; the core is
the tensor multiplied by the factors' transposes. At full ranks the reconstruction is exact; truncated, its
error is bounded by the discarded singular values (quasi-optimal, within √N of the best rank-(r1,r2,r3) fit)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Tucker:
    core: np.ndarray  # [r1, r2, r3]
    factors: tuple[np.ndarray, ...]  # U_n: [I_n, r_n], orthonormal columns
    singular_values: tuple[np.ndarray, ...]  # of each unfolding, all of them

    def reconstruct(self) -> np.ndarray:
        out = self.core
        for mode, u in enumerate(self.factors):
            out = mode_product(out, u, mode)
        return out


def unfold(tensor: np.ndarray, mode: int) -> np.ndarray:
    """Mode-n unfolding: [I_n, product of the other dimensions]."""
    return np.moveaxis(tensor, mode, 0).reshape(tensor.shape[mode], -1)


def mode_product(tensor: np.ndarray, matrix: np.ndarray, mode: int) -> np.ndarray:
    """tensor ×_n matrix: mode `mode` of size J becomes matrix's rows ([I, J] @ along that mode)."""
    moved = np.moveaxis(tensor, mode, 0)
    out = np.tensordot(matrix, moved, axes=([1], [0]))
    return np.moveaxis(out, 0, mode)


def hosvd(tensor: np.ndarray, ranks: Sequence[int]) -> Tucker:
    """Truncated HOSVD; each rank is clipped to its mode's size (and the other modes' product)."""
    t = np.asarray(tensor, dtype=np.float64)
    if t.ndim != len(ranks):
        raise ValueError(f"need one rank per mode: tensor has {t.ndim} modes, got {len(ranks)} ranks")
    factors, spectra = [], []
    for mode, rank in enumerate(ranks):
        if rank < 1:
            raise ValueError("ranks must be at least 1")
        u, s, _ = np.linalg.svd(unfold(t, mode), full_matrices=False)
        factors.append(u[:, : min(rank, u.shape[1])])
        spectra.append(s)
    core = t
    for mode, u in enumerate(factors):
        core = mode_product(core, u.T, mode)
    return Tucker(core, tuple(factors), tuple(spectra))


def relative_error(tensor: np.ndarray, decomposition: Tucker) -> float:
    norm = float(np.linalg.norm(tensor))
    if norm == 0:
        return 0.0
    return float(np.linalg.norm(np.asarray(tensor, dtype=np.float64) - decomposition.reconstruct()) / norm)
