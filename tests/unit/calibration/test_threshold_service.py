"""ThresholdService and the on-demand levels: outcomes in, thresholds and calibration out."""

from __future__ import annotations

import numpy as np
import pytest
from calibration_synthetic import stream
from hypothesis import given, settings
from hypothesis import strategies as st

from contextgraph.constitution import constitution
from contextgraph.errors import ThresholdError
from contextgraph.services.engine import atc_levels
from contextgraph.services.engine.atc import Setting, ThresholdService


class Clock:
    def __init__(self) -> None:
        self.t = 1_000_000.0

    def __call__(self) -> float:
        return self.t


def service() -> tuple[ThresholdService, Clock]:
    clock = Clock()
    return ThresholdService(constitution(), clock), clock


def test_priors_and_bounds_come_from_the_constitution() -> None:
    s, _ = service()
    a = constitution()["atc"]
    for name, prior in a["priors"].items():
        assert s.value(name) == prior
        assert s.value(name, "Code") == prior
    assert s.value("johari") == 0.5
    status = atc_levels.status(s, "General", None)
    assert set(status["thresholds"]) == {"theta_warn", "theta_dup", "theta_kur", "johari"}
    assert status["thresholds"]["theta_dup"] == {**status["thresholds"]["theta_dup"], "value": 0.9, "min": 0.8,
                                                 "max": 0.98}


def test_a_value_outside_the_bounds_is_a_threshold_error_naming_them() -> None:
    s, _ = service()
    with pytest.raises(ThresholdError) as err:
        s.set("theta_dup", "General", Setting(0.5), "test", None)
    assert err.value.data["min"] == 0.8 and err.value.data["max"] == 0.98 and err.value.data["field"] == "theta_dup"
    assert "[0.8, 0.98]" in err.value.message
    assert s.value("theta_dup") == 0.9  # unchanged


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.floats(0.0, 1.0), st.sampled_from([0.0, 1.0])), min_size=1, max_size=300))
def test_no_outcome_stream_moves_a_threshold_out_of_its_bounds(pairs: list[tuple[float, float]]) -> None:
    s, _ = service()
    for score, outcome in pairs:
        s.observe("theta_kur", "General", score, outcome, "test")
        assert 0.65 <= s.value("theta_kur") <= 0.95


def test_level1_moves_each_observation_and_logs_why() -> None:
    s, _ = service()
    s.observe("theta_dup", "Code", 0.91, 0.0, "a refuted merge")  # a negative just above θ: θ rises
    assert s.value("theta_dup", "Code") > 0.9
    assert s.value("theta_dup") == 0.9  # another domain is untouched
    entry = s.log[-1]
    assert entry["level"] == 1 and entry["domain"] == "Code" and "a refuted merge" in entry["reason"]


def test_a_use_resolves_its_predictions_and_the_results_ranked_above_it_expire_as_skipped() -> None:
    s, clock = service()
    a, b, c, d = "a" * 32, "b" * 32, "c" * 32, "d" * 32
    s.offer("theta_warn", [(a, "General", 0.8), (b, "General", 0.6), (c, "General", 0.5)], "q1")
    s.offer("theta_warn", [(d, "General", 0.7), (a, "General", 0.8)], "q2")  # found again: no judgement
    assert s.outcomes.count("theta_warn", "General") == 0
    s.used([c], "hydrated")  # rank 2 of q1: b (rank 1) was passed over; a's open prediction is q2's now
    scores, outcomes = s.outcomes.pairs("theta_warn", "General")
    assert list(scores) == [0.5] and list(outcomes) == [1.0]
    clock.t += float(constitution()["atc"]["pending"]["seconds"]) + 1
    s.expire()
    scores, outcomes = s.outcomes.pairs("theta_warn", "General")
    assert sorted(zip(scores.tolist(), outcomes.tolist())) == [(0.5, 1.0), (0.6, 0.0)]  # b skipped; a, d unused
    assert s.outcomes.pending_count == 0 and s.expired_unused == 2


def test_forgetting_refutes() -> None:
    s, _ = service()
    s.offer("theta_warn", [("d" * 32, "General", 0.9)], "q")
    s.used(["d" * 32], "forget_concept named it", 0.0)
    assert list(s.outcomes.pairs("theta_warn", "General")[1]) == [0.0]


def fill(s: ThresholdService, name: str, domain: str, n: int, theta_star: float, t_star: float, seed: int) -> None:
    target = s.spec(name).target
    scores, outcomes = stream(n, theta_star, t_star, target, seed=seed)
    for score, outcome in zip(scores, outcomes):
        s.outcomes.add(name, domain, float(score), float(outcome), s.clock())


@pytest.mark.parametrize("level", [2, 3, 4])
def test_higher_levels_lower_ece_and_move_toward_the_known_optimum(level: int) -> None:
    s, _ = service()
    fill(s, "theta_kur", "Research", 600, theta_star=0.86, t_star=0.35, seed=11)
    out = atc_levels.recalibrate(s, level, "Research", "theta_kur")
    result = out["thresholds"]["theta_kur"]
    assert result["after"]["ece"] < result["before"]["ece"]
    assert result["after"]["pairs"] == constitution()["atc"]["max_pairs"] == 500  # bounded: the newest kept
    assert 0.65 <= result["after"]["theta"] <= 0.95
    if level > 2:  # 3 and 4 move θ: toward 0.86 from the prior 0.8
        assert abs(result["after"]["theta"] - 0.86) < abs(result["before"]["theta"] - 0.86)
        assert result["after"]["decision_cost"] <= result["before"]["decision_cost"] + 0.005
    assert s.log[-1]["level"] == level and "pairs" in s.log[-1]["reason"]


def test_too_few_pairs_is_a_threshold_error_with_the_counts() -> None:
    s, _ = service()
    fill(s, "theta_dup", "General", 5, 0.9, 0.5, seed=1)
    with pytest.raises(ThresholdError) as err:
        atc_levels.recalibrate(s, 2, "General")
    assert err.value.data["skipped"]["theta_dup"].startswith("5 recorded pairs")
    assert err.value.data["min_pairs"] == 20


def test_a_start_outside_the_bounds_is_refused() -> None:
    s, _ = service()
    fill(s, "theta_dup", "General", 50, 0.9, 0.5, seed=1)
    with pytest.raises(ThresholdError):
        atc_levels.recalibrate(s, 1, "General", "theta_dup", start=0.99)


def test_metrics_by_timeframe_and_persistence_round_trip() -> None:
    s, clock = service()
    fill(s, "theta_warn", "General", 100, 0.6, 0.5, seed=2)
    clock.t += 7200
    fill(s, "theta_warn", "General", 40, 0.6, 0.5, seed=3)
    assert atc_levels.metrics(s, "1h")["metrics"]["theta_warn"]["General"]["pairs"] == 40
    assert atc_levels.metrics(s, "24h")["metrics"]["theta_warn"]["General"]["pairs"] == 140
    atc_levels.recalibrate(s, 2, "General", "theta_warn")
    heard: list[float] = []
    copy = ThresholdService(constitution(), clock)
    copy.subscribe("theta_warn", heard.append)
    copy.load_doc(s.to_doc())
    assert copy.setting("theta_warn") == s.setting("theta_warn")
    assert copy.outcomes.count("theta_warn", "General") == 140
    assert list(copy.log) == list(s.log)
    assert heard == [0.55, s.value("theta_warn")]
    assert np.isfinite(atc_levels.metrics(copy, "30d")["metrics"]["theta_warn"]["General"]["ece"])


def test_a_refused_recalibration_changes_nothing() -> None:
    s, _ = service()
    fill(s, "theta_dup", "General", 5, 0.9, 0.5, seed=1)
    with pytest.raises(ThresholdError):  # too few pairs: the valid start must not stay behind
        atc_levels.recalibrate(s, 2, "General", "theta_dup", start=0.85)
    with pytest.raises(ThresholdError):  # out of bounds
        atc_levels.recalibrate(s, 1, "General", "theta_dup", start=0.5)
    assert s.value("theta_dup") == 0.9 and not s.log


def test_a_saved_state_with_thresholds_the_constitution_dropped_loads_without_them() -> None:
    """θ_opt and θ_acc left the list (docs/decisions.md): a state saved with their pairs, settings and open
    predictions loads, and the reports that walk every recorded pair never meet a threshold without a spec."""
    s, clock = service()
    a = "a" * 32
    s.offer("theta_warn", [(a, "General", 0.6)], "q")
    doc = s.to_doc()
    doc["settings"].append(["theta_opt", "General", 0.7, 1.0, 0.0, 3, clock.t])
    doc["outcomes"]["pairs"].append(["theta_acc", "General", [[clock.t, 0.6, 1.0]] * 3])
    doc["outcomes"]["pending"].append(["b" * 32, [["theta_opt", "General", 0.8, clock.t, "q", 0]]])
    copy = ThresholdService(constitution(), clock)
    copy.load_doc(doc)
    assert copy.outcomes.keys() == [] and copy.outcomes.pending_count == 1
    assert set(atc_levels.status(copy, "General", None)["thresholds"]) == set(copy.specs)
    assert atc_levels.metrics(copy, "1h")["pairs"] == 0
