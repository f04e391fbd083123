"""The fusion while a space is re-embedded (services/memory/stale_spaces.py): the space never votes; with a profile
of its own the search takes that profile's weights, without one the rest stay as learned; the head re-scorer,
which reads every space's scores, is off meanwhile."""

from __future__ import annotations

from contextgraph.services.memory.search import RetrievalSettings
from contextgraph.services.memory.stale_spaces import while_stale

LEARNED = RetrievalSettings(rrf_k=1.0, sparse_candidates=50, dense_candidates=50, rerank_head=50, rerank_weight=0.0,
                            space_weights={1: 0.06, 5: 0.03, 6: 0.54, 7: 1.0, 13: 0.46},
                            score_weights={1: 0.24, 6: 0.49, 7: 1.95}, head_rescorer=True,
                            while_stale={7: {"space_weights": {1: 0.76, 6: 0.9, 12: 1.0},
                                             "score_weights": {1: 1.9, 6: 0.8}}})


def test_nothing_stale_leaves_the_settings_as_they_are():
    assert while_stale(LEARNED, frozenset()) is LEARNED


def test_a_space_with_a_profile_searches_with_the_profiles_weights():
    s = while_stale(LEARNED, frozenset({7}))
    assert s.space_weights == {1: 0.76, 5: 0.03, 6: 0.9, 12: 1.0, 13: 0.46}  # the profile over the learned ones
    assert s.score_weights == {1: 1.9, 6: 0.8}  # the profile's score weights replace the set: fitted together
    assert not s.head_rescorer and LEARNED.head_rescorer  # a copy: the learned settings are untouched


def test_a_space_without_a_profile_is_dropped_and_the_rest_stay_as_learned():
    s = while_stale(LEARNED, frozenset({6}))
    assert s.space_weights == {1: 0.06, 5: 0.03, 7: 1.0, 13: 0.46}
    assert s.score_weights == {1: 0.24, 7: 1.95} and not s.head_rescorer


def test_two_stale_spaces_drop_both_since_no_profile_was_fitted_without_both():
    s = while_stale(LEARNED, frozenset({7, 13}))
    assert s.space_weights == {1: 0.06, 5: 0.03, 6: 0.54}
    assert s.score_weights == {1: 0.24, 6: 0.49}
