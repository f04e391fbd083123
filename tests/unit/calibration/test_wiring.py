"""What the composition root attaches: a tool call that names memories uses them, a search offers its results
and workspace candidates, the engine reads θ_kur and the Johari boundary from ATC."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from contextgraph.constitution import constitution
from contextgraph.services.engine.atc import Setting, ThresholdService
from contextgraph.services.feedback.calibration_wiring import on_results, on_tool_call

A, B, C = "a" * 32, "b" * 32, "c" * 32


def service() -> ThresholdService:
    return ThresholdService(constitution(), lambda: 1000.0)


def test_calls_that_judge_relevance_resolve_and_calls_that_only_look_do_not() -> None:
    s = service()
    s.offer("theta_warn", [(A, "General", 0.8), (B, "General", 0.6), (C, "General", 0.7)], "q")
    listener = on_tool_call(s)
    listener("get_neighborhood", {"node_id": A, "depth": 1})  # looking at it says nothing about relevance
    listener("restore_from_hash", {"reversal_hash": B})
    assert s.outcomes.count("theta_warn", "General") == 0
    listener("merge_concepts", {"source_node_ids": [A, C], "rationale": "x" * 10})
    listener("annotate_node", {"node_id": B, "annotations": {"confidence": 0.2}})  # judged unreliable
    scores, outcomes = s.outcomes.pairs("theta_warn", "General")
    assert sorted(zip(scores.tolist(), outcomes.tolist())) == [(0.6, 0.0), (0.7, 1.0), (0.8, 1.0)]


def test_forget_as_incorrect_refutes_and_forget_as_obsolete_does_not_judge() -> None:
    s = service()
    s.offer("theta_warn", [(A, "General", 0.9), (B, "General", 0.5)], "q")
    listener = on_tool_call(s)
    listener("forget_concept", {"node_id": B, "reason": "obsolete", "soft_delete": True})
    assert s.outcomes.count("theta_warn", "General") == 0
    listener("forget_concept", {"node_id": A, "reason": "incorrect", "soft_delete": True})
    assert s.outcomes.pairs("theta_warn", "General")[1].tolist() == [0.0]


@dataclass
class Found:
    record: Any
    similarity: float
    alignment: float | None = None


def test_a_search_offers_its_results_against_theta_warn_by_alignment_or_similarity() -> None:
    s = service()
    code = SimpleNamespace(id=A, extra={"annotations": {"domain": "Code"}})
    plain = SimpleNamespace(id=B, extra={})
    retrieval = SimpleNamespace(found=[Found(code, 0.9, alignment=0.6), Found(plain, 0.4)])
    on_results(s)("deploy", retrieval)
    assert s.outcomes.pending_count == 2  # θ_warn only: no workspace candidate against θ_kur
    s.used([A, B], "hydrated")
    assert s.outcomes.pairs("theta_warn", "Code")[0].tolist() == [0.6]  # its alignment, in its domain
    assert s.outcomes.pairs("theta_warn", "General")[0].tolist() == [0.4]  # its similarity
    assert s.outcomes.count("theta_kur", "Code") == 0


def test_subscribers_follow_the_general_value_only() -> None:
    s = service()
    seen: list[float] = []
    s.subscribe("theta_kur", seen.append)
    s.set("theta_kur", "Code", Setting(0.9), "test", None)
    s.set("theta_kur", "General", Setting(0.85), "test", None)
    assert seen == [0.8, 0.85]


def test_the_pulse_reads_the_johari_boundary_from_atc() -> None:
    from contextgraph.services.engine.cognition import CognitiveState

    cognition = CognitiveState(constitution())
    s = service()
    s.subscribe("johari", cognition.set_johari_threshold)
    s.set("johari", "General", Setting(0.6), "test", None)
    assert cognition.snapshot()["rules"].johari_threshold == 0.6
