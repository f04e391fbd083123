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
