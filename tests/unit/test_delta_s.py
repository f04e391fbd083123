import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from contextgraph.utl.delta_s import (
    METHODS,
    GaussianFit,
    asymmetric_knn_novelty,
    chi2_cdf,
    fit_gaussian,
    gaussian_novelty,
    hamming_novelty,
    hybrid_novelty,
    jaccard,
    jaccard_novelty,
    knn_novelty,
    mahalanobis_distances,
    mahalanobis_sq,
    mahalanobis_sq_rows,
    maxsim,
    maxsim_novelty,
)

FEW = settings(max_examples=50, deadline=None)


def in_unit(x: float) -> bool:
    return isinstance(x, float) and math.isfinite(x) and 0.0 <= x <= 1.0


# --- naive references -------------------------------------------------------------------------------------------


def naive_mahalanobis_sq(fit: GaussianFit, x: np.ndarray) -> float:
    """Build the full d×d PPCA Σ and solve."""
    d = fit.dim
    v = fit.components
    sigma = v.T @ np.diag(fit.variances) @ v + fit.residual_variance * (np.eye(d) - v.T @ v)
    diff = x - fit.mean
    return float(diff @ np.linalg.solve(sigma, diff))


def naive_hamming(query: np.ndarray, stored: np.ndarray, n_bits: int) -> float:
    qb = [(int(query[i // 8]) >> (7 - i % 8)) & 1 for i in range(n_bits)]
    best = n_bits
    for row in stored:
        rb = [(int(row[i // 8]) >> (7 - i % 8)) & 1 for i in range(n_bits)]
        best = min(best, sum(a != b for a, b in zip(qb, rb)))
    return best / n_bits


def naive_maxsim(q: np.ndarray, doc: np.ndarray) -> float:
    scores = []
    for a in q:
        na = math.sqrt(sum(float(v) ** 2 for v in a))
        if na == 0:
            continue
        best = 0.0
        for b in doc:
            nb = math.sqrt(sum(float(v) ** 2 for v in b))
            if nb == 0:
                continue
            best = max(best, sum(float(x) * float(y) for x, y in zip(a, b)) / (na * nb))
        scores.append(min(max(best, 0.0), 1.0))
    return sum(scores) / len(scores) if scores else 0.0


# --- kNN --------------------------------------------------------------------------------------------------------


def test_knn_against_sorted_mean():
    rng = np.random.default_rng(0)
    for _ in range(20):
        s = rng.uniform(-0.5, 1.2, size=rng.integers(1, 30))
        k = int(rng.integers(1, 8))
        ref = 1.0 - np.sort(np.clip(s, 0, 1))[::-1][:k].mean()
        assert knn_novelty(s, k) == pytest.approx(ref, abs=1e-12)


def test_knn_edges():
    assert knn_novelty([], 5) == 1.0
    assert knn_novelty([1.0], 5) == 0.0
    assert knn_novelty([float("nan"), 1.0], 2) == pytest.approx(0.5)
    assert knn_novelty([float("inf"), -float("inf")], 1) == 0.0
    with pytest.raises(ValueError):
        knn_novelty([0.5], 0)


sims = st.lists(st.floats(-2, 2), max_size=20)


@FEW
@given(sims, st.integers(1, 8))
def test_knn_in_unit(s, k):
    assert in_unit(knn_novelty(s, k))


@FEW
@given(st.lists(st.floats(0, 1), min_size=1, max_size=20), st.integers(1, 8), st.floats(0, 1))
def test_knn_non_increasing_with_more_similar_neighbour(s, k, extra):
    new = max(max(s), extra)  # at least as similar as every current neighbour
    assert knn_novelty([*s, new], k) <= knn_novelty(s, k) + 1e-12


def test_asymmetric_knn():
    assert asymmetric_knn_novelty([], [], 5) == 1.0
    # known cause, new effect → half novel
    assert asymmetric_knn_novelty([1.0, 0.9], [0.0, 0.0], 1) == pytest.approx(0.5)
    assert asymmetric_knn_novelty([1.0], [1.0], 5) == 0.0
    f, b = [0.2, 0.8, 0.4], [0.7, 0.1]
    assert asymmetric_knn_novelty(f, b, 2) == pytest.approx(0.5 * (knn_novelty(f, 2) + knn_novelty(b, 2)))


@FEW
@given(sims, sims, st.integers(1, 8))
def test_asymmetric_knn_in_unit(f, b, k):
    assert in_unit(asymmetric_knn_novelty(f, b, k))


# --- chi-square CDF ---------------------------------------------------------------------------------------------


def test_chi2_cdf_against_scipy():
    stats = pytest.importorskip("scipy.stats")
    worst = 0.0
    for dof in (1, 2, 5, 13, 100, 384, 1024, 4096):
        sd = math.sqrt(2 * dof)
        xs = [dof + t * sd for t in np.linspace(-6, 12, 61)] + [1e-8, 0.01, 0.5, 1.0, 3.0, 1e3, 1e5, 1e6]
        for x in xs:
            if x <= 0:
                continue
            worst = max(worst, abs(chi2_cdf(x, dof) - float(stats.chi2.cdf(x, dof))))
    assert worst < 1e-10


def test_chi2_cdf_closed_forms():
    for x in np.linspace(0.0, 60.0, 121):
        assert chi2_cdf(x, 2) == pytest.approx(1.0 - math.exp(-x / 2), abs=1e-13)
    # dof 1: P(½, x/2) = erf(√(x/2))
    for x in (0.01, 0.3, 1.0, 2.5, 7.0, 30.0):
        assert chi2_cdf(x, 1) == pytest.approx(math.erf(math.sqrt(x / 2)), abs=1e-13)


def test_chi2_cdf_edges():
    assert chi2_cdf(0.0, 5) == 0.0
    assert chi2_cdf(-3.0, 5) == 0.0
    assert chi2_cdf(math.inf, 5) == 1.0
    assert chi2_cdf(math.nan, 5) == 1.0
    assert chi2_cdf(-math.inf, 5) == 0.0
    assert chi2_cdf(5e-324, 1) == 0.0  # x/2 underflows
    assert chi2_cdf(1e-300, 1) == pytest.approx(math.erf(math.sqrt(5e-301)))
    assert chi2_cdf(1e6, 384) == pytest.approx(1.0, abs=1e-15)
    assert chi2_cdf(1e6, 4096) == pytest.approx(1.0, abs=1e-15)
    assert chi2_cdf(384, 384) == pytest.approx(0.5, abs=0.02)  # median ≈ dof − 2/3
    for bad in (0, -1, math.nan, math.inf):
        with pytest.raises(ValueError):
            chi2_cdf(1.0, bad)


@pytest.mark.parametrize("dof", [1, 2, 5, 13, 100, 384, 1024])
def test_chi2_cdf_monotone(dof):
    xs = np.linspace(0, max(dof + 20 * math.sqrt(2 * dof), 120.0), 400)
    values = [chi2_cdf(x, dof) for x in xs]
    assert all(in_unit(v) for v in values)
    assert all(b >= a - 1e-14 for a, b in itertools.pairwise(values))
    assert values[0] == 0.0 and values[-1] > 1 - 1e-12


@FEW
@given(st.floats(allow_nan=True, allow_infinity=True), st.floats(0.01, 5000))
def test_chi2_cdf_in_unit(x, dof):
    assert in_unit(chi2_cdf(x, dof))


# --- Gaussian ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("d", [16, 64])
@pytest.mark.parametrize("n", [10, 200])
def test_mahalanobis_against_full_covariance(d, n):
    rng = np.random.default_rng(d * 1000 + n)
    a = rng.normal(size=(d, d)) / math.sqrt(d)
    samples = rng.normal(size=(n, d)) @ a.T * rng.uniform(0.5, 3, size=d) + rng.normal(size=d)
    for max_components in (4, 32, 100):
        fit = fit_gaussian(samples, max_components=max_components)
        assert fit is not None
        m = fit.components.shape[0]
        assert m <= min(max_components, n, d)
        assert np.allclose(fit.components @ fit.components.T, np.eye(m), atol=1e-10)
        assert np.all(fit.variances > fit.residual_variance) and fit.residual_variance > 0
        for x in [*rng.normal(size=(5, d)) * 3, samples[0], fit.mean]:
            assert mahalanobis_sq(fit, x) == pytest.approx(naive_mahalanobis_sq(fit, x), rel=1e-6, abs=1e-9)


def naive_ledoit_wolf(x: np.ndarray) -> tuple[np.ndarray, float]:
    """Ledoit & Wolf (2004) with the d×d matrices written out (sklearn's formula, loop over samples)."""
    n, d = x.shape
    c = x - x.mean(axis=0)
    s = c.T @ c / n
    mu = np.trace(s) / d
    delta = np.sum((s - mu * np.eye(d)) ** 2) / d
    beta = sum(np.sum((np.outer(row, row) - s) ** 2) for row in c) / (n * n * d)
    shrink = min(beta, delta) / delta
    return (1 - shrink) * s + shrink * mu * np.eye(d), shrink


@pytest.mark.parametrize(("n", "d"), [(300, 8), (20, 40), (5, 3)])
def test_fit_is_ledoit_wolf(n, d):
    rng = np.random.default_rng(n + d)
    samples = rng.normal(size=(n, d)) @ rng.normal(size=(d, d))
    sigma, shrink = naive_ledoit_wolf(samples)
    fit = fit_gaussian(samples)
    assert fit.shrinkage == pytest.approx(shrink, rel=1e-9, abs=1e-12)
    v = fit.components
    rebuilt = v.T @ np.diag(fit.variances) @ v + fit.residual_variance * (np.eye(d) - v.T @ v)
    assert np.allclose(rebuilt, sigma, atol=1e-9 * np.abs(sigma).max())
    x = rng.normal(size=d)
    diff = x - samples.mean(axis=0)
    assert mahalanobis_sq(fit, x) == pytest.approx(float(diff @ np.linalg.solve(sigma, diff)), rel=1e-7)
    try:
        from sklearn.covariance import ledoit_wolf
    except ImportError:  # scikit-learn is not a dependency; where it is installed it is the second reference
        return
    ref, ref_shrink = ledoit_wolf(samples)
    assert fit.shrinkage == pytest.approx(ref_shrink, rel=1e-9, abs=1e-12)
    assert np.allclose(rebuilt, ref, atol=1e-9 * np.abs(ref).max())


def test_pairwise_mahalanobis_against_solve():
    rng = np.random.default_rng(11)
    samples = rng.normal(size=(40, 12)) * rng.uniform(0.2, 3.0, size=12)
    fit = fit_gaussian(samples)
    sigma, _ = naive_ledoit_wolf(samples)
    x, ys = rng.normal(size=12), rng.normal(size=(6, 12))
    ref = np.array([(y - x) @ np.linalg.solve(sigma, y - x) for y in ys])
    assert np.allclose(mahalanobis_sq_rows(fit, ys - x), ref, rtol=1e-8)
    u = ref / 24.0
    assert np.allclose(mahalanobis_distances(fit, x, ys), u / (1 + u), rtol=1e-8)
    assert mahalanobis_distances(fit, x, np.zeros((0, 12))).size == 0


def test_fit_degenerate():
    assert fit_gaussian(np.zeros((0, 4))) is None
    assert fit_gaussian(np.ones((1, 4))) is None
    same = fit_gaussian(np.ones((5, 4)))
    assert same is not None and same.residual_variance > 0 and same.components.shape[0] == 0
    assert mahalanobis_sq(same, np.ones(4)) == 0.0
    assert gaussian_novelty(same, np.ones(4)) == 0.0
    assert gaussian_novelty(same, np.zeros(4)) == 1.0
    two = fit_gaussian(np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]]))
    assert two is not None and two.components.shape[0] == 1
    assert in_unit(gaussian_novelty(two, np.array([0.5, 0.0, 0.0])))
    assert gaussian_novelty(None, np.zeros(3)) == 1.0
    with pytest.raises(ValueError):
        mahalanobis_sq(two, np.zeros(4))


def test_gaussian_novelty_calibrated():
    rng = np.random.default_rng(42)
    d, n = 32, 2000
    a = rng.normal(size=(d, d)) / math.sqrt(d) + np.eye(d)
    mu = rng.normal(size=d)

    def draw(k):
        return rng.normal(size=(k, d)) @ a.T + mu

    fit = fit_gaussian(draw(n), max_components=32)
    scores = np.array([gaussian_novelty(fit, x) for x in draw(500)])
    assert abs(scores.mean() - 0.5) < 0.1
    assert 0.3 < np.quantile(scores, 0.5) < 0.7
    # far outliers: 10 standard deviations along random directions
    sd = np.sqrt(np.diag(a @ a.T))
    for _ in range(20):
        direction = rng.normal(size=d)
        direction /= np.linalg.norm(direction)
        assert gaussian_novelty(fit, mu + 10 * sd.max() * direction) > 0.99
    assert gaussian_novelty(fit, fit.mean) < gaussian_novelty(fit, fit.mean + 10 * sd)


def test_gaussian_novelty_low_rank_fit_still_orders():
    rng = np.random.default_rng(3)
    d = 384
    samples = rng.normal(size=(20, d))
    fit = fit_gaussian(samples)
    assert fit.components.shape[0] <= 19
    sd = math.sqrt(fit.residual_variance)
    near, far = fit.mean, fit.mean + 10 * sd * np.ones(d)  # 10 residual sds per coordinate
    assert gaussian_novelty(fit, near) < gaussian_novelty(fit, far)
    assert gaussian_novelty(fit, far) > 0.99


vectors = hnp.arrays(np.float64, st.tuples(st.integers(2, 12), st.integers(1, 6)), elements=st.floats(-100, 100))


@FEW
@given(vectors, st.integers(0, 8), st.data())
def test_gaussian_novelty_in_unit(samples, max_components, data):
    fit = fit_gaussian(samples, max_components)
    d = samples.shape[1]
    x = data.draw(hnp.arrays(np.float64, d, elements=st.floats(-1e3, 1e3)))
    for point in (x, np.zeros(d), samples[0], fit.mean):
        assert math.isfinite(mahalanobis_sq(fit, point)) and mahalanobis_sq(fit, point) >= 0
        assert in_unit(gaussian_novelty(fit, point))
    assert gaussian_novelty(fit, fit.mean) <= gaussian_novelty(fit, fit.mean + 10 * math.sqrt(fit.variances.max(
        initial=fit.residual_variance)) * np.ones(d)) + 1e-12


def test_hybrid():
    assert hybrid_novelty(0.2, 0.6) == pytest.approx(0.4)
    assert hybrid_novelty(2.0, -1.0) == 0.5
    assert hybrid_novelty(math.nan, 0.0) == 0.5
    assert in_unit(hybrid_novelty(math.inf, math.inf))


# --- Hamming ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n_bits", [8, 13, 64, 1024])
def test_hamming_against_bit_loop(n_bits):
    rng = np.random.default_rng(n_bits)
    bits = rng.integers(0, 2, size=(12, n_bits)).astype(np.uint8)
    packed = np.packbits(bits, axis=1)
    query = np.packbits(rng.integers(0, 2, size=n_bits).astype(np.uint8))
    assert hamming_novelty(query, packed, n_bits) == pytest.approx(naive_hamming(query, packed, n_bits))
    assert hamming_novelty(query, list(packed), n_bits) == pytest.approx(naive_hamming(query, packed, n_bits))
    assert hamming_novelty(packed[3], packed, n_bits) == 0.0


def test_hamming_edges():
    q = np.packbits(np.ones(16, dtype=np.uint8))
    assert hamming_novelty(q, np.zeros((0, 2), dtype=np.uint8), 16) == 1.0
    assert hamming_novelty(q, [], 16) == 1.0
    assert hamming_novelty(q, np.zeros((1, 2), dtype=np.uint8), 16) == 1.0
    # padding bits beyond n_bits are ignored
    assert hamming_novelty(np.array([0b10100001], np.uint8), np.array([[0b10100000]], np.uint8), 4) == 0.0
    with pytest.raises(ValueError):
        hamming_novelty(q, np.zeros((1, 2), dtype=np.uint8), 0)
    with pytest.raises(ValueError):
        hamming_novelty(q, np.zeros((1, 2), dtype=np.uint8), 64)


@FEW
@given(st.integers(1, 80), st.integers(0, 6), st.data())
def test_hamming_properties(n_bits, n, data):
    nb = (n_bits + 7) // 8
    q = data.draw(hnp.arrays(np.uint8, nb))
    stored = data.draw(hnp.arrays(np.uint8, (n, nb)))
    assert in_unit(hamming_novelty(q, stored, n_bits))
    assert hamming_novelty(q, np.vstack([stored, q[None, :]]), n_bits) == 0.0


# --- MaxSim -----------------------------------------------------------------------------------------------------


def test_maxsim_against_double_loop():
    rng = np.random.default_rng(11)
    for _ in range(10):
        q = rng.normal(size=(rng.integers(1, 6), 8))
        doc = rng.normal(size=(rng.integers(1, 9), 8))
        q[0] = 0.0 if rng.random() < 0.3 else q[0]
        doc[-1] = 0.0 if rng.random() < 0.3 else doc[-1]
        assert maxsim(q, doc) == pytest.approx(naive_maxsim(q, doc), abs=1e-12)
    docs = [rng.normal(size=(4, 8)) for _ in range(5)]
    q = rng.normal(size=(3, 8))
    assert maxsim_novelty(q, docs) == pytest.approx(1 - max(naive_maxsim(q, d) for d in docs), abs=1e-12)


def test_maxsim_edges():
    q = np.ones((2, 4))
    assert maxsim(np.zeros((0, 4)), q) == 0.0
    assert maxsim(q, np.zeros((0, 4))) == 0.0
    assert maxsim(np.zeros((2, 4)), q) == 0.0
    assert maxsim(q, np.zeros((3, 4))) == 0.0
    assert maxsim(q, -q) == 0.0
    assert maxsim_novelty(q, []) == 1.0
    assert maxsim_novelty(q, [q]) == pytest.approx(0.0, abs=1e-12)


token_mats = hnp.arrays(np.float64, st.tuples(st.integers(0, 5), st.just(4)), elements=st.floats(-10, 10))


@FEW
@given(token_mats, st.lists(token_mats, max_size=4))
def test_maxsim_properties(q, docs):
    assert in_unit(maxsim_novelty(q, docs))
    for doc in docs:
        assert in_unit(maxsim(q, doc))
    if np.any(np.linalg.norm(q, axis=1) > 1e-100):
        assert maxsim_novelty(q, [*docs, q]) == pytest.approx(0.0, abs=1e-9)


# --- Jaccard ----------------------------------------------------------------------------------------------------


term_ids = st.lists(st.integers(0, 30), max_size=15)


@FEW
@given(term_ids, term_ids)
def test_jaccard_against_sets(a, b):
    sa, sb = set(a), set(b)
    ref = len(sa & sb) / len(sa | sb) if sa | sb else 0.0
    assert jaccard(np.array(a, dtype=np.int64), np.array(b, dtype=np.int64)) == pytest.approx(ref)


@FEW
@given(term_ids, st.lists(term_ids, max_size=5))
def test_jaccard_novelty_properties(terms, others):
    assert in_unit(jaccard_novelty(terms, others))
    if terms:
        assert jaccard_novelty(terms, [*others, list(reversed(terms))]) == 0.0


def test_jaccard_edges():
    assert jaccard([], []) == 0.0
    assert jaccard_novelty([1, 2], []) == 1.0
    assert jaccard_novelty([], [[]]) == 1.0
    assert jaccard_novelty([1, 2, 3], [[3, 4], [1, 2, 5, 6]]) == pytest.approx(1 - 0.4)


# --- empty store ------------------------------------------------------------------------------------------------


def test_empty_store_is_fully_novel():
    assert knn_novelty([], 5) == 1.0
    assert asymmetric_knn_novelty([], [], 5) == 1.0
    assert gaussian_novelty(fit_gaussian(np.zeros((0, 8))), np.zeros(8)) == 1.0
    assert hybrid_novelty(1.0, knn_novelty([], 5)) == 1.0
    assert hamming_novelty(np.zeros(2, np.uint8), [], 16) == 1.0
    assert maxsim_novelty(np.ones((2, 4)), []) == 1.0
    assert jaccard_novelty([1], []) == 1.0


def test_methods_described():
    assert set(METHODS) == {"knn", "asymmetric_knn", "gaussian", "hybrid", "hamming", "maxsim", "jaccard", "transe"}
    assert all(isinstance(v, str) and v and "\n" not in v for v in METHODS.values())


def test_maxsim_of_rows_with_subnormal_values_keeps_their_direction():
    """Hypothesis found it: a row of 3e-162 has a squared norm that underflows to 0, yet a direction."""
    q = np.array([[1.0, 3e-162, 3e-162, 3e-162], [3e-162, 3e-162, 3e-162, 3e-162]])
    assert maxsim_novelty(q, [q]) == pytest.approx(0.0, abs=1e-9)


# --- the local statistic and its leave-one-out calibration (issue 11) ----------------------------------------------

from contextgraph.utl.calibration import (  # noqa: E402
    IDENTITY,
    Calibration,
    calibrated,
    fit_calibration,
    hybrid_geometric,
    local_statistic,
    logit,
    sparse_statistic,
    uncovered_share,
)


def test_local_statistic_exact_values():
    assert local_statistic([0.0, 0.5, 0.5], 5) == 0.0  # an exact duplicate among the neighbours
    assert local_statistic([0.25, 0.25], 1) == pytest.approx(0.25)
    assert local_statistic([0.1, 0.4, 0.7], 2) == pytest.approx(math.sqrt(0.1 * 0.25))
    assert local_statistic([0.9, 0.1], 5) == pytest.approx(math.sqrt(0.1 * 0.5))  # unsorted input
    assert local_statistic([], 5) == 1.0 and local_statistic([float("nan")], 5) == 1.0
    assert local_statistic([-1.0, 3.0], 2) == 0.0  # clipped to [0, 1]
    with pytest.raises(ValueError):
        local_statistic([0.1], 0)


@FEW
@given(st.lists(st.floats(0, 1), min_size=1, max_size=12), st.integers(1, 6), st.floats(0, 1))
def test_local_statistic_in_unit_and_monotone(distances, k, shrink):
    g = local_statistic(distances, k)
    assert in_unit(g)
    closer = [d * shrink for d in distances]  # every neighbour at most as far
    assert local_statistic(closer, k) <= g + 1e-12


def test_uncovered_share_and_sparse_statistic():
    assert uncovered_share([1.0, 3.0], [True, False]) == pytest.approx(0.75)
    assert uncovered_share([], []) == 1.0 and uncovered_share([0.0], [False]) == 1.0
    with pytest.raises(ValueError):
        uncovered_share([1.0], [True, False])
    assert sparse_statistic(1.0, [1.0], [False]) == 0.0  # a duplicate term set
    # an edit whose words all occur in some neighbour stays above the duplicate
    assert sparse_statistic(0.8, [1.0, 1.0], [True, True]) > 0.0
    # the same best Jaccard: the memory with more unseen rare terms is more novel
    assert sparse_statistic(0.1, [5.0, 1.0], [False, True]) > sparse_statistic(0.1, [5.0, 1.0], [True, False])
    assert in_unit(sparse_statistic(float("nan"), [1.0], [True]))


def test_calibration_prior_is_the_identity():
    for g in (0.0, 0.1, 0.5, 0.9, 1.0):
        assert IDENTITY(g) == pytest.approx(min(max(g, 1e-6), 1 - 1e-6), abs=1e-9)
        assert fit_calibration([])(g) == pytest.approx(IDENTITY(g), abs=1e-9)
    assert calibrated(IDENTITY, float("nan")) == 1.0


def test_calibration_centres_the_store_and_bounds_the_slope():
    rng = np.random.default_rng(5)
    loo = 1 / (1 + np.exp(-(0.3 + 0.35 * rng.logistic(size=400))))  # a store whose typical g is ~0.57
    cal = fit_calibration(loo, prior_weight=4, slope_bounds=(1.0, 1.5))
    assert cal.samples == 400
    assert cal.location == pytest.approx(0.3, abs=0.05)
    assert cal.slope == 1.5  # the fitted slope (~2.9) is bounded
    scores = np.array([cal(g) for g in loo])
    assert abs(np.median(scores) - 0.5) < 0.05  # the store's typical memory scores 0.5
    assert cal(0.0) < 1e-6 and cal(1.0) > 1 - 1e-6
    assert 0.0 < cal(0.05) < cal(0.2) < cal(0.57) < cal(0.9) < 1.0  # spread, not saturated


def test_calibration_shrinks_toward_the_prior_with_few_samples():
    few = fit_calibration([0.8] * 3, prior_weight=4)  # logit 0.8 = 1.386
    many = fit_calibration([0.8] * 300, prior_weight=4)
    assert 0 < few.location < many.location == pytest.approx(logit(0.8), rel=0.02)
    assert few.location == pytest.approx(3 * logit(0.8) / 7)
    with pytest.raises(ValueError):
        fit_calibration([0.5], slope_bounds=(2.0, 1.0))


def test_calibration_location_is_the_shrunk_median_logit():
    """Naive reference: location = n·median(logit g)/(n + w₀), the spread from the median absolute deviation."""
    rng = np.random.default_rng(11)
    loo = rng.uniform(0.05, 0.95, size=31)
    z = np.array([logit(v) for v in loo])
    cal = fit_calibration(loo, prior_weight=4, slope_bounds=(0.01, 100.0))
    assert cal.location == pytest.approx(31 * float(np.median(z)) / 35)
    med = float(np.median(z))
    var = (4 * math.pi**2 / 3 + 31 * (1.4826 * float(np.median(np.abs(z - med)))) ** 2) / 35
    assert cal.slope == pytest.approx(math.pi / math.sqrt(3 * var))


def test_stored_duplicates_do_not_make_every_other_memory_novel():
    """A session stores exact duplicates: their leave-one-out g is 0 (logit −14). A fifth of the sample at 0
    moves the median by a few ranks; a mean moved the location so far that a typical memory read ~0.95."""
    rng = np.random.default_rng(3)
    typical = 1 / (1 + np.exp(-(0.2 + 0.4 * rng.logistic(size=40))))
    clean = fit_calibration(typical)
    with_duplicates = fit_calibration(np.concatenate([typical, np.zeros(10)]))
    median_g = float(np.median(typical))
    assert clean(median_g) == pytest.approx(0.5, abs=0.05)
    assert with_duplicates(median_g) < 0.7  # still readable: a new fact is not pushed to the ceiling
    assert with_duplicates(0.0) < 1e-3  # a duplicate is still ~0


@FEW
@given(st.lists(st.floats(0, 1), min_size=0, max_size=20), st.floats(0, 1), st.floats(0, 1))
def test_calibrated_novelty_in_unit_and_monotone(loo, a, b):
    cal = fit_calibration(loo)
    lo, hi = sorted((a, b))
    assert in_unit(cal(lo)) and in_unit(cal(hi)) and cal(lo) <= cal(hi)
    assert isinstance(cal, Calibration)


def test_hybrid_geometric():
    assert hybrid_geometric(0.0, 0.9) == 0.0 and hybrid_geometric(0.25, 1.0) == pytest.approx(0.5)
    assert hybrid_geometric(float("nan"), 1.0) == 1.0 and in_unit(hybrid_geometric(2.0, -1.0))


# --- the whole method on generated data: topics as clusters on the sphere ----------------------------------------


def _sphere(rng, n, d):
    x = rng.normal(size=(n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _unit_rows(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _delta_s(store, x, k=5, loo_n=48, seed=0):
    """The E1 method by brute force: cosine local statistic, calibrated on leave-one-out stored memories."""
    def stat(v, others):
        return local_statistic(np.clip(1.0 - others @ v, 0.0, 1.0), k)

    idx = np.random.default_rng(seed).choice(len(store), min(loo_n, len(store)), replace=False)
    cal = fit_calibration([stat(store[i], np.delete(store, i, axis=0)) for i in idx])
    return cal(stat(x, store))


@pytest.mark.parametrize("n", [5, 50, 500, 3000])
def test_generated_topics_order_from_five_memories_to_thousands(n):
    """Memories are topic centres plus noise; probes: an exact duplicate, a light edit (a little noise), a
    paraphrase (more noise), a new point of a stored topic, a point of an unstored topic. ΔS orders them and
    spreads over [0, 1] at every store size, with the scored memory never part of its own neighbours."""
    rng = np.random.default_rng(n)
    d, topics = 64, max(2, min(40, n // 5))
    centres = _sphere(rng, topics + 1, d)
    labels = rng.integers(0, topics, size=n)
    store = _unit_rows(centres[labels] + 0.12 * rng.normal(size=(n, d)))
    base = store[0]
    probes = {
        "duplicate": base,
        "edit": _unit_rows(base + 0.01 * rng.normal(size=d)),
        "paraphrase": _unit_rows(base + 0.04 * rng.normal(size=d)),
        "new": _unit_rows(centres[labels[0]] + 0.12 * rng.normal(size=d)),
        "unrelated": _unit_rows(centres[topics] + 0.12 * rng.normal(size=d)),
    }
    scores = {kind: _delta_s(store, v) for kind, v in probes.items()}
    values = list(scores.values())
    assert all(in_unit(v) for v in values)
    assert values == sorted(values) and len(set(values)) == 5, scores
    assert scores["duplicate"] < 1e-3 and scores["unrelated"] > 0.7 and 0.2 < scores["new"] < 0.8, scores
