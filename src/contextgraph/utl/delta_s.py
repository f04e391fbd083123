"""Surprise ΔS (SPEC §8): per embedding space i, ΔSᵢ ∈ [0, 1] is the novelty of a memory against what is stored.

    knn             1 − mean cosine of the k nearest stored vectors (k = 5); every space not named below
    asymmetric_knn  E5 (causal): ½·(kNN novelty of cause→cause + kNN novelty of effect→effect)
    gaussian        E1: Mahalanobis distance d² to a Gaussian fit of the stored vectors, mapped to [0, 1] by the
                    chi-square CDF with dof = d (under the fit, d² of a stored-like point is χ²(d), so the CDF is
                    the probability that a typical point lies closer: ~uniform for typical points, → 1 for outliers)
    hybrid          E7: mean of the gaussian and kNN scores
    hamming         E9: normalised Hamming distance to the nearest stored bit vector
    maxsim          E12: 1 − ColBERT MaxSim to the nearest stored token matrix
    jaccard         E13: 1 − max Jaccard of term sets

An empty store gives ΔS = 1: with nothing to compare against, everything is new. Likewise anything that cannot be
measured (NaN distance, no fit) counts as novel. Every function returns a finite float in [0, 1].

The Gaussian is probabilistic PCA (Tipping & Bishop 1999), not the full sample covariance: E1 has d = 384 and the
store often holds fewer memories than that, so the sample covariance is singular (rank ≤ n − 1) and its inverse
does not exist; shrinkage would need a tuned constant. PPCA keeps the top m principal directions with their own
variances and gives every other direction the mean of the discarded variance σ², which is the maximum-likelihood
Gaussian of that rank. It is always invertible and its Mahalanobis distance costs O(m·d) per point instead of
O(d²). The chi-square CDF is the regularized lower incomplete gamma P(dof/2, x/2), computed here (series below
a + 1, Lentz continued fraction above, as in Numerical Recipes gammp/gser/gcf) so scipy is not a dependency.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

METHODS: dict[str, str] = {
    "knn": "1 − mean cosine similarity of the k nearest stored vectors (k = 5)",
    "asymmetric_knn": "mean of cause→cause and effect→effect kNN novelty, each with its own k nearest",
    "gaussian": "Mahalanobis distance to a PPCA Gaussian fit of stored vectors, chi-square CDF (dof = d)",
    "hybrid": "mean of the gaussian and kNN novelty scores",
    "hamming": "normalised Hamming distance to the nearest stored bit vector",
    "maxsim": "1 − ColBERT MaxSim (mean over query tokens of the best cosine) to the nearest stored document",
    "jaccard": "1 − the largest Jaccard similarity of term-id sets to any stored memory",
}

_EPS = 1e-15  # relative convergence of the incomplete-gamma series and continued fraction
_MAX_ITER = 100_000
_TINY = 1e-300  # Lentz's guard against a zero denominator
_VARIANCE_FLOOR = 1e-6  # relative to the mean variance trace(S)/d
_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.int64)


def _unit(x: float) -> float:
    """Clamp to [0, 1]; an unmeasurable (NaN) value counts as novel → 1."""
    x = float(x)
    if math.isnan(x):
        return 1.0
    return min(max(x, 0.0), 1.0)


# --- kNN --------------------------------------------------------------------------------------------------------


def knn_novelty(similarities: Sequence[float] | np.ndarray, k: int) -> float:
    """1 − mean of the k largest similarities, each clipped to [0, 1] (NaN → 0). Fewer than k stored: the mean of
    all of them. Empty → 1."""
    if k < 1:
        raise ValueError(f"k must be at least 1 (got {k})")
    s = np.clip(np.nan_to_num(np.asarray(similarities, dtype=np.float64).ravel(), nan=0.0), 0.0, 1.0)
    if s.size == 0:
        return 1.0
    top = s if s.size <= k else np.partition(s, s.size - k)[s.size - k :]
    return _unit(1.0 - float(top.mean()))


def asymmetric_knn_novelty(
    forward_similarities: Sequence[float] | np.ndarray,
    backward_similarities: Sequence[float] | np.ndarray,
    k: int,
) -> float:
    """E5 causal novelty: ½·(knn_novelty(forward, k) + knn_novelty(backward, k)).

    `forward` holds the similarities of the new memory's cause half to each stored cause half, `backward` its effect
    half to each stored effect half. Each direction picks its own k nearest, because the memories with a known
    cause need not be those with a known effect. A memory whose cause is familiar but whose effect has never been
    seen (a known situation with a new outcome) therefore scores about ½ — half-novel — rather than 0, which a
    symmetric search would give by matching on the cause alone; a wholly new cause and effect scores 1.
    """
    return _unit(0.5 * (knn_novelty(forward_similarities, k) + knn_novelty(backward_similarities, k)))


# --- chi-square CDF ---------------------------------------------------------------------------------------------


def _gamma_series(a: float, x: float) -> float:
    """P(a, x) by its series; converges fast for x < a + 1."""
    ap = a
    term = total = 1.0 / a
    for _ in range(_MAX_ITER):
        ap += 1.0
        term *= x / ap
        total += term
        if abs(term) < abs(total) * _EPS:
            break
    return total * math.exp(-x + a * math.log(x) - math.lgamma(a))


def _gamma_continued_fraction(a: float, x: float) -> float:
    """Q(a, x) = 1 − P(a, x) by its continued fraction (modified Lentz); converges fast for x ≥ a + 1."""
    b = x + 1.0 - a
    c = 1.0 / _TINY
    d = 1.0 / b
    h = d
    for i in range(1, _MAX_ITER):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        if abs(d) < _TINY:
            d = _TINY
        c = b + an / c
        if abs(c) < _TINY:
            c = _TINY
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < _EPS:
            break
    return math.exp(-x + a * math.log(x) - math.lgamma(a)) * h


def chi2_cdf(x: float, dof: float) -> float:
    """Chi-square CDF: the regularized lower incomplete gamma P(dof/2, x/2).

    x ≤ 0 (or so small that x/2 underflows) → 0. +inf → 1 and NaN → 1: an unmeasurable point counts as novel.
    dof ≤ 0 (or non-finite) → ValueError.
    """
    dof = float(dof)
    if not (math.isfinite(dof) and dof > 0.0):
        raise ValueError(f"dof must be a positive finite number (got {dof})")
    x = float(x)
    if math.isnan(x) or x == math.inf:
        return 1.0
    a, h = 0.5 * dof, 0.5 * x
    if h <= 0.0:
        return 0.0
    if h < a + 1.0:
        return _unit(_gamma_series(a, h))
    return _unit(1.0 - _gamma_continued_fraction(a, h))


# --- Gaussian (PPCA) --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GaussianFit:
    """Σ = V diag(λ) Vᵀ + σ²(I − V Vᵀ): `components` V [m, d] orthonormal rows, `variances` λ [m] > σ²,
    `residual_variance` σ² > 0, fitted to `samples` vectors with mean `mean` [d]."""

    mean: np.ndarray
    components: np.ndarray
    variances: np.ndarray
    residual_variance: float
    samples: int

    @property
    def dim(self) -> int:
        return int(self.mean.shape[0])


def fit_gaussian(samples: np.ndarray, max_components: int = 32) -> GaussianFit | None:
    """The PPCA Gaussian of the rows of `samples` [n, d]; fewer than two rows → None (no spread to measure).

    V is the top m = min(max_components, n − 1, d) right singular vectors of the centred samples, λ their
    eigenvalues of the sample covariance S (divided by n − 1), σ² = (trace S − Σλ)/(d − m), the mean discarded
    eigenvalue. When m = d nothing is discarded and σ² is the smallest λ (that direction then moves into the
    residual term, an identical Σ). Every variance is floored at 1e-6 · max(trace S / d, 1e-12), so identical or
    few samples never divide by zero; components whose λ is not above σ² add nothing and are dropped.
    """
    if max_components < 0:
        raise ValueError(f"max_components must be non-negative (got {max_components})")
    x = np.nan_to_num(np.asarray(samples, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    if x.ndim != 2:
        raise ValueError(f"samples must be a 2-D array [n, d] (got shape {x.shape})")
    n, d = x.shape
    if n < 2 or d < 1:
        return None
    mean = x.mean(axis=0)
    centred = x - mean
    _, singular, vt = np.linalg.svd(centred, full_matrices=False)
    eig = singular**2 / (n - 1)
    trace = float(np.sum(centred * centred)) / (n - 1)
    floor = _VARIANCE_FLOOR * max(trace / d, 1e-12)
    m = min(max_components, n - 1, d, eig.size)
    kept = eig[:m]
    if m < d:
        residual = max(trace - float(kept.sum()), 0.0) / (d - m)
    else:
        residual = float(kept[-1]) if m else 0.0
    residual = max(residual, floor)
    kept = np.maximum(kept, floor)
    keep = kept > residual
    return GaussianFit(
        mean=mean,
        components=np.ascontiguousarray(vt[:m][keep]),
        variances=kept[keep].copy(),
        residual_variance=residual,
        samples=n,
    )


def mahalanobis_sq(fit: GaussianFit, x: np.ndarray | Sequence[float]) -> float:
    """(x − μ)ᵀ Σ⁻¹ (x − μ) in O(m·d): with z = V(x − μ), Σ zⱼ²/λⱼ + (‖x − μ‖² − Σ zⱼ²)/σ², the residual clamped
    at ≥ 0 against rounding. A non-finite result (NaN or overflowing input) → inf: unmeasurable counts as far."""
    v = np.asarray(x, dtype=np.float64).ravel()
    if v.shape[0] != fit.dim:
        raise ValueError(f"vector has dimension {v.shape[0]}, the fit {fit.dim}")
    diff = v - fit.mean
    z = fit.components @ diff
    z2 = z * z
    residual = max(float(diff @ diff) - float(z2.sum()), 0.0)
    value = float(np.sum(z2 / fit.variances)) + residual / fit.residual_variance
    return value if math.isfinite(value) else math.inf


def gaussian_novelty(fit: GaussianFit | None, x: np.ndarray | Sequence[float]) -> float:
    """χ²_d CDF of the Mahalanobis distance; no fit (fewer than two stored) → 1, everything is novel."""
    if fit is None:
        return 1.0
    return chi2_cdf(mahalanobis_sq(fit, x), dof=fit.dim)


def hybrid_novelty(gaussian: float, knn: float) -> float:
    """E7: the mean of the Gaussian and kNN scores, each clamped to [0, 1] (NaN counts as novel)."""
    return _unit(0.5 * (_unit(gaussian) + _unit(knn)))


# --- Hamming ----------------------------------------------------------------------------------------------------


def hamming_novelty(
    query_bits: np.ndarray | Sequence[int],
    stored_bits: np.ndarray | Sequence[np.ndarray],
    n_bits: int,
) -> float:
    """min over stored rows of popcount(query XOR row)/n_bits, on vectors packed by numpy.packbits (big-endian,
    ⌈n_bits/8⌉ bytes). Padding bits past n_bits are ignored. Empty store → 1."""
    if n_bits < 1:
        raise ValueError(f"n_bits must be at least 1 (got {n_bits})")
    n_bytes = (n_bits + 7) // 8
    q = np.asarray(query_bits, dtype=np.uint8).ravel()
    if q.size != n_bytes:
        raise ValueError(f"query has {q.size} bytes, {n_bits} bits need {n_bytes}")
    stored = np.asarray(stored_bits, dtype=np.uint8)
    if stored.size == 0:
        return 1.0
    stored = stored.reshape(-1, n_bytes)
    xor = np.bitwise_xor(stored, q)
    if n_bits % 8:
        xor[:, -1] &= np.uint8((0xFF << (8 - n_bits % 8)) & 0xFF)
    distances = _POPCOUNT[xor].sum(axis=1)
    return _unit(float(distances.min()) / n_bits)


# --- MaxSim -----------------------------------------------------------------------------------------------------


def _unit_rows(tokens: np.ndarray | Sequence[Sequence[float]]) -> tuple[np.ndarray, np.ndarray]:
    """Rows scaled to unit length (zero rows stay zero) and the mask of non-zero rows."""
    t = np.nan_to_num(np.asarray(tokens, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    if t.ndim == 1:
        t = t.reshape(1, -1) if t.size else t.reshape(0, 0)
    if not t.size:
        return t, np.zeros(t.shape[0], dtype=bool)
    # scale each row by its largest magnitude first: the norm of a row of tiny (subnormal) values underflows
    # to 0 and of huge ones overflows, while the direction is perfectly defined
    scale = np.abs(t).max(axis=1)
    nonzero = scale > 0
    t = np.divide(t, scale[:, None], out=np.zeros_like(t), where=nonzero[:, None])
    norms = np.linalg.norm(t, axis=1)
    unit = np.divide(t, norms[:, None], out=np.zeros_like(t), where=nonzero[:, None])
    return unit, nonzero


def maxsim(query_tokens: np.ndarray, doc_tokens: np.ndarray) -> float:
    """ColBERT MaxSim in [0, 1]: the mean over query tokens of the best cosine to any doc token, each clipped to
    [0, 1]. All-zero query tokens (padding) carry nothing and are left out of the mean; either side empty or all
    zero → 0."""
    q, q_mask = _unit_rows(query_tokens)
    doc, d_mask = _unit_rows(doc_tokens)
    if not q_mask.any() or not d_mask.any():
        return 0.0
    if q.shape[1] != doc.shape[1]:
        raise ValueError(f"query tokens have dimension {q.shape[1]}, doc tokens {doc.shape[1]}")
    cos = q[q_mask] @ doc[d_mask].T
    best = np.clip(np.nan_to_num(cos.max(axis=1), nan=0.0), 0.0, 1.0)
    return min(max(float(best.mean()), 0.0), 1.0)


def maxsim_novelty(query_tokens: np.ndarray, docs: Sequence[np.ndarray]) -> float:
    """1 − the largest MaxSim to any stored document; no documents → 1."""
    if len(docs) == 0:
        return 1.0
    return _unit(1.0 - max(maxsim(query_tokens, doc) for doc in docs))


# --- Jaccard ----------------------------------------------------------------------------------------------------


def jaccard(a: np.ndarray | Sequence[int], b: np.ndarray | Sequence[int]) -> float:
    """|A ∩ B| / |A ∪ B| of the sets of term ids; both empty → 0 (nothing shared to measure)."""
    sa = np.unique(np.asarray(a, dtype=np.int64).ravel())
    sb = np.unique(np.asarray(b, dtype=np.int64).ravel())
    union = np.union1d(sa, sb).size
    if union == 0:
        return 0.0
    return _unit(np.intersect1d(sa, sb, assume_unique=True).size / union)


def jaccard_novelty(terms: np.ndarray | Sequence[int], others: Sequence[np.ndarray | Sequence[int]]) -> float:
    """1 − the largest Jaccard similarity to any stored term set; none stored → 1."""
    if len(others) == 0:
        return 1.0
    return _unit(1.0 - max(jaccard(terms, o) for o in others))
