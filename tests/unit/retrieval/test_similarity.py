"""retrieval.similarity's vectorised Jaccard against the one-pair reference, on generated term sets."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from contextgraph.retrieval.similarity import jaccard_many
from contextgraph.utl.delta_s import jaccard

terms = st.lists(st.integers(0, 40), max_size=12).map(lambda xs: np.unique(np.array(xs, dtype=np.int32)))


@given(terms, st.lists(terms, max_size=8))
def test_jaccard_many_equals_one_pair_at_a_time(query, others):
    got = jaccard_many(query, others)
    assert got.shape == (len(others),)
    np.testing.assert_allclose(got, [jaccard(query, o) for o in others])
    assert np.all((got >= 0.0) & (got <= 1.0))


def test_jaccard_many_edges():
    empty = np.zeros(0, dtype=np.int32)
    assert jaccard_many(empty, []).shape == (0,)
    np.testing.assert_array_equal(jaccard_many(empty, [empty, np.array([1, 2])]), [0.0, 0.0])
    np.testing.assert_array_equal(jaccard_many(np.array([1, 2]), [np.array([1, 2]), np.array([3])]), [1.0, 0.0])
