"""retrieval.modulation: every effect is the identity at the baselines, monotone where it must be."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextgraph.retrieval.modulation import NEUTRAL, Modulation, reweight, sharpen, widened

scores = st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=1, max_size=30)


@given(scores, st.floats(0.5, 2.5))
def test_sharpening_never_reorders(values, exponent):
    s = np.array(values)
    out = sharpen(s, exponent)
    order = np.argsort(-s, kind="stable")
    assert (np.diff(out[order]) <= 1e-12).all()  # still non-increasing in the old order


@given(scores)
def test_exponent_one_is_the_identity_to_the_byte(values):
    s = np.array(values)
    assert sharpen(s, 1.0).tobytes() == s.tobytes()


def test_a_higher_exponent_pushes_weaker_scores_down():
    s = np.array([1.0, 0.8, 0.5, 0.2])
    out = sharpen(s, 2.0)
    assert out[0] == 1.0 and (out[1:] < s[1:]).all()
    assert sharpen(np.array([-np.inf, 0.5]), 2.0)[0] == -np.inf  # stage 4's dropped candidates stay dropped


def test_reweight():
    w = {1: 1.0, 2: 0.1, 6: 0.8, 3: 0.0}
    assert reweight(w, 1.0) == w
    flat = reweight(w, 0.0)
    assert flat == {1: 1.0, 2: 1.0, 6: 1.0, 3: 0.0}  # every active space votes as the strongest; off stays off
    sharp = reweight(w, 2.0)
    assert sharp[1] == 1.0 and sharp[2] == pytest.approx(0.01) and sharp[6] == pytest.approx(0.64)
    assert reweight({}, 0.5) == {}


def test_widened_and_neutral():
    assert widened(50, 1.0) == 50 and widened(50, 2.0) == 100 and widened(50, 0.5) == 25 and widened(1, 0.5) == 1
    assert NEUTRAL.neutral and not Modulation(score_exponent=1.2).neutral
