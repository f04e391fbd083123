"""Surprise ΔS (docs/utl.md): per embedding space i, ΔSᵢ ∈ [0, 1] is the novelty of a memory against what is stored.

Every content space scores in two steps:

1. A raw *local* statistic g ∈ [0, 1] in the space's own measure, against the memory's nearest stored
   neighbours (the memory itself never among them): `local_statistic` = √(d₁ · d̄ₖ), the geometric mean of the
   distance to the nearest stored memory and the mean distance to the k nearest. d₁ makes an exact duplicate 0
   and a light edit small; d̄ₖ separates "near one stored memory but off-topic" from "inside a stored topic".
   The per-space distance:
       knn             1 − similarity (cosine or the space's own measure)          E2-E4, E8, E10 and fallbacks
       gaussian        E1: Mahalanobis distance under a Ledoit–Wolf shrinkage covariance of the stored vectors,
                       d²(x, y)/2d (1 for two independent draws of the fit), once the store holds
                       `gaussian.min_samples`; cosine kNN below (a shrunk covariance of a few dozen vectors is
                       nearly isotropic and says nothing cosine does not)
       hybrid          E7: the mean of the calibrated gaussian and kNN scores
       asymmetric_knn  E5: ½·(g of cause→cause + g of effect→effect), each direction with its own neighbours
       hamming         E9: normalised Hamming distance
       maxsim          E12: 1 − ColBERT MaxSim
       jaccard         E6, E13 (sparse): d₁ = 1 − the largest Jaccard of term sets; d̄ₖ is replaced by the
                       idf-weighted share of the memory's terms that none of its neighbours uses
                       (`uncovered_share`): a new fact on a stored topic reuses the topic's rare words, an
                       unrelated text only the common ones
       transe          E11: √(calibrated kNN · TransE residual score) when the memory states a relation triple
                       the store knows (utl.transe), so a duplicate triple still scores 0
2. A *calibration* to [0, 1] on the store's own leave-one-out distribution: the same statistic for a sample of
   stored memories, each against the store without itself (`fit_calibration`). ΔS = sigmoid(slope·(logit g −
   location)): a memory as novel as the store's typical memory scores 0.5, a duplicate ~0, one beyond
   everything stored → 1. The location is the mean logit of the leave-one-out sample, shrunk toward 0 (the
   identity map g → g) by `prior_weight` pseudo-samples, so 5 memories calibrate a little and 100K fully; the
   slope is the logistic fitted to the sample's spread, bounded to `slope_bounds` (fitted slopes of real
   stores are 3-7, which would put every light edit at 0.000 and every new topic at 1.000: a bounded slope
   keeps both ends readable).

An empty store gives ΔS = 1: with nothing to compare against, everything is new. Likewise anything that cannot be
measured (NaN distance, no fit) counts as novel. Every function returns a finite float in [0, 1].

The older whole-store scores stay available (`knn_novelty`, `gaussian_novelty`: χ² CDF of the Mahalanobis
distance to the fitted mean), but they do not order duplicates below new facts on a stored topic: a duplicate
of a stored memory is exactly as typical of the store as the memory itself.

The covariance is Ledoit & Wolf (2004): Σ = (1 − s)·S + s·μ·I with S the sample covariance (divided by n), μ its
mean eigenvalue and s the closed-form optimal shrinkage; all of it from the n×n Gram matrix, so no d×d matrix
is formed. Σ's eigenvectors are S's, which keeps the O(m·d) Mahalanobis of probabilistic PCA: the top
directions with variances (1 − s)λⱼ + sμ, every other direction sμ. The chi-square CDF is the regularized lower
incomplete gamma P(dof/2, x/2), computed here so scipy is not a dependency.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

METHODS: dict[str, str] = {
    "knn": "√(d₁·d̄ₖ) of 1 − similarity to the k nearest stored (k = 5), calibrated on the store's "
           "leave-one-out sample",
    "asymmetric_knn": "mean of the cause→cause and effect→effect local statistics, each with its own nearest, "
                      "calibrated",
    "gaussian": "√(d₁·d̄ₖ) of Mahalanobis distances under a Ledoit–Wolf covariance of stored vectors, calibrated",
    "hybrid": "mean of the calibrated gaussian and kNN novelty scores",
    "hamming": "√(d₁·d̄ₖ) of normalised Hamming distances to the nearest stored bit vectors, calibrated",
    "maxsim": "√(d₁·d̄ₖ) of 1 − ColBERT MaxSim to the nearest stored documents, calibrated",
    "jaccard": "√(d₁·(¾u + ¼d₁)) with d₁ = 1 − the largest Jaccard of term sets and u the idf-weighted share of "
               "terms no neighbour uses, calibrated",
    "transe": "√(calibrated kNN · TransE residual score e²/(e² + σ²)) for a relation triple the store knows",
}

_EPS = 1e-15  # relative convergence of the incomplete-gamma series and continued fraction
_MAX_ITER = 100_000
_TINY = 1e-300  # Lentz's guard against a zero denominator
_VARIANCE_FLOOR = 1e-6  # relative to the mean variance trace(S)/d
_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.int64)


def unit_interval(x: float) -> float:
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
    return unit_interval(1.0 - float(top.mean()))


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
    return unit_interval(0.5 * (knn_novelty(forward_similarities, k) + knn_novelty(backward_similarities, k)))


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
        return unit_interval(_gamma_series(a, h))
    return unit_interval(1.0 - _gamma_continued_fraction(a, h))


# --- Gaussian (PPCA) --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GaussianFit:
    """Σ = V diag(λ) Vᵀ + σ²(I − V Vᵀ): `components` V [m, d] orthonormal rows, `variances` λ [m] > σ²,
    `residual_variance` σ² > 0, fitted to `samples` vectors with mean `mean` [d]; `shrinkage` the Ledoit–Wolf
    intensity s (σ² = s·μ)."""

    mean: np.ndarray
    components: np.ndarray
    variances: np.ndarray
    residual_variance: float
    samples: int
    shrinkage: float = 0.0

    @property
    def dim(self) -> int:
        return int(self.mean.shape[0])


def ledoit_wolf_shrinkage(centred: np.ndarray) -> float:
    """The Ledoit–Wolf shrinkage intensity s ∈ [0, 1] of centred samples [n, d], as sklearn.covariance computes
    it, from norms and the n×n Gram matrix only:

        S = XᵀX/n, μ = tr S/d, δ = ‖S − μI‖²_F/d, β = min(δ, (Σₖ‖xₖ‖⁴/n − ‖S‖²_F)/(n·d)), s = β/δ
    """
    x = np.asarray(centred, dtype=np.float64)
    n, d = x.shape
    if n < 1 or d < 1:
        return 1.0
    sq = np.einsum("ij,ij->i", x, x)
    gram = x @ x.T
    s_fro2 = float(np.sum(gram * gram)) / (n * n)  # ‖XᵀX‖²_F = ‖XXᵀ‖²_F
    mu = float(sq.sum()) / (n * d)
    delta = (s_fro2 - 2.0 * mu * float(sq.sum()) / n + d * mu * mu) / d
    beta = (float(np.sum(sq * sq)) / n - s_fro2) / (n * d)
    beta = min(max(beta, 0.0), delta)
    return 1.0 if delta <= 0.0 else float(beta / delta)


def fit_gaussian(samples: np.ndarray, max_components: int = 384) -> GaussianFit | None:
    """The Ledoit–Wolf Gaussian of the rows of `samples` [n, d]; fewer than two rows → None (no spread).

    S's eigenpairs come from the SVD of the centred samples (λ = σ²/n, at most min(n, d) of them); the top
    m = min(max_components, n, d) are kept with variances (1 − s)λ + sμ and every other direction gets sμ, the
    shrinkage target (a discarded direction's (1 − s)λ is dropped: with max_components ≥ rank nothing is).
    Identical samples (μ = 0) get a tiny isotropic variance so nothing divides by zero."""
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
    shrink = ledoit_wolf_shrinkage(centred)
    _, singular, vt = np.linalg.svd(centred, full_matrices=False)
    eig = singular**2 / n
    mu = float(np.sum(centred * centred)) / (n * d)
    floor = _VARIANCE_FLOOR * max(mu, 1e-12)
    residual = max(shrink * mu, floor)
    m = min(max_components, eig.size, d)
    variances = (1.0 - shrink) * eig[:m] + residual
    keep = variances > residual * (1.0 + 1e-12)
    return GaussianFit(mean=mean, components=np.ascontiguousarray(vt[:m][keep]), variances=variances[keep].copy(),
                       residual_variance=residual, samples=n, shrinkage=shrink)


def mahalanobis_sq_rows(fit: GaussianFit, diffs: np.ndarray) -> np.ndarray:
    """(x − y)ᵀ Σ⁻¹ (x − y) for each row of `diffs` [k, d] (differences of two vectors, no mean involved):
    the pairwise Mahalanobis distance the local statistic uses. Non-finite → inf."""
    dd = np.asarray(diffs, dtype=np.float64)
    if dd.ndim == 1:
        dd = dd.reshape(1, -1)
    if dd.shape[1] != fit.dim:
        raise ValueError(f"vectors have dimension {dd.shape[1]}, the fit {fit.dim}")
    with np.errstate(over="ignore", invalid="ignore"):
        z = dd @ fit.components.T
        z2 = z * z
        residual = np.maximum(np.einsum("ij,ij->i", dd, dd) - z2.sum(axis=1), 0.0)
        out = (z2 / fit.variances).sum(axis=1) + residual / fit.residual_variance
    return np.where(np.isfinite(out), out, np.inf)


def mahalanobis_distances(fit: GaussianFit, x: np.ndarray, others: np.ndarray) -> np.ndarray:
    """Normalised pairwise Mahalanobis distances u = d²(x, yⱼ)/(2d) of `x` to each row of `others`, mapped to
    [0, 1) as u/(1 + u) (so logit of the result is ln u): two independent draws of the fit have E[d²] = 2d."""
    v = np.asarray(x, dtype=np.float64).ravel()
    ys = np.asarray(others, dtype=np.float64).reshape(-1, v.size)
    if ys.shape[0] == 0:
        return np.zeros(0)
    u = mahalanobis_sq_rows(fit, ys - v) / (2.0 * fit.dim)
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(u), u / (1.0 + u), 1.0)


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
    return unit_interval(0.5 * (unit_interval(gaussian) + unit_interval(knn)))


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
    return unit_interval(float(distances.min()) / n_bits)


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
    return unit_interval(1.0 - max(maxsim(query_tokens, doc) for doc in docs))


# --- Jaccard ----------------------------------------------------------------------------------------------------


def jaccard(a: np.ndarray | Sequence[int], b: np.ndarray | Sequence[int]) -> float:
    """|A ∩ B| / |A ∪ B| of the sets of term ids; both empty → 0 (nothing shared to measure)."""
    sa = np.unique(np.asarray(a, dtype=np.int64).ravel())
    sb = np.unique(np.asarray(b, dtype=np.int64).ravel())
    union = np.union1d(sa, sb).size
    if union == 0:
        return 0.0
    return unit_interval(np.intersect1d(sa, sb, assume_unique=True).size / union)


def jaccard_novelty(terms: np.ndarray | Sequence[int], others: Sequence[np.ndarray | Sequence[int]]) -> float:
    """1 − the largest Jaccard similarity to any stored term set; none stored → 1."""
    if len(others) == 0:
        return 1.0
    return unit_interval(1.0 - max(jaccard(terms, o) for o in others))
