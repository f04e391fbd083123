import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextgraph.constitution import constitution
from contextgraph.utl.learning import learning_score, lifecycle, normalised

STAGES = constitution().get("utl.lifecycle")


def naive_learning_score(ds, dc, tau, ls, lc, we, phi):
    """D22's formula written directly in numpy (docs/decisions.md#d22): the sigmoid of SPEC §8 stayed within
    0.50-0.60 and saw λ only as λ_S·λ_C, so the geometric mean replaced it."""
    tau = np.asarray(tau, float) / np.sum(tau)
    s = np.sum(tau * np.asarray(ds))
    c = np.sum(tau * np.asarray(dc))
    return float(np.clip(we * max(0.0, np.cos(phi)) * s**ls * c**lc, 0.0, 1.0))


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


def test_empty_store_scores_zero():
    # ΔC = 0 everywhere: nothing to learn against (it was sigmoid(0) = 0.5 under the old form)
    assert learning_score([1.0] * 13, [0.0] * 13, [1.0] * 13, 0.7, 0.3) == 0.0


def test_phase_spread_beyond_half_pi_scores_zero():
    high = learning_score([1.0] * 13, [1.0] * 13, [1.0] * 13, 0.5, 0.5, phase_spread=0.0)
    low = learning_score([1.0] * 13, [1.0] * 13, [1.0] * 13, 0.5, 0.5, phase_spread=math.pi)
    assert high == pytest.approx(1.0) and low == 0.0


def test_a_new_fact_on_a_known_topic_scores_above_a_duplicate_and_an_unrelated_text():
    """D22: zero-ish for a duplicate (S ≈ 0) and for an unrelated text (C ≈ 0); the old form scored all three
    within 0.50-0.53 and the unrelated text highest."""
    duplicate = learning_score([0.05] * 13, [0.8] * 13, [1.0] * 13, 0.5, 0.5)
    new_on_topic = learning_score([0.5] * 13, [0.6] * 13, [1.0] * 13, 0.5, 0.5)
    unrelated = learning_score([0.9] * 13, [0.05] * 13, [1.0] * 13, 0.5, 0.5)
    assert max(duplicate, unrelated) < 0.25 < 0.5 < new_on_topic
    assert new_on_topic - min(duplicate, unrelated) > 0.3


def test_lambda_is_identifiable_not_only_its_product():
    """λ_S = 0.3 and 0.7 have the same λ_S·λ_C; under D22 they score a novel text differently."""
    ds, dc = [0.8] * 13, [0.3] * 13
    assert learning_score(ds, dc, [1.0] * 13, 0.7, 0.3) > learning_score(ds, dc, [1.0] * 13, 0.3, 0.7) + 0.1


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


@given(thirteen, thirteen, st.floats(0.5, 1.5), st.floats(0, math.pi), st.floats(0, 1))
def test_prediction_shares_the_weight_of_l(ds, dc, we, phi, lam):
    """L̂ predicts S and C (from E1) and takes L's own weight wₑ·max(0, cos φ): a prediction whose S and C are
    right is exact at every φ, so L − L̂ has no sign fixed by construction (with φ = 0, L̂ ≥ L always)."""
    from contextgraph.utl.learning import predicted_parts, score_parts

    actual = score_parts(ds, dc, [1.0] * 13, lam, 1.0 - lam, we, phi)
    exact = predicted_parts(actual, actual.surprise, actual.coherence)
    assert exact.score == pytest.approx(actual.score, abs=1e-12)
    assert exact.weight == actual.weight and exact.lambda_s == actual.lambda_s
    low = predicted_parts(actual, actual.surprise * 0.5, actual.coherence * 0.5)
    assert low.score <= actual.score + 1e-12  # a prediction of less surprise and coherence predicts less


@given(thirteen, thirteen, st.lists(st.floats(0, 5), min_size=13, max_size=13), st.floats(0, math.pi))
def test_coherence_weights_of_their_own(ds, dc, c_tau, phi):
    """C with its own per-space weights (how far each space sees topics): S keeps τ, C takes `coherence_tau`."""
    from contextgraph.utl.learning import normalised, score_parts

    parts = score_parts(ds, dc, [1.0] * 13, 0.5, 0.5, 1.0, phi, coherence_tau=c_tau)
    assert parts.surprise == pytest.approx(float(np.mean(ds)), abs=1e-12)
    assert parts.coherence == pytest.approx(float(np.dot(normalised(c_tau), dc)), abs=1e-12)
    assert score_parts(ds, dc, [1.0] * 13, 0.5, 0.5, 1.0, phi, coherence_tau=[1.0] * 13) == score_parts(
        ds, dc, [1.0] * 13, 0.5, 0.5, 1.0, phi)
