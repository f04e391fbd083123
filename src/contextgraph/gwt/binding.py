"""Per-memory binding (docs/engine.md): how well a candidate memory agrees with the current context across spaces.

Agreement in a space is the candidate's similarity to the context as a percentile of the context's
similarities to a sample of the store in that space (`context_agreement`, below): raw similarities are not
comparable across spaces (cosine, BM25, Jaccard, Hamming), percentiles against each space's own distribution
are, and they ask every space the same question: is this memory closer to the context than the store's typical
memory?

r_m measures how unanimous the spaces are, not which way: thirteen spaces that all put a memory last bind as
tightly as thirteen that put it first. The mean phase ψ_m tells the two apart (ψ_m < π/2: the verdict leans
to agreement), and the workspace admits only memories bound on the agreeing side (`agrees`).

Each space's agreement aᵢ ∈ [0, 1] becomes a phase θᵢ = π(1 − aᵢ): full agreement sits at 0, none at π. r_m is
the order parameter of those phases, so r_m ≈ 1 when every space agrees (or every space disagrees alike — a
consistent verdict binds as well; the workspace ranks by r_m × importance × alignment, so the agreement level
itself still counts there).
"""

from __future__ import annotations

import math

import numpy as np

from contextgraph.gwt.kuramoto import order_parameter
from contextgraph.vectors import clip_unit


def binding_phases(agreements: np.ndarray) -> np.ndarray:
    a = np.clip(np.nan_to_num(np.asarray(agreements, dtype=np.float64), nan=0.0), 0.0, 1.0)
    return math.pi * (1.0 - a)


def binding_r(agreements: np.ndarray) -> float:
    """r_m for one memory's agreements (1-d), or 0 for none."""
    return order_parameter(binding_phases(agreements))[0]


def binding(agreements: np.ndarray) -> tuple[float, float]:
    """(r_m, ψ_m) for one memory's agreements; none → (0, π/2)."""
    a = np.asarray(agreements, dtype=np.float64).ravel()
    if a.size == 0:
        return 0.0, math.pi / 2
    return order_parameter(binding_phases(a))


def agrees(psi: float) -> bool:
    """The spaces' mean verdict is agreement: the mean phase lies on the a > ½ side (θ < π/2)."""
    return psi < math.pi / 2


def binding_r_batch(agreements: np.ndarray) -> np.ndarray:
    """r_m for each row of an [m, 13] agreement matrix."""
    return binding_batch(agreements)[0]


def binding_batch(agreements: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(r_m, ψ_m) for each row of an [m, 13] agreement matrix."""
    a = np.asarray(agreements, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] == 0 or a.shape[1] == 0:
        n = a.shape[0] if a.ndim == 2 else 0
        return np.zeros(n), np.full(n, math.pi / 2)
    z = np.exp(1j * binding_phases(a)).mean(axis=1)
    return np.clip(np.abs(z), 0.0, 1.0), np.mod(np.angle(z), 2 * math.pi)


# --- binding = agreement with the context -------------------------------------------------------------------
#
# A standing among the operation's own candidates (what binding measured before) says which candidate a space
# puts first, not whether that space finds it close to the context at all: among ten irrelevant results one is
# still "best" in every space. Agreement with the context asks the store instead: a candidate's similarity to
# the query/context in space i, as a percentile of the same context's similarities to the stored memories in
# that space (a sample: the store's distribution of that space). 1 − a is then how many stored memories the
# space finds closer to the context than this candidate; a space that cannot tell the candidate from a random
# stored memory gives ~0.5 (θ = π/2), one that finds it closer than nearly everything gives ~1 (θ ≈ 0). Raw
# similarities are not comparable across spaces (cosine, BM25, Hamming …); percentiles against each space's own
# distribution are.


def context_agreement(similarity: float, reference: np.ndarray | list[float]) -> float:
    """a ∈ [0, 1] in one space: the mid-rank percentile of `similarity` (the candidate's similarity to the
    context) among `reference` (the context's similarities to a sample of stored memories in that space),
    (below + ½·ties + ½)/(R + 1) — never exactly 0 or 1 from a finite sample. No reference → the similarity
    itself clipped to [0, 1] (nothing to normalise against yet). NaN similarity → 0; NaN references are
    dropped."""
    ref = np.asarray(reference, dtype=np.float64).ravel()
    ref = ref[np.isfinite(ref)]
    s = float(similarity)
    if not math.isfinite(s):
        return 0.0
    if ref.size == 0:
        return min(max(s, 0.0), 1.0)
    below = int(np.count_nonzero(ref < s))
    ties = int(np.count_nonzero(ref == s))
    return (below + 0.5 * ties + 0.5) / (ref.size + 1)


def context_agreements(similarities: np.ndarray, references: list[np.ndarray] | np.ndarray) -> np.ndarray:
    """[m, S] agreements of m candidates in S spaces: `similarities` [m, S] (candidate × space, each in that
    space's own measure), `references[i]` the context's similarities to the stored sample in space i.
    Vectorised per space (one sort and two binary searches); equal to context_agreement cell by cell."""
    sims = np.asarray(similarities, dtype=np.float64)
    if sims.ndim != 2:
        raise ValueError(f"similarities must be [candidates, spaces] (got shape {sims.shape})")
    if len(references) != sims.shape[1]:
        raise ValueError(f"{sims.shape[1]} spaces of similarities, {len(references)} references")
    out = np.zeros_like(sims)
    for i in range(sims.shape[1]):
        ref = np.asarray(references[i], dtype=np.float64).ravel()
        ref = np.sort(ref[np.isfinite(ref)])
        col = sims[:, i]
        finite = np.isfinite(col)
        if ref.size == 0:
            out[:, i] = np.where(finite, clip_unit(col), 0.0)
            continue
        lo = np.searchsorted(ref, col, side="left")
        hi = np.searchsorted(ref, col, side="right")
        out[:, i] = np.where(finite, (lo + 0.5 * (hi - lo) + 0.5) / (ref.size + 1), 0.0)
    return out


def context_binding(similarities: np.ndarray, references: list[np.ndarray] | np.ndarray) -> tuple[np.ndarray,
                                                                                                    np.ndarray]:
    """(r_m, ψ_m) per candidate from its similarities to the context (docs/engine.md): agreements against the store's
    per-space distributions (context_agreements), phases θ = π(1 − a), their order parameter. A candidate that
    every space finds closer to the context than almost all stored memories binds with r_m → 1 and ψ_m → 0; one
    that the spaces cannot tell from a random memory, or disagree on, binds loosely or on the π/2 side."""
    return binding_batch(context_agreements(similarities, references))
