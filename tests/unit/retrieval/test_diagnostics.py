"""retrieval.diagnostics: precision/recall/F1 against their definitions on random rankings, rank changes, and the
z-score against numpy's."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextgraph.retrieval.diagnostics import rank_changes, recall_scores, z_score

ids = st.lists(st.sampled_from([f"m{i}" for i in range(12)]), max_size=12, unique=True)


@given(ids, ids.filter(bool))
@settings(max_examples=300, deadline=None)
def test_recall_scores_match_their_definitions(found, expected):
    s = recall_scores(found, expected)
    hits = [i for i in found if i in expected]
    precision = len(hits) / len(found) if found else 0.0
    recall = len(hits) / len(expected)
    assert s.precision == pytest.approx(precision) and s.recall == pytest.approx(recall)
    assert s.f1 == pytest.approx(0.0 if not hits else 2 * precision * recall / (precision + recall))
    assert s.hits == hits
    assert s.missing_expected == [i for i in expected if i not in found]
    assert s.unexpected_results == [i for i in found if i not in expected]


def test_worked_example():
    s = recall_scores(["a", "x", "b"], ["a", "b", "c", "d"])
    assert (s.precision, s.recall) == (2 / 3, 0.5) and s.f1 == pytest.approx(4 / 7)
    assert s.missing_expected == ["c", "d"] and s.unexpected_results == ["x"]


def test_rank_changes():
    assert rank_changes(["a", "b", "c"], ["c", "a", "z"]) == {"c": 2, "a": -1, "z": None}


@given(st.lists(st.floats(-100, 100), min_size=2, max_size=50), st.floats(-1000, 1000))
@settings(max_examples=200, deadline=None)
def test_z_score_matches_numpy(sample, value):
    sd = np.std(sample, ddof=1)
    want = 0.0 if sd == 0 else (value - np.mean(sample)) / sd
    assert z_score(value, sample) == pytest.approx(want, rel=1e-9, abs=1e-9)
