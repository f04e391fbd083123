"""ATC learns relevance, not usage (docs/engine.md#adaptive-thresholds): which calls are evidence, that unused or
re-found results are none, and that a simulated agent who judges what it reads leaves every threshold strictly
inside its bounds. Real ThresholdService and dispatcher listener; the search results are synthetic scores."""

from __future__ import annotations

import random

from contextgraph.constitution import constitution
from contextgraph.services.engine import atc_levels
from contextgraph.services.engine.atc import ThresholdService
from contextgraph.services.feedback.calibration_wiring import RELEVANCE, on_tool_call

PENDING = float(constitution()["atc"]["pending"]["seconds"])
TURN = 90.0  # simulated seconds between two searches


class Clock:
    def __init__(self) -> None:
        self.t = 1_000_000.0

    def __call__(self) -> float:
        return self.t


def service() -> tuple[ThresholdService, Clock]:
    clock = Clock()
    return ThresholdService(constitution(), clock), clock


def offer(s: ThresholdService, results: list[tuple[str, float]], query: str) -> None:
    """A search's results offered to every relevance threshold, as the results listener does."""
    for name in RELEVANCE:
        s.offer(name, [(m, "General", score) for m, score in results], query)


def memory(i: int) -> str:
    return f"{i:032x}"


def test_not_relevant_feedback_is_negative_evidence_and_relevant_positive() -> None:
    s, _ = service()
    a, b, c = memory(1), memory(2), memory(3)
    offer(s, [(a, 0.62), (b, 0.58), (c, 0.5)], "q")
    listener = on_tool_call(s)
    listener("update_synergy_matrix", {"query_vector_id": c, "result_vector_id": a, "feedback": "not_relevant"})
    listener("update_synergy_matrix", {"query_vector_id": c, "result_vector_id": b, "feedback": "relevant"})
    listener("update_synergy_matrix", {"query_vector_id": a, "result_vector_id": c,
                                       "feedback": "partially_relevant"})
    scores, outcomes = s.outcomes.pairs("theta_warn", "General")
    assert sorted(zip(scores.tolist(), outcomes.tolist())) == [(0.5, 0.5), (0.58, 1.0), (0.62, 0.0)]


def test_a_hydrated_citation_tag_and_a_citing_or_linking_store_are_uses() -> None:
    s, _ = service()
    a, b, c = "3fa2b1" + "0" * 26, memory(2), memory(3)
    offer(s, [(a, 0.7), (b, 0.6), (c, 0.55)], "q")
    listener = on_tool_call(s)
    listener("hydrate_citation", {"citation_tag": "[node_3fa2b1]"})  # a prefix, as the search shows ids
    listener("store_memory", {"content": f"per [node_{b}] the cache is warm", "link_to": [c]})
    assert s.outcomes.pairs("theta_warn", "General")[1].tolist() == [1.0, 1.0, 1.0]


def test_unused_and_refound_results_are_no_evidence() -> None:
    """300 searches over the same 40 memories, each found again and again by other queries, none ever used:
    no pair is recorded and no threshold moves (the old rules drove them to a bound within ~30 searches)."""
    s, clock = service()
    rng = random.Random(7)
    for q in range(300):
        ranked = sorted(((memory(rng.randrange(40)), rng.uniform(0.3, 0.9)) for _ in range(10)),
                        key=lambda r: -r[1])
        offer(s, list(dict(ranked).items()), f"q{q}")
        clock.t += TURN
        s.expire()
    for name in RELEVANCE:
        assert s.value(name) == s.spec(name).prior
        assert s.outcomes.count(name, "General") == 0
    assert s.expired_unused > 0
    assert atc_levels.status(s, "General", None)["unjudged_outcomes"] == s.expired_unused


def simulated_searches(s: ThresholdService, clock: Clock, n: int, seed: int) -> dict[str, list[float]]:
    """`n` searches of 10 results, 70 % with one relevant result (E1 similarity ~ N(0.66, 0.07) against the
    others' N(0.45, 0.08), ranked by a noisy score); the agent hydrates the relevant one when it is found, marks
    each result ranked above it not_relevant with probability 0.4 (the top result when none is relevant), and
    leaves the rest unused. Returns each threshold's value after every search."""
    rng = random.Random(seed)
    listener = on_tool_call(s)
    path: dict[str, list[float]] = {name: [] for name in RELEVANCE}
    next_id = 0
    for q in range(n):
        relevant = None
        results = []
        for k in range(10):
            next_id += 1
            is_relevant = k == 0 and rng.random() < 0.7
            sim = rng.gauss(0.66, 0.07) if is_relevant else rng.gauss(0.45, 0.08)
            results.append((memory(next_id), min(max(sim, 0.0), 1.0), sim + rng.gauss(0, 0.08)))
            relevant = memory(next_id) if is_relevant else relevant
        results.sort(key=lambda r: -r[2])
        offer(s, [(m, sim) for m, sim, _ in results], f"q{q}")
        ranked = [m for m, _, _ in results]
        above = ranked[: ranked.index(relevant)] if relevant else ranked[:1]
        for m in above:
            if rng.random() < 0.4:
                listener("update_synergy_matrix", {"query_vector_id": ranked[0], "result_vector_id": m,
                                                   "feedback": "not_relevant"})
        if relevant:
            listener("hydrate_citation", {"citation_tag": f"[node_{relevant}]"})
        clock.t += TURN
        s.expire()
        for name in RELEVANCE:
            path[name].append(s.value(name))
    return path


def test_a_simulated_agent_leaves_every_relevance_threshold_strictly_inside_its_bounds() -> None:
    for seed in (1, 2, 3):
        s, clock = service()
        path = simulated_searches(s, clock, 120, seed)
        for name, values in path.items():
            spec = s.spec(name)
            late = values[len(values) // 2:]
            assert all(spec.lo < v < spec.hi for v in values), (name, seed, min(values), max(values))
            # settled: the second half moves within a third of the bounds' width, no swing from one to the other
            assert max(late) - min(late) < (spec.hi - spec.lo) / 3, (name, seed, min(late), max(late))
            assert s.outcomes.count(name, "General") >= 60


def test_in_a_search_where_one_result_was_used_about_a_quarter_of_the_unused_ones_close_as_weak_zeros() -> None:
    s, clock = service()
    results = [(memory(i), 0.5) for i in range(1, 42)]
    offer(s, results, "q")
    offer(s, [(memory(i), 0.5) for i in range(100, 141)], "nothing used")
    on_tool_call(s)("hydrate_citation", {"citation_tag": f"[node_{memory(1)}]"})  # rank 0: nothing skipped
    clock.t += PENDING + 1
    s.expire()
    outcomes = s.outcomes.pairs("theta_warn", "General")[1].tolist()
    assert outcomes.count(1.0) == 1
    assert 5 <= outcomes.count(0.0) <= 16  # of the 40 left unused in "q" (0.25 × 40 = 10); none of the other's
    assert s.expired_unused == 82 - len(outcomes)  # the rest closed as no evidence


def test_skipped_marks_and_engaged_searches_survive_a_restart() -> None:
    s, clock = service()
    a, b, c, d = memory(1), memory(2), memory(3), memory(4)
    offer(s, [(a, 0.7), (b, 0.65), (c, 0.6), (d, 0.55)], "q")
    on_tool_call(s)("boost_importance", {"node_id": c, "delta": 0.1, "rationale": "the answer"})
    copy = ThresholdService(constitution(), clock)
    copy.load_doc(s.to_doc())
    copy.outcomes.unused_weight = 0.0  # only the skipped ones speak
    clock.t += PENDING + 1
    copy.expire()
    pairs = sorted(zip(*(v.tolist() for v in copy.outcomes.pairs("theta_warn", "General"))))
    assert pairs == [(0.6, 1.0), (0.65, 0.0), (0.7, 0.0)]  # a and b skipped for c; d, below it, unjudged
