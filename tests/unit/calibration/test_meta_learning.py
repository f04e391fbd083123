"""Meta-UTL: λ follows biased predictions, stays put under unbiased ones, escalates on low accuracy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextgraph.calibration.meta_lambda import lambda_objective, lambda_step, log_ratio, rescale
from contextgraph.constitution import constitution
from contextgraph.errors import UtlError
from contextgraph.services.engine.meta_learning import MetaLearningService
from contextgraph.utl import learning


def session(meta: MetaLearningService, n: int, bias: float, noise: float, seed: int, count: int = 100) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(n):
        lam = meta.stage(count).lambda_s
        predicted = float(rng.uniform(0.3, 0.7))
        actual = float(np.clip(predicted + bias + rng.normal(0, noise), 0, 1))
        meta.observe(count, actual, predicted, lam)


def test_rescale_is_exact_under_the_learning_score_formula() -> None:
    tau = learning.normalised([1.0] * 13)
    ds, dc = [0.7] * 13, [0.4] * 13
    at = [learning.learning_score(ds, dc, tau, lam, 1 - lam, 1.2, 0.3) for lam in (0.3, 0.5, 0.8)]
    parts = learning.score_parts(ds, dc, tau, 0.3, 0.7, 1.2, 0.3)
    d = [log_ratio(parts.surprise, parts.coherence)]
    assert parts.score == pytest.approx(at[0], abs=1e-12)
    assert rescale([at[0]], [0.3], 0.5, d)[0] == pytest.approx(at[1], abs=1e-9)
    assert rescale([at[0]], [0.3], 0.8, d)[0] == pytest.approx(at[2], abs=1e-9)


def scored_session(meta: MetaLearningService, n: int, true_lambda: float, seed: int, count: int = 100) -> None:
    """Operations whose L̂ (from E1 alone) misjudges the surprise/coherence balance: L − L̂ vanishes at λ_S =
    `true_lambda` only. L and L̂ are scored by utl.learning at the λ the service serves, as the engine does."""
    rng = np.random.default_rng(seed)
    tau = [1.0] * 13
    for _ in range(n):
        lam = meta.stage(count).lambda_s
        s_true, c_true = rng.uniform(0.2, 0.9), rng.uniform(0.2, 0.4)
        s_pred = float(np.clip(s_true * rng.uniform(0.7, 0.95), 0.01, 1.0))
        # the prediction's C is such that both agree exactly at true_lambda
        c_pred = float(np.clip(c_true * (s_true / s_pred) ** (true_lambda / (1 - true_lambda)), 0.01, 1.0))
        actual = learning.score_parts([s_true] * 13, [c_true] * 13, tau, lam, 1 - lam)
        predicted = learning.score_parts([s_pred] * 13, [c_pred] * 13, tau, lam, 1 - lam)
        meta.observe(count, actual.score, predicted.score, lam, (actual, predicted))


def test_the_search_identifies_lambda_not_only_its_product() -> None:
    """Under the sigmoid form λ_S and 1 − λ_S scored alike, so the search could not tell 0.7 from 0.3."""
    meta = MetaLearningService(constitution(), background=False)
    meta.prior_weight = 0.01
    scored_session(meta, 100, true_lambda=0.7, seed=11)
    result = meta.search("manual", "test")
    assert result["lambda_after"]["lambda_s"] == pytest.approx(0.7, abs=0.05)
    assert result["accuracy_after"] > result["accuracy_before"]


def test_lambda_moves_on_a_biased_session_and_comes_back() -> None:
    meta = MetaLearningService(constitution(), background=False)
    meta.floor = 0.0  # the per-operation rule alone
    start = meta.stage(100).lambda_s
    session(meta, 400, bias=0.3, noise=0.05, seed=12)  # L above L̂: novelty weighs more
    moved = meta.stage(100).lambda_s
    session(meta, 400, bias=-0.3, noise=0.05, seed=13)  # then below: back
    back = meta.stage(100).lambda_s
    assert moved > start + 0.08
    assert abs(back - start) < 0.03


@settings(max_examples=100, deadline=None)
@given(st.floats(0.1, 0.9), st.floats(-1, 1), st.floats(0.0005, 0.01))
def test_a_step_stays_in_bounds_and_moves_only_beyond_the_error_threshold(lam: float, err: float, a: float) -> None:
    new = lambda_step(lam, err, a, 0.2, 0.1, 0.9)
    assert 0.1 <= new <= 0.9
    if abs(err) <= 0.2:
        assert new == lam
    else:
        assert new == pytest.approx(min(max(lam + a * err, 0.1), 0.9))


def test_biased_predictions_move_lambda_and_the_log_says_why() -> None:
    meta = MetaLearningService(constitution(), background=False)
    meta.floor = 0.0  # the per-operation rule alone (the escalation has its own test)
    before = meta.stage(100).lambda_s
    session(meta, 600, bias=0.3, noise=0.05, seed=1)  # L above L̂: the engine under-predicts
    after = meta.stage(100).lambda_s
    assert after > before + 0.1
    assert 0.1 <= after <= 0.9
    errors = [e for e in meta.log if e["kind"] == "error"]
    assert errors and all(e["error"] > 0.2 and e["lambda_s"][1] > e["lambda_s"][0] for e in errors)
    assert "acetylcholine not available" in errors[0]["reason"]
    page = meta.page(0, 5)
    assert [e["seq"] for e in page["entries"]] == sorted((e["seq"] for e in page["entries"]), reverse=True)


def test_unbiased_predictions_leave_lambda_where_it_was() -> None:
    meta = MetaLearningService(constitution(), background=False)
    before = meta.stage(100).lambda_s
    session(meta, 600, bias=0.0, noise=0.05, seed=2)
    assert meta.stage(100).lambda_s == before
    assert not [e for e in meta.log if e["kind"] == "error"]


def test_acetylcholine_is_the_rate_once_attached() -> None:
    meta = MetaLearningService(constitution(), background=False)
    meta.alpha_source = lambda: 0.002
    session(meta, 10, bias=0.4, noise=0.0, seed=3)
    assert meta.status()["alpha_source"] == "acetylcholine"
    assert meta.log[-1]["alpha"] == 0.002


def test_low_accuracy_escalates_to_a_bayesian_search_once_per_window() -> None:
    meta = MetaLearningService(constitution(), background=False)
    session(meta, 100, bias=0.35, noise=0.1, seed=4)  # accuracy ≈ 0.65 < 0.7
    escalations = [e for e in meta.log if e["kind"] == "escalation"]
    assert len(escalations) == 1 and "meta-accuracy" in escalations[0]["reason"]
    assert meta.escalation["count"] == 1 and meta.escalation["state"] == "cooldown"
    session(meta, 50, bias=0.35, noise=0.1, seed=5)
    assert meta.escalation["count"] == 1  # not again within the window


def test_the_search_never_worsens_the_objective_and_reports_accuracy() -> None:
    meta = MetaLearningService(constitution(), background=False)
    session(meta, 80, bias=0.2, noise=0.1, seed=6)
    result = meta.search("manual", "test")
    assert result["objective_after"] <= result["objective_before"]
    assert 0.1 <= result["lambda_after"]["lambda_s"] <= 0.9
    assert result["lambda_after"]["lambda_s"] + result["lambda_after"]["lambda_c"] == pytest.approx(1.0)
    a, p, t, da, dp = (np.asarray(c) for c in zip(*meta.window))
    prior = learning.lifecycle(100, constitution()["utl"]["lifecycle"]).lambda_s
    grid = np.linspace(0.1, 0.9, 801)
    best = min(lambda_objective(a, p, t, g, prior, 0.5, da, dp) for g in grid)
    assert result["objective_after"] <= best + 0.002  # the GP found the grid's minimum


def test_no_operations_is_a_utl_error_and_state_survives_a_restart() -> None:
    meta = MetaLearningService(constitution(), background=False)
    with pytest.raises(UtlError):
        meta.search("manual", "test")
    session(meta, 50, bias=0.3, noise=0.05, seed=7)
    copy = MetaLearningService(constitution(), background=False)
    copy.load_doc(meta.to_doc())
    assert copy.stage(100) == meta.stage(100)
    assert copy.status()["operations"] == 50 and list(copy.log) == list(meta.log)


def test_policy_keeps_the_learned_offset_across_lifecycle_stages() -> None:
    meta = MetaLearningService(constitution(), background=False)
    meta.floor = 0.0  # the per-operation rule alone
    session(meta, 300, bias=0.3, noise=0.05, seed=8, count=100)  # growth: prior 0.5
    offset = meta.offset
    stages = constitution()["utl"]["lifecycle"]
    maturity = meta.policy(learning.lifecycle(600, stages))
    assert maturity.lambda_s == pytest.approx(min(max(0.3 + offset, 0.1), 0.9))
    assert maturity.lambda_s + maturity.lambda_c == pytest.approx(1.0)
