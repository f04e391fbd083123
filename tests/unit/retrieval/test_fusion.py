import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from contextgraph.retrieval.fusion import ranks, rrf


def naive_ranks(scores):
    return [1 + sum(1 for other in scores if other > s) for s in scores]


@given(st.lists(st.integers(-5, 5).map(float), min_size=1, max_size=30))
def test_ranks_match_naive_competition_ranking(scores):
    assert ranks(np.array(scores)).tolist() == naive_ranks(scores)


def test_nan_ranks_last():
    assert ranks(np.array([0.5, np.nan, 0.9])).tolist() == [2, 3, 1]


@given(st.lists(st.lists(st.integers(1, 50), min_size=4, max_size=4), min_size=1, max_size=5),
       st.lists(st.floats(0, 2), min_size=5, max_size=5))
def test_rrf_matches_the_formula(rank_rows, weights):
    space_ranks = {i + 1: np.array(r) for i, r in enumerate(rank_rows)}
    w = {i + 1: weights[i] for i in range(len(rank_rows))}
    expected = [sum(w[s] / (60 + space_ranks[s][c]) for s in space_ranks) for c in range(4)]
    assert np.allclose(rrf(space_ranks, w, 60), expected)


def test_zero_weight_spaces_do_not_count():
    got = rrf({1: np.array([1, 2]), 2: np.array([2, 1])}, {1: 1.0, 2: 0.0}, 60)
    assert got[0] > got[1]


# --- stage 3/5 kernels -----------------------------------------------------------------------------------------

from contextgraph.retrieval.fusion import fuse, minmax, rerank, rrf_deduplicated  # noqa: E402


def test_copies_of_e1_do_not_vote_twice():
    e1 = np.array([1, 2, 3])
    space_ranks = {1: e1, 8: e1.copy(), 10: np.array([3, 2, 1])}
    w = {1: 1.0, 8: 1.0, 10: 1.0}
    got = rrf_deduplicated(space_ranks, w, 10)
    # E8 ranks every candidate as E1 does: no vote; E10 agrees with E1 on the middle one only: no vote there
    expected = [1 / 11 + 1 / 13, 1 / 12, 1 / 13 + 1 / 11]
    assert np.allclose(got, expected)
    # without copies it is plain RRF
    assert np.allclose(rrf_deduplicated({1: e1, 6: e1}, {1: 1.0, 6: 1.0}, 10), rrf({1: e1, 6: e1}, {1: 1, 6: 1}, 10))


def test_copies_of_e1_are_deduplicated_against_e1_even_when_e1_does_not_vote():
    scores = {1: np.array([0.9, 0.5, 0.1]), 8: np.array([0.9, 0.5, 0.1]), 6: np.array([1.0, 3.0, 2.0])}
    # E8 ranks as E1 does: with E1's own vote at 0 it must not become E1's vote again
    assert np.allclose(fuse(scores, {1: 0.0, 8: 0.5, 6: 1.0}, 1), fuse(scores, {6: 1.0}, 1))


def test_minmax():
    assert minmax(np.array([2.0, 4.0, 3.0])).tolist() == [0.0, 1.0, 0.5]
    assert minmax(np.array([1.0, 1.0])).tolist() == [0.0, 0.0]
    assert minmax(np.array([np.nan, 1.0, 3.0])).tolist() == [0.0, 0.0, 1.0]


def test_fuse_adds_normalised_scores():
    scores = {1: np.array([0.9, 0.8, 0.1]), 6: np.array([0.0, 10.0, 5.0])}
    rrf_only = fuse(scores, {1: 1.0}, 60)
    assert rrf_only.max() == 1.0 and np.argmax(rrf_only) == 0
    with_bm25 = fuse(scores, {1: 1.0}, 60, {6: 1.0})
    assert np.argmax(with_bm25) == 1  # the lexical score outweighs a small rank difference


def test_rerank_blends_late_interaction_in_the_head():
    fused = np.array([1.0, 0.9, 0.5, 0.1])
    late = np.array([0.1, 0.9, 1.0, 1.0])
    order, final = rerank(fused, late, head=3, weight=0.0)
    assert order.tolist() == [0, 1, 2] and final[0] == 1.0
    order, final = rerank(fused, late, head=3, weight=0.5)
    assert order.tolist() == [1, 2, 0]  # candidate 3 is outside the head
    assert np.all(np.diff(final) <= 0)
