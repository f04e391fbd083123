"""The teleology kernels against naive references (loops over pairs, spaces and bits) and their properties
(hypothesis): purpose vectors, cross-correlations, group alignments, the relative alignment, the star's
centroid per space kind, HOSVD, the synergy rule, fusion and drift windows."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from contextgraph.embedders.e09_hdc import hamming_similarity
from contextgraph.embedders.e12_late_interaction import maxsim
from contextgraph.fingerprint import SPACES, Fingerprint, Sparse
from contextgraph.teleology import drift, synergy
from contextgraph.teleology.fusion import fuse, method_weights
from contextgraph.teleology.purpose import (
    PAIRS,
    alignment,
    cross_correlations,
    group_alignments,
    member_reference,
    purpose_vectors,
    weight_vector,
)
from contextgraph.teleology.star import blend, centroid
from contextgraph.teleology.tucker import hosvd, mode_product, relative_error, unfold

unit_floats = st.floats(0.0, 1.0, allow_nan=False)
pv_strategy = arrays(np.float64, 13, elements=unit_floats)


class Measure:
    """A space's similarity as the embedders compute it (cosine, Hamming, MaxSim), without a model."""

    def __init__(self, space: int) -> None:
        self.space = space
        self.kind = SPACES[space - 1].kind

    def similarity(self, query, docs):
        if self.kind == "binary":
            return hamming_similarity(query, np.stack(docs))
        if self.kind == "multivector":
            return maxsim(query, docs)
        q = np.asarray(query, dtype=np.float64)
        return np.array([float(q @ d / (np.linalg.norm(q) * np.linalg.norm(d) or 1.0)) for d in docs])


BY_SPACE = {s.id: Measure(s.id) for s in SPACES}


def fingerprint(rng: np.random.Generator, centre: np.ndarray | None = None, noise: float = 1.0) -> Fingerprint:
    fp: Fingerprint = {}
    for s in SPACES:
        if s.kind == "dense":
            base = centre[: 16] if centre is not None else np.zeros(16)
            fp[s.id] = (base + noise * rng.normal(size=16)).astype(np.float32)
        elif s.kind == "sparse":
            idx = np.sort(rng.choice(200, size=12, replace=False)).astype(np.int32)
            fp[s.id] = Sparse(idx, rng.random(12).astype(np.float32) + 0.1)
        elif s.kind == "binary":
            fp[s.id] = rng.integers(0, 256, size=16, dtype=np.uint8)
        else:
            m = rng.normal(size=(5, 8))
            fp[s.id] = (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)
    return fp


# -- purpose vectors and what derives from them -----------------------------------------------------------------
@given(pv_strategy)
def test_cross_correlations_are_every_pair_product(pv):
    naive = [pv[i] * pv[j] for i in range(13) for j in range(13) if i < j]
    assert len(PAIRS) == 78
    np.testing.assert_allclose(cross_correlations(pv), naive)
    batch = np.stack([pv, pv[::-1]])
    np.testing.assert_allclose(cross_correlations(batch)[1], cross_correlations(pv[::-1]))


@given(pv_strategy)
def test_group_alignments_are_group_means(pv):
    groups = {"a": [1, 6, 13], "b": [2, 3, 4], "c": [5]}
    got = group_alignments(pv, groups)
    for name, spaces in groups.items():
        assert got[name] == pytest.approx(sum(pv[s - 1] for s in spaces) / len(spaces))


@given(pv_strategy, arrays(np.float64, 13, elements=st.floats(0.01, 1.0)))
def test_alignment_is_weighted_mean_and_relative_to_a_typical_member(pv, raw_weights):
    w = weight_vector(list(raw_weights))
    assert w.sum() == pytest.approx(1.0)
    assert float(alignment(pv, w)) == pytest.approx(sum(p * x for p, x in zip(pv, w)))
    ref = np.full(13, 0.5)
    relative = float(alignment(pv, w, ref))
    assert relative == pytest.approx(sum(min(p / 0.5, 1.0) * x for p, x in zip(pv, w)))
    assert 0.0 <= relative <= 1.0 + 1e-9
    # a typical member (its PV equals the reference) is fully aligned
    assert float(alignment(ref, w, ref)) == pytest.approx(1.0)


def test_weight_vector_refuses_what_cannot_weigh():
    with pytest.raises(ValueError):
        weight_vector([0.0] * 13)
    with pytest.raises(ValueError):
        weight_vector([1.0] * 12)
    assert weight_vector({1: 2.0, 5: 2.0})[[0, 4]].tolist() == [0.5, 0.5]


def test_member_reference_is_the_median_with_a_floor():
    pvs = np.array([[0.2] * 13, [0.4] * 13, [0.9] * 13])
    pvs[:, 3] = 0.0
    ref = member_reference(pvs, floor=0.05)
    assert ref[0] == pytest.approx(0.4) and ref[3] == 0.05


def test_purpose_vectors_match_each_space_measured_alone():
    rng = np.random.default_rng(1)
    star, docs = fingerprint(rng), [fingerprint(rng) for _ in range(4)]
    pvs = purpose_vectors(BY_SPACE, star, docs)
    assert pvs.shape == (4, 13) and ((pvs >= 0) & (pvs <= 1)).all()
    for d, doc in enumerate(docs):
        for s in SPACES:
            if s.kind == "sparse":  # term sets: Jaccard
                a, b = set(star[s.id].indices.tolist()), set(doc[s.id].indices.tolist())
                expected = len(a & b) / len(a | b)
            else:
                expected = float(BY_SPACE[s.id].similarity(star[s.id], [doc[s.id]])[0])
            assert pvs[d, s.id - 1] == pytest.approx(min(max(expected, 0.0), 1.0), abs=1e-5)
    only = purpose_vectors(BY_SPACE, star, docs, spaces=[1, 5])
    assert (only[:, [0, 4]] == pvs[:, [0, 4]]).all() and not only[:, [1, 2, 3]].any()


# -- the star's centroid --------------------------------------------------------------------------------------
def test_centroid_per_space_kind_against_naive():
    rng = np.random.default_rng(2)
    members = [fingerprint(rng) for _ in range(7)]
    star = centroid(members)
    # dense: the renormalised mean of unit vectors (E2 kept as a plain mean)
    units = np.stack([m[1] / np.linalg.norm(m[1]) for m in members]).mean(axis=0)
    np.testing.assert_allclose(star[1], units / np.linalg.norm(units), atol=1e-6)
    np.testing.assert_allclose(star[2], np.stack([m[2] for m in members]).mean(axis=0), atol=1e-6)
    # binary: the bitwise majority, bit by bit
    bits = np.stack([np.unpackbits(m[9]) for m in members])
    naive = np.array([1 if bits[:, i].sum() * 2 >= len(members) else 0 for i in range(bits.shape[1])], dtype=np.uint8)
    assert (np.unpackbits(star[9]) == naive).all()
    # sparse: the median member's number of terms, most frequent first
    lengths = [len(m[6]) for m in members]
    assert len(star[6]) == int(np.median(lengths))
    counts: dict[int, int] = {}
    for m in members:
        for t in m[6].indices.tolist():
            counts[t] = counts.get(t, 0) + 1
    least_kept = min(counts[t] for t in star[6].indices.tolist())
    assert all(c <= least_kept for t, c in counts.items() if t not in set(star[6].indices.tolist()))
    # multivector: one unit token per member
    assert star[12].shape == (7, 8) and np.allclose(np.linalg.norm(star[12], axis=1), 1.0)


def test_centroid_is_closest_to_its_own_members():
    rng = np.random.default_rng(3)
    centre_a, centre_b = rng.normal(size=16) * 3, rng.normal(size=16) * 3
    theme = [fingerprint(rng, centre_a, 0.5) for _ in range(10)]
    other = [fingerprint(rng, centre_b, 0.5) for _ in range(10)]
    star = centroid(theme)
    mine = purpose_vectors(BY_SPACE, star, theme)[:, 0]
    theirs = purpose_vectors(BY_SPACE, star, other)[:, 0]
    assert mine.min() > theirs.max()


def test_blend_moves_dense_spaces_part_way():
    rng = np.random.default_rng(4)
    a, b = centroid([fingerprint(rng)]), centroid([fingerprint(rng)])
    half = blend(a, b, 0.5)
    expected = a[1].astype(np.float64) + b[1].astype(np.float64)
    np.testing.assert_allclose(half[1], expected / np.linalg.norm(expected), atol=1e-6)
    assert half[6] is b[6] and blend(a, b, 0.2)[6] is a[6]
    assert (blend(a, b, 0.0)[1] == a[1]).all()
    with pytest.raises(ValueError):
        blend(a, b, 1.5)


# -- HOSVD ----------------------------------------------------------------------------------------------------
def test_unfold_and_mode_product_match_loops():
    rng = np.random.default_rng(5)
    t = rng.normal(size=(3, 4, 5))
    m = rng.normal(size=(2, 4))
    naive = np.zeros((3, 2, 5))
    for i in range(3):
        for j in range(2):
            for k in range(5):
                naive[i, j, k] = sum(m[j, x] * t[i, x, k] for x in range(4))
    np.testing.assert_allclose(mode_product(t, m, 1), naive)
    assert unfold(t, 1).shape == (4, 15) and unfold(t, 1)[2, 0] == t[0, 2, 0]


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 6), st.integers(2, 6), st.integers(2, 7), st.integers(0, 1000))
def test_hosvd_full_rank_is_exact_and_factors_orthonormal(a, b, c, seed):
    t = np.random.default_rng(seed).normal(size=(a, b, c))
    d = hosvd(t, (a, b, c))
    assert relative_error(t, d) < 1e-9
    for u in d.factors:
        np.testing.assert_allclose(u.T @ u, np.eye(u.shape[1]), atol=1e-9)


def test_hosvd_truncation_error_is_bounded_by_discarded_singular_values():
    rng = np.random.default_rng(6)
    low = np.einsum("i,j,k->ijk", rng.normal(size=8), rng.normal(size=6), rng.normal(size=5))
    t = low + 0.01 * rng.normal(size=low.shape)
    d = hosvd(t, (1, 1, 1))
    assert relative_error(t, d) < 0.05  # a rank-1 tensor plus noise: one component explains it
    discarded = sum(float((s[1:] ** 2).sum()) for s in d.singular_values)
    assert np.linalg.norm(t - d.reconstruct()) ** 2 <= discarded + 1e-9


# -- synergy --------------------------------------------------------------------------------------------------
@given(arrays(np.float64, 13, elements=unit_floats), unit_floats, st.floats(0.001, 0.5),
       st.sampled_from(synergy.SCOPES))
def test_synergy_update_matches_the_rule_elementwise(s, y, rate, scope):
    m = synergy.initial(0.5)
    new, changed = synergy.update(m, s, y, rate, scope, 0.25)
    for i in range(13):
        for j in range(13):
            a = s[i] * s[j]
            allowed = scope == "all_pairs" or (scope == "contributing_pairs" and a >= 0.25) or \
                (scope == "high_synergy_only" and m[i, j] >= 0.5)
            expected = m[i, j] + rate * a * (y - m[i, j]) if allowed else m[i, j]
            assert new[i, j] == pytest.approx(min(max(expected, 0.0), 1.0), abs=1e-12)
    assert np.allclose(new, new.T) and ((new >= 0) & (new <= 1)).all()
    assert changed.shape == (13, 13) and (changed | np.isclose(new, m)).all()  # every change is reported


def test_synergy_converges_to_the_relevance_of_agreeing_pairs():
    m = synergy.initial()
    s = np.zeros(13)
    s[[0, 4]] = 1.0
    for _ in range(300):
        m, _ = synergy.update(m, s, 1.0, 0.05, "contributing_pairs")
    assert m[0, 4] == pytest.approx(1.0, abs=1e-3) and m[1, 2] == 0.5  # pairs that never agreed learn nothing


def test_reweight_keeps_the_sum_and_favours_synergy():
    m = synergy.initial()
    m[0, :] = m[:, 0] = 1.0
    w = np.full(13, 1.0 / 13)
    out = synergy.reweight(w, m)
    assert out.sum() == pytest.approx(1.0) and out[0] == out.max() and out[0] > w[0]


# -- fusion ---------------------------------------------------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), arrays(np.float64, 13, elements=st.floats(0.0, 1.0)).filter(lambda w: w[0] > 0.01))
def test_fused_dot_product_is_weighted_sum_of_space_cosines(seed, raw):
    rng = np.random.default_rng(seed)
    a, b = fingerprint(rng), fingerprint(rng)
    w = method_weights("linear", raw)
    fa, layout = fuse(a, w)
    fb, _ = fuse(b, w)
    expected = 0.0
    for s in SPACES:
        if s.kind == "sparse" or w[s.id - 1] <= 0:
            continue
        if s.kind == "binary":
            x, y = (2.0 * np.unpackbits(v[s.id]).astype(float) - 1 for v in (a, b))
        elif s.kind == "multivector":
            x, y = (np.asarray(v[s.id], dtype=float).mean(axis=0) for v in (a, b))
        else:
            x, y = (np.asarray(v[s.id], dtype=float) for v in (a, b))
        expected += w[s.id - 1] * float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))
    assert float(fa @ fb) == pytest.approx(expected, abs=1e-6)
    assert 6 not in layout and 13 not in layout


def test_fusion_methods_weights():
    groups = {"g1": [1, 2], "g2": [5]}
    w = method_weights("hierarchical", np.ones(13), groups=groups, priorities={"g1": 1.0, "g2": 2.0})
    assert w[0] == pytest.approx(w[1]) and w[4] == pytest.approx(2 * (w[0] + w[1])) and w[2] == 0
    pv = np.full(13, 0.1)
    pv[0] = 0.9
    assert method_weights("gated", np.ones(13), purpose=pv, gate=0.3).tolist() == [1.0] + [0.0] * 12
    att = method_weights("attention", np.ones(13), purpose=pv, temperature=0.1)
    assert att[0] == att.max() and att[5] == 0 and att.sum() == pytest.approx(1.0)
    with pytest.raises(ValueError):
        method_weights("attention", np.ones(13))


# -- drift ----------------------------------------------------------------------------------------------------
@given(st.lists(st.tuples(st.floats(0, 100, allow_nan=False), unit_floats), min_size=0, max_size=40))
def test_drift_windows_match_a_loop(points):
    times = np.array([p[0] for p in points])
    values = np.array([p[1] for p in points])
    w = drift.windows(times, values, end=100.0, span=100.0, n_windows=5)
    for k in range(5):
        inside = [v for t, v in points if 20 * k <= t < 20 * (k + 1)]  # the end instant itself is past the last
        assert w.counts[k] == len(inside)
        if inside:
            assert w.means[k] == pytest.approx(sum(inside) / len(inside))
        else:
            assert np.isnan(w.means[k])


def test_drift_slope_and_severity():
    times = np.arange(10) * 10.0 + 5
    falling = 0.9 - 0.05 * np.arange(10)
    w = drift.windows(times, falling, end=100.0, span=100.0, n_windows=10)
    assert w.slope == pytest.approx(-0.05)
    bounds = {"low": 0.05, "medium": 0.1, "high": 0.2}
    assert [drift.severity(d, bounds) for d in (0.0, 0.06, 0.15, 0.3)] == ["none", "low", "medium", "high"]
