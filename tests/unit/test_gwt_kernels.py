"""Binding r_m, C = I·R·D and its states, and ΔC with ClusterFit: naive references and edge cases."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextgraph.constitution import constitution
from contextgraph.gwt import binding
from contextgraph.gwt import consciousness as cs
from contextgraph.utl import delta_c as dc

STATES = constitution()["gwt"]["consciousness_states"]


def test_binding_all_agree_is_one_and_split_is_zero():
    assert binding.binding_r(np.ones(13)) == pytest.approx(1.0)
    assert binding.binding_r(np.zeros(13)) == pytest.approx(1.0)  # a consistent "no" binds too
    half = np.array([1.0] * 6 + [0.0] * 6)
    assert binding.binding_r(half) == pytest.approx(0.0, abs=1e-12)
    assert binding.binding_r(np.array([])) == 0.0
    assert binding.binding_r(np.array([float("nan")] * 13)) == pytest.approx(1.0)


def test_binding_matches_a_naive_reference():
    a = np.random.default_rng(0).uniform(0, 1, (20, 13))
    naive = [abs(sum(complex(math.cos(math.pi * (1 - x)), math.sin(math.pi * (1 - x))) for x in row) / 13)
             for row in a]
    assert np.allclose(binding.binding_r_batch(a), naive)
    assert np.allclose([binding.binding_r(row) for row in a], naive)
    assert binding.binding_r_batch(np.zeros((0, 13))).size == 0


def test_consciousness_is_the_product_and_matches_the_formula():
    p = np.random.default_rng(1).uniform(0, 1, 13)
    q = p / p.sum()
    d = -(q * np.log(q)).sum() / math.log(13)
    out = cs.consciousness(0.7, 0.8, p)
    assert out["D"] == pytest.approx(d)
    assert out["R"] == pytest.approx(1 / (1 + math.exp(-(4 * 0.8 - 2))))
    assert out["C"] == pytest.approx(0.7 * out["R"] * d)


def test_differentiation_edges():
    assert cs.differentiation(np.ones(13)) == pytest.approx(1.0)
    assert cs.differentiation(np.eye(13)[0]) == 0.0
    for empty in (np.zeros(13), np.array([]), np.array([5.0]), np.full(13, np.nan), -np.ones(13)):
        assert cs.differentiation(empty) == 0.0
    out = cs.consciousness(float("nan"), float("inf"), np.zeros(13))
    assert all(math.isfinite(v) for v in out.values()) and out["C"] == 0.0


@pytest.mark.parametrize(("c", "state"), [
    (0.0, "DORMANT"), (0.2999, "DORMANT"), (0.3, "FRAGMENTED"), (0.4999, "FRAGMENTED"), (0.5, "EMERGING"),
    (0.7999, "EMERGING"), (0.8, "CONSCIOUS"), (0.95, "CONSCIOUS"), (0.9501, "HYPERSYNC"), (1.0, "HYPERSYNC"),
    (float("nan"), "DORMANT"), (-1.0, "DORMANT"),
])
def test_state_machine_on_the_constitution_bounds(c, state):
    assert cs.state(c, STATES) == state


@pytest.mark.parametrize(("c", "r", "state"), [
    (0.1, 0.96, "HYPERSYNC"), (0.85, 0.951, "HYPERSYNC"),  # D14: r > 0.95 first, whatever C says
    (0.85, 0.95, "CONSCIOUS"), (0.99, 0.9, "CONSCIOUS"),  # and C alone can no longer reach HYPERSYNC
    (0.6, 0.7, "EMERGING"), (0.0, float("nan"), "DORMANT"),
])
def test_hypersync_is_checked_first_on_r(c, r, state):
    assert cs.state(c, STATES, r) == state


def test_silhouette_and_cluster_fit():
    assert dc.silhouette(0.2, 0.8) == pytest.approx(0.75)
    assert dc.silhouette(0.8, 0.2) == pytest.approx(-0.75)
    assert dc.silhouette(0.0, 0.0) == 0.0
    x = np.array([1.0, 0.0])
    own = np.array([[0.9, 0.1], [1.0, 0.05]])
    other = np.array([[0.0, 1.0], [0.1, 0.9]])
    good = dc.cluster_fit(x, own, [other])
    bad = dc.cluster_fit(x, other, [own])
    assert good > 0.9 and bad < 0.1
    # naive reference
    cos = lambda u, v: 1 - u @ v / (np.linalg.norm(u) * np.linalg.norm(v))  # noqa: E731
    a = np.mean([cos(x, o) for o in own])
    b = np.mean([cos(x, o) for o in other])
    assert good == pytest.approx(((b - a) / max(a, b) + 1) / 2)


def test_cluster_fit_is_neutral_when_undefined():
    x = np.ones(4)
    assert dc.cluster_fit(x, np.zeros((0, 4)), []) == 0.5          # empty store
    assert dc.cluster_fit(x, np.ones((1, 4)), []) == 0.5           # one cluster only
    assert dc.cluster_fit(np.zeros(4), np.zeros((2, 4)), [np.zeros((2, 4))]) == 0.5  # zero vectors
    assert math.isfinite(dc.cluster_fit(np.full(4, np.nan), np.ones((2, 4)), [np.ones((1, 4))]))


def test_delta_c_with_cluster_fit_differs_from_without():
    conn, fit, cons = 0.6, 0.9, 0.8
    with_fit = dc.delta_c(conn, fit, cons)
    assert with_fit == pytest.approx(0.4 * 0.6 + 0.4 * 0.9 + 0.2 * 0.8)
    without = dc.delta_c(conn, 0.0, cons)
    renormalised = (0.4 * conn + 0.2 * cons) / 0.6
    assert with_fit != pytest.approx(without) and with_fit != pytest.approx(renormalised)


def test_connectivity_and_consistency():
    assert dc.connectivity([0.9, 0.2, 0.7], 0.5) == pytest.approx(0.8)
    assert dc.connectivity([], 0.5) == 0.0 and dc.connectivity([float("nan")], 0.5) == 0.0
    assert dc.consistency([]) == 1.0 and dc.consistency([0.4]) == 1.0
    assert dc.consistency([0.0, 1.0]) == pytest.approx(0.0)  # 1 − 4·variance: the largest spread → 0
    assert dc.consistency([0.4, 0.6]) == pytest.approx(0.96)
    # with this operation's own coherence: the mean squared difference from the recent ones
    assert dc.consistency([0.5, 0.5], 0.5) == 1.0
    assert dc.consistency([0.5, 0.5], 0.2) == pytest.approx(1 - 4 * 0.09)
    assert dc.consistency([], 0.3) == 1.0 and dc.consistency([0.4], 0.4) == 1.0
    assert 0.0 <= dc.delta_c(float("nan"), float("inf"), -3) <= 1.0


def test_cluster_fit_from_distances():
    assert dc.cluster_fit_from_distances([0.2, 0.2], [0.8]) == pytest.approx((0.75 + 1) / 2)
    assert dc.cluster_fit_from_distances([], [0.5]) == 0.5 and dc.cluster_fit_from_distances([0.1], []) == 0.5
    assert dc.cluster_fit_from_distances([float("nan")], [0.3]) == 0.5


# --- ClusterFit against clusters of stored memories (issue 11.2) ---------------------------------------------------


def _blobs(rng, per, d=16, spread=0.1, k=3):
    centres = rng.normal(size=(k, d))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    x = np.repeat(centres, per, axis=0) + spread * rng.normal(size=(k * per, d))
    return centres, x, np.repeat(np.arange(k), per)


def test_cluster_count_rule():
    assert [dc.cluster_count(n) for n in (0, 3, 4, 8, 50, 200, 10_000)] == [0, 0, 2, 2, 5, 10, 24]
    assert dc.cluster_count(100_000, hi=32) == 32


def test_spherical_kmeans_recovers_separated_clusters():
    rng = np.random.default_rng(0)
    _centres, x, truth = _blobs(rng, 30)
    found, labels = dc.spherical_kmeans(x, 3, seed=1)
    assert np.allclose(np.linalg.norm(found, axis=1), 1.0)
    # each found cluster is exactly one true cluster
    for j in range(3):
        assert len(set(truth[labels == j])) == 1
    again, labels_again = dc.spherical_kmeans(x, 3, seed=1)
    assert np.array_equal(labels, labels_again) and np.allclose(found, again)  # deterministic
    _, one = dc.spherical_kmeans(x[:2], 5)
    assert one.max() <= 1  # k capped at the number of rows


def test_prototypes_are_the_members_nearest_the_centroid():
    rng = np.random.default_rng(1)
    _, x, _ = _blobs(rng, 10)
    centroids, labels = dc.spherical_kmeans(x, 3, seed=0)
    protos = dc.prototypes(x, centroids, labels, 4)
    u = x / np.linalg.norm(x, axis=1, keepdims=True)
    for j, p in enumerate(protos):
        members = np.flatnonzero(labels == j)
        assert len(p) == min(4, members.size) and set(p) <= set(members)
        sims = u[members] @ centroids[j]
        assert np.min(u[p] @ centroids[j]) >= np.sort(sims)[-len(p)] - 1e-12


def test_separations_against_a_naive_loop():
    rng = np.random.default_rng(2)
    dist = rng.uniform(0, 1, size=(7, 7))
    groups = [[0, 1, 2], [3, 4], [5, 6]]
    got = dc.separations(dist, groups)
    for j, own in enumerate(groups):
        per = [min(np.mean([dist[i, m] for m in g]) for c, g in enumerate(groups) if c != j) for i in own]
        assert got[j] == pytest.approx(np.mean(per))
    assert np.isnan(dc.separations(dist[:2, :2], [[0, 1]])[0])  # one cluster: no b


def test_cluster_silhouette_members_score_above_and_outsiders_below_one_half():
    """The issue's bar: ClusterFit is no longer ≥ 0.5 by construction; content far from every cluster scores
    below 0.5, a member of a tight cluster well above it."""
    rng = np.random.default_rng(3)
    centres, x, truth = _blobs(rng, 20, spread=0.08)
    groups = [list(np.flatnonzero(truth == j)[:4]) for j in range(3)]
    flat = [i for g in groups for i in g]
    cos = 1.0 - (x / np.linalg.norm(x, axis=1, keepdims=True)) @ (x / np.linalg.norm(x, axis=1, keepdims=True)).T
    sep = dc.separations(cos[np.ix_(flat, flat)], [list(range(4 * j, 4 * j + 4)) for j in range(3)])

    def fit(v):
        v = v / np.linalg.norm(v)
        d = [1.0 - (x[g] / np.linalg.norm(x[g], axis=1, keepdims=True)) @ v for g in groups]
        return dc.cluster_silhouette(d, sep)

    member = centres[0] + 0.08 * rng.normal(size=16)
    outsider = rng.normal(size=16)
    outsider -= sum((outsider @ c) * c for c in centres)  # orthogonal to every topic
    assert fit(member) > 0.7
    assert fit(outsider) < 0.5
    assert dc.cluster_silhouette([], []) == 0.5 and dc.cluster_silhouette([[0.1]], [float("nan")]) == 0.5


@settings(max_examples=50, deadline=None)
@given(st.lists(st.lists(st.floats(0, 2), min_size=0, max_size=4), min_size=0, max_size=4),
       st.lists(st.floats(0, 2), min_size=4, max_size=4))
def test_cluster_silhouette_in_unit(distances, separation):
    assert 0.0 <= dc.cluster_silhouette(distances, separation[: len(distances)]) <= 1.0


def test_graded_connectivity():
    assert dc.graded_connectivity([1.0, 0.55, 0.1], 0.1) == pytest.approx((1.0 + 0.5 + 0.0) / 3)
    assert dc.graded_connectivity([], 0.2) == 0.0
    assert dc.graded_connectivity([0.05, 0.1], 0.1) == 0.0  # no closer than unrelated memories
    assert dc.graded_connectivity([float("nan"), 1.0], float("nan")) == pytest.approx(0.5)
    assert 0.0 <= dc.graded_connectivity([0.99], 1.0) <= 1.0


def test_store_percentile_is_the_mid_rank_among_the_store_own_values():
    sample = np.sort(np.array([0.1, 0.2, 0.2, 0.4, 0.9]))
    assert dc.store_percentile(0.0, sample) == pytest.approx(0.5 / 6)  # below every stored memory
    assert dc.store_percentile(1.0, sample) == pytest.approx(5.5 / 6)  # above every one
    assert dc.store_percentile(0.2, sample) == pytest.approx((1 + 0.5 * 2 + 0.5) / 6)  # ties count half
    assert dc.store_percentile(0.7, np.zeros(0)) == 0.7  # no sample yet: the raw value
    assert dc.store_percentile(float("nan"), sample) == dc.NEUTRAL_FIT


@pytest.mark.parametrize("measure", [dc.store_percentile, dc.store_standing], ids=["percentile", "standing"])
@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(-1, 1), min_size=0, max_size=40), st.floats(-2, 2))
def test_a_store_measure_is_monotone_and_in_the_unit_interval(measure, values, x):
    sample = np.sort(np.array(values, dtype=np.float64))
    p = measure(x, sample)
    assert 0.0 <= p <= 1.0
    assert measure(x + 0.5, sample) >= p


def test_store_standing_is_a_logistic_of_the_robust_z_score():
    """Naive reference: sigmoid(π/√3 · (x − median)/(1.4826·MAD)) of the store's own values."""
    sample = np.array([0.30, 0.35, 0.40, 0.42, 0.45, 0.50, 0.55])
    med = float(np.median(sample))
    sd = 1.4826 * float(np.median(np.abs(sample - med)))
    for x in (0.0, 0.3, 0.42, 0.6, 1.0):
        want = 1.0 / (1.0 + math.exp(-math.pi / math.sqrt(3.0) * (x - med) / sd))
        assert dc.store_standing(x, sample) == pytest.approx(want, abs=1e-12)
    assert dc.store_standing(med, sample) == pytest.approx(0.5)  # the typical stored memory
    # too few values, or no spread: the mid-rank percentile; none: the raw value; NaN: neutral
    assert dc.store_standing(0.2, sample[:4]) == dc.store_percentile(0.2, sample[:4])
    assert dc.store_standing(0.2, np.full(6, 0.4)) == dc.store_percentile(0.2, np.full(6, 0.4))
    assert dc.store_standing(0.7, np.zeros(0)) == 0.7
    assert dc.store_standing(float("nan"), sample) == dc.NEUTRAL_FIT


def test_isolated_stored_memories_do_not_lift_an_unrelated_text():
    """A store with a tail of isolated memories (unrelated texts stored earlier): a rank among them gave the next
    unrelated text a standing of 0.1-0.2; the robust spread leaves it near 0 and the typical memory at 0.5."""
    rng = np.random.default_rng(2)
    topical = rng.normal(0.55, 0.05, size=27)
    isolated = rng.normal(0.12, 0.02, size=5)
    sample = np.sort(np.concatenate([topical, isolated]))
    unrelated = 0.15
    assert dc.store_percentile(unrelated, sample) > 0.1
    assert dc.store_standing(unrelated, sample) < 0.01
    assert dc.store_standing(float(np.median(sample)), sample) == pytest.approx(0.5)



def test_separation_is_the_robust_d_prime_between_on_and_off_topic():
    """Naive reference: (median(on) − median(off)) / (1.4826·√(½(MAD_on² + MAD_off²))), clipped to [0, 3]."""
    on = np.array([0.30, 0.34, 0.36, 0.40, 0.41, 0.45, 0.50])
    off = np.array([0.20, 0.22, 0.23, 0.25, 0.26, 0.30])

    def mad(x):
        return float(np.median(np.abs(x - np.median(x))))

    want = (np.median(on) - np.median(off)) / (1.4826 * math.sqrt(0.5 * (mad(on) ** 2 + mad(off) ** 2)))
    assert dc.separation(on, off) == pytest.approx(min(want, dc.MAX_SEPARATION))
    assert dc.separation(off, on) == 0.0  # removing the topic raised the statistic: no topic signal
    assert dc.separation(on, on) == 0.0
    assert dc.separation(on[:4], off) == 1.0  # too few values: no evidence either way
    assert dc.separation(np.full(6, 0.5), np.full(6, 0.4)) == dc.MAX_SEPARATION
    # a space that does not see topics (character n-grams: ~0.59 whether the topic is stored or not)
    rng = np.random.default_rng(4)
    assert dc.separation(rng.normal(0.59, 0.01, 32), rng.normal(0.589, 0.01, 32)) < 0.5


def test_neighbourhood_closeness_leaves_out_the_single_nearest():
    # a paraphrase (one twin at 0.95) and a new fact on its topic have the same neighbourhood beyond the nearest
    topic = [0.6, 0.55, 0.5, 0.2, 0.1]
    assert dc.neighbourhood_closeness([0.95, *topic], 3) == pytest.approx(dc.neighbourhood_closeness(
        [0.62, *topic], 3), abs=0.02)
    assert dc.neighbourhood_closeness([0.95, 0.6, 0.55, 0.5], 3) == pytest.approx(0.55)
    assert dc.neighbourhood_closeness([0.3], 3) == 0.3 and dc.neighbourhood_closeness([], 3) == -1.0
