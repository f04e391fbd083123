import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextgraph.constitution import constitution
from contextgraph.utl.learning import learning_score, lifecycle, normalised

STAGES = constitution().get("utl.lifecycle")


def naive_learning_score(ds, dc, tau, ls, lc, we, phi, gain=2.0):
    """The formula of SPEC §8 written directly in numpy, no clamping (inputs are in-domain)."""
    tau = np.asarray(tau, float) / np.sum(tau)
    s = np.sum(tau * ls * np.asarray(ds))
    c = np.sum(tau * lc * np.asarray(dc))
    return 1.0 / (1.0 + np.exp(-gain * s * c * we * np.cos(phi)))


unit = st.floats(0, 1)
thirteen = st.lists(unit, min_size=13, max_size=13)


@given(thirteen, thirteen, st.lists(st.floats(0.01, 5), min_size=13, max_size=13),
       st.floats(0.5, 1.5), st.floats(0, math.pi))
def test_matches_naive_reference(ds, dc, tau, we, phi):
    got = learning_score(ds, dc, tau, 0.7, 0.3, we, phi)
    assert got == pytest.approx(naive_learning_score(ds, dc, tau, 0.7, 0.3, we, phi), abs=1e-12)
    assert 0.0 <= got <= 1.0


@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=13, max_size=13),
       st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=13, max_size=13),
       st.floats(allow_nan=True, allow_infinity=True), st.floats(allow_nan=True, allow_infinity=True))
def test_never_nan_or_infinite(ds, dc, we, phi):
    got = learning_score(ds, dc, [1.0] * 13, 0.5, 0.5, we, phi)
    assert math.isfinite(got) and 0.0 <= got <= 1.0


def test_empty_store_scores_one_half():
    # ΔC = 0 everywhere makes the product 0, and sigmoid(0) = 0.5.
    assert learning_score([1.0] * 13, [0.0] * 13, [1.0] * 13, 0.7, 0.3) == 0.5


def test_phase_spread_beyond_half_pi_reverses_the_sign():
    high = learning_score([1.0] * 13, [1.0] * 13, [1.0] * 13, 0.5, 0.5, phase_spread=0.0)
    low = learning_score([1.0] * 13, [1.0] * 13, [1.0] * 13, 0.5, 0.5, phase_spread=math.pi)
    assert high > 0.5 > low
    assert high + low == pytest.approx(1.0)


def test_mismatched_lengths_are_refused():
    with pytest.raises(ValueError, match="one value per space"):
        learning_score([1.0] * 13, [1.0] * 12, [1.0] * 13, 0.5, 0.5)


def test_normalised_falls_back_to_uniform():
    assert normalised([0, 0, 0, 0]) == [0.25] * 4
    assert sum(normalised([1, 2, 3])) == pytest.approx(1.0)


@pytest.mark.parametrize(("count", "stage", "ls", "lc"),
                         [(0, "infancy", 0.7, 0.3), (49, "infancy", 0.7, 0.3), (50, "growth", 0.5, 0.5),
                          (499, "growth", 0.5, 0.5), (500, "maturity", 0.3, 0.7), (10**6, "maturity", 0.3, 0.7)])
def test_lifecycle_stages(count, stage, ls, lc):
    got = lifecycle(count, STAGES)
    assert (got.stage, got.lambda_s, got.lambda_c) == (stage, ls, lc)


# --- D19: φ is the memory's own binding spread, wₑ = 0.5 + importance -----------------------------------------------


def test_binding_phase_spread():
    from contextgraph.utl.learning import binding_phase_spread

    assert binding_phase_spread([0.0] * 13) == pytest.approx(0.0, abs=1e-6)  # every space knows it
    assert binding_phase_spread([1.0] * 13) == pytest.approx(0.0, abs=1e-6)  # every space finds it new
    mixed = binding_phase_spread([0.0] * 6 + [1.0] * 7)  # the spaces disagree: r = 1/13
    assert mixed == pytest.approx(math.sqrt(-2 * math.log(1 / 13)))
    partly = binding_phase_spread([0.2] * 10 + [0.9] * 3)
    assert 0.0 < partly < mixed
    assert binding_phase_spread([]) == 0.0
    assert 0.0 <= binding_phase_spread([float("nan"), 0.3]) <= math.pi
    assert binding_phase_spread([0.0, 1.0]) == pytest.approx(math.pi)  # opposite phases: r = 0


def test_emotional_weight_from_importance():
    from contextgraph.utl.learning import emotional_weight

    assert emotional_weight(0.5) == 1.0 and emotional_weight(0.0) == 0.5 and emotional_weight(1.0) == 1.5
    assert emotional_weight(None, 1.2) == 1.2 and emotional_weight(float("nan"), 0.9) == 0.9
    assert emotional_weight(7.0) == 1.5
