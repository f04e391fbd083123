"""Workspace competition, ego identity continuity, meta-cognition and rank agreement (SPEC §9): naive
references, exact boundary values and hypothesis properties."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextgraph.constitution import constitution
from contextgraph.gwt import binding, ego
from contextgraph.gwt import workspace as gw
from contextgraph.gwt.workspace import Candidate, Workspace
from contextgraph.utl import meta

GWT = constitution()["gwt"]
ENTER = GWT["workspace"]["enter_threshold"]
EXIT = GWT["workspace"]["exit_threshold"]
BROADCAST = GWT["workspace"]["broadcast_ms"] / 1000.0
BOUNDS = GWT["ego"]["identity"]
LOW = GWT["meta"]["low_score"]
CONSECUTIVE = GWT["meta"]["consecutive_low"]


def test_constitution_carries_the_spec_numbers():
    assert (ENTER, EXIT, BROADCAST) == (0.8, 0.7, 0.1)
    assert BOUNDS == {"healthy": 0.9, "warning": 0.7, "critical": 0.5}
    assert (LOW, CONSECUTIVE) == (0.5, 5)


def step(ws, candidates, now):
    return gw.step(ws, candidates, now, enter_threshold=ENTER, exit_threshold=EXIT, broadcast_seconds=BROADCAST)


def kinds(events):
    return [e.kind for e in events]


def c(mid, r, importance=1.0, alignment=1.0):
    return Candidate(mid, r, importance, alignment)


# ---------------------------------------------------------------- workspace: rank


def naive_unit(x):
    x = float(x)
    if not math.isfinite(x):
        return 0.0
    return min(max(x, 0.0), 1.0)


def naive_rank(candidates, enter):
    eligible = [x for x in candidates if naive_unit(x.r) >= enter]
    scored = [(naive_unit(x.r) * naive_unit(x.importance) * naive_unit(x.alignment), x) for x in eligible]
    # selection sort: highest score first, then the lower id
    out = []
    while scored:
        best = 0
        for i in range(1, len(scored)):
            s, x = scored[i]
            bs, bx = scored[best]
            if s > bs or (s == bs and x.memory_id < bx.memory_id):
                best = i
        out.append(scored.pop(best)[1])
    return out


def test_rank_threshold_is_inclusive_and_orders_by_score_then_id():
    cands = [c("d", 0.7999), c("c", 0.8, 0.5), c("b", 0.8, 0.5), c("a", 0.9, 0.5), c("e", 1.0, 0.9)]
    ranked = gw.rank(cands, ENTER)
    assert [x.memory_id for x in ranked] == ["e", "a", "b", "c"]  # 0.9, 0.45, 0.4 (tie: b < c)
    assert gw.rank([c("x", 0.8)], 0.8) == [c("x", 0.8)]
    assert gw.rank([], ENTER) == []


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_rank_treats_non_finite_r_as_zero(bad):
    assert gw.rank([c("x", bad)], ENTER) == []
    assert gw.rank([c("x", bad)], 0.0) == [c("x", bad)]  # r counts as 0 ≥ 0
    assert c("x", bad).score == 0.0
    assert c("y", 0.9, bad, 1.0).score == 0.0


finite_or_not = st.one_of(st.floats(-0.5, 1.5), st.sampled_from([float("nan"), float("inf"), float("-inf")]))
candidate_st = st.builds(Candidate, st.sampled_from("abcdefgh"), finite_or_not,
                         st.floats(0, 1), st.floats(0, 1))


@settings(max_examples=50, deadline=None)
@given(st.lists(candidate_st, max_size=10), st.sampled_from([0.0, 0.5, 0.7, 0.8, 1.0]))
def test_rank_matches_the_naive_reference(cands, enter):
    assert gw.rank(cands, enter) == naive_rank(cands, enter)


# ---------------------------------------------------------------- workspace: step


def test_empty_workspace_one_eligible_candidate_enters_and_broadcasts():
    ws, events = step(Workspace(), [c("m", 0.85, 0.6, 0.7)], now=10.0)
    assert kinds(events) == ["enter"]
    (e,) = events
    assert (e.memory_id, e.at, e.r) == ("m", 10.0, 0.85)
    assert e.detail["score"] == pytest.approx(0.85 * 0.6 * 0.7)
    assert ws.active == c("m", 0.85, 0.6, 0.7)
    assert ws.entered_at == 10.0 and ws.broadcast_until == pytest.approx(10.1)
    assert ws.broadcasting(10.0) and ws.broadcasting(10.0999)
    assert not ws.broadcasting(ws.broadcast_until) and not ws.broadcasting(10.2)
    assert not Workspace().broadcasting(0.0)


def test_ineligible_candidates_change_nothing():
    ws, events = step(Workspace(), [c("m", 0.79), c("n", float("nan"))], now=1.0)
    assert ws == Workspace() and events == []


def test_two_eligible_raise_a_conflict_and_the_higher_score_enters():
    ws, events = step(Workspace(), [c("low", 0.95, 0.5), c("high", 0.85, 0.9)], now=2.0)
    assert kinds(events) == ["conflict", "enter"]
    conflict, entered = events
    assert set(conflict.detail["memories"]) == {"low", "high"}
    assert conflict.detail["memories"][0] == "high" and conflict.memory_id == "high"
    assert entered.memory_id == "high" and ws.active.memory_id == "high"


def test_active_below_exit_threshold_leaves():
    ws, _ = step(Workspace(), [c("m", 0.9)], now=0.0)
    ws, events = step(ws, [c("m", 0.69)], now=1.0)
    assert kinds(events) == ["exit"]
    assert events[0].memory_id == "m" and events[0].r == 0.69
    assert "exit threshold" in events[0].detail["reason"]
    assert ws == Workspace() and ws.active is None


def test_active_exits_then_another_enters():
    ws, _ = step(Workspace(), [c("m", 0.9)], now=0.0)
    ws, events = step(ws, [c("m", 0.69), c("n", 0.81)], now=1.0)
    assert [(e.kind, e.memory_id) for e in events] == [("exit", "m"), ("enter", "n")]
    assert ws.active.memory_id == "n" and ws.entered_at == 1.0


def test_hysteresis_between_exit_and_enter_keeps_the_active_memory():
    ws, _ = step(Workspace(), [c("m", 0.9)], now=0.0)
    ws, events = step(ws, [c("m", 0.75)], now=1.0)
    assert events == []
    assert ws.active == c("m", 0.75) and ws.entered_at == 0.0  # re-measured, still held
    ws, events = step(ws, [c("m", 0.7)], now=2.0)  # exactly on the exit threshold: still held
    assert events == [] and ws.active.memory_id == "m"


def test_active_not_among_candidates_stays():
    ws, _ = step(Workspace(), [c("m", 0.9)], now=0.0)
    ws2, events = step(ws, [c("x", 0.5)], now=1.0)
    assert events == [] and ws2 == ws
    ws3, events = step(ws, [], now=1.0)
    assert events == [] and ws3 == ws


def test_stronger_candidate_displaces_the_active():
    ws, _ = step(Workspace(), [c("m", 0.85, 0.5)], now=0.0)
    ws, events = step(ws, [c("n", 0.9, 0.9)], now=1.0)
    assert [(e.kind, e.memory_id) for e in events] == [("exit", "m"), ("enter", "n")]
    assert events[0].detail["reason"] == "displaced" and events[0].detail["by"] == "n"
    assert ws.active.memory_id == "n" and ws.broadcast_until == pytest.approx(1.1)


def test_weaker_or_equal_eligible_candidate_does_not_displace():
    ws, _ = step(Workspace(), [c("m", 0.9, 0.9)], now=0.0)
    ws2, events = step(ws, [c("n", 0.95, 0.5)], now=1.0)
    assert events == [] and ws2 == ws
    ws3, events = step(ws, [c("n", 0.9, 0.9)], now=1.0)  # equal score: the incumbent holds
    assert events == [] and ws3 == ws


def test_remeasured_active_with_a_rival_conflicts_but_keeps_the_stronger():
    ws, _ = step(Workspace(), [c("m", 0.9)], now=0.0)
    ws, events = step(ws, [c("m", 0.95), c("n", 0.85)], now=1.0)
    assert kinds(events) == ["conflict"]  # m wins again: re-broadcast, no enter
    assert ws.active == c("m", 0.95) and ws.entered_at == 0.0 and ws.broadcast_until == pytest.approx(1.1)


def test_same_memory_winning_again_rebroadcasts_without_enter():
    ws, _ = step(Workspace(), [c("m", 0.9)], now=0.0)
    assert not ws.broadcasting(0.5)
    ws, events = step(ws, [c("m", 0.92)], now=0.5)
    assert events == []
    assert ws.active.r == 0.92 and ws.entered_at == 0.0
    assert ws.broadcast_until == pytest.approx(0.6) and ws.broadcasting(0.55)


def test_remeasured_weaker_active_is_displaced_by_a_candidate_it_used_to_beat():
    ws, _ = step(Workspace(), [c("m", 1.0)], now=0.0)
    ws, events = step(ws, [c("m", 0.75), c("n", 0.8)], now=1.0)  # m re-measured at 0.75 < n's 0.8
    assert [(e.kind, e.memory_id) for e in events] == [("exit", "m"), ("enter", "n")]
    assert events[0].detail["reason"] == "displaced"


step_candidates = st.lists(
    st.builds(Candidate, st.sampled_from("abcd"),
              st.one_of(st.floats(0.6, 1.0), st.just(float("nan"))), st.floats(0, 1), st.floats(0, 1)),
    max_size=5)


@settings(max_examples=50, deadline=None)
@given(st.lists(step_candidates, max_size=12))
def test_any_sequence_keeps_one_active_and_well_formed_events(rounds):
    ws = Workspace()
    entered: set[str] = set()
    active_id = None
    for t, cands in enumerate(rounds):
        ws, events = step(ws, cands, now=float(t))
        for e in events:
            assert e.at == float(t)
            if e.kind == "enter":
                assert e.r >= ENTER
                assert e.memory_id != active_id  # no enter for the memory already holding the workspace
                entered.add(e.memory_id)
                active_id = e.memory_id
            elif e.kind == "exit":
                assert e.memory_id in entered and e.memory_id == active_id
                active_id = None
            else:
                assert len(e.detail["memories"]) >= 2
        assert (ws.active.memory_id if ws.active else None) == active_id
        assert ws.active is None or ws.broadcast_until is not None
        assert sum(e.kind == "enter" for e in events) <= 1


# ---------------------------------------------------------------- ego


def naive_cos(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    if na == 0 or nb == 0:
        return 0.0
    return min(max(dot / (na * nb), 0.0), 1.0)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=13, max_size=13), st.floats(0, 1))
def test_identity_continuity_is_cosine_times_r(pairs, r):
    now = [p for p, _ in pairs]
    prev = [q for _, q in pairs]
    ic = ego.identity_continuity(now, prev, r)
    assert ic == pytest.approx(naive_cos(now, prev) * r, abs=1e-12)
    assert 0.0 <= ic <= 1.0


def test_identity_continuity_edges():
    pv = [0.2, 0.5, 0.1]
    assert ego.identity_continuity(pv, None, 0.63) == 0.63  # first point: cos = 1
    assert ego.identity_continuity(pv, pv, 0.63) == pytest.approx(0.63)
    assert ego.identity_continuity([0, 0, 0], pv, 1.0) == 0.0
    assert ego.identity_continuity(pv, [0, 0, 0], 1.0) == 1.0  # a directionless predecessor: nothing broke
    assert ego.identity_continuity([0, 0, 0], [0, 0, 0], 1.0) == 1.0  # still no direction to lose
    assert ego.identity_continuity([1, 0], [0, 1], 1.0) == 0.0
    assert ego.identity_continuity(pv, None, 1.7) == 1.0
    assert ego.identity_continuity(pv, None, -0.3) == 0.0
    assert ego.identity_continuity(pv, None, float("nan")) == 0.0
    assert ego.identity_continuity([float("nan"), 1.0], [0.0, 1.0], 1.0) == pytest.approx(1.0)
    for v in (ego.identity_continuity([0, 0], [0, 0], float("nan")), ego.cosine([], [])):
        assert math.isfinite(v)


@pytest.mark.parametrize(("ic", "status"), [
    (1.0, "Healthy"), (0.9001, "Healthy"), (0.9, "Stable"), (0.8, "Stable"), (0.7, "Stable"),
    (0.6999, "Warning"), (0.5, "Warning"), (0.4999, "Critical"), (0.0, "Critical"),
])
def test_identity_status_on_the_boundaries(ic, status):
    assert ego.identity_status(ic, BOUNDS) == status


def test_coherence_with_actions_is_the_mean_cosine():
    rng = np.random.default_rng(3)
    purpose = rng.uniform(0, 1, 13)
    actions = rng.uniform(0, 1, (7, 13))
    expected = sum(naive_cos(purpose, a) for a in actions) / len(actions)
    assert ego.coherence_with_actions(purpose, actions) == pytest.approx(expected)
    assert ego.coherence_with_actions(purpose, [purpose, np.zeros(13)]) == pytest.approx(0.5)
    assert ego.coherence_with_actions(purpose, []) == 0.0
    assert ego.coherence_with_actions(purpose, np.zeros((0, 13))) == 0.0


# ---------------------------------------------------------------- meta


def test_meta_score_exact_values():
    for p in (0.0, 0.3, 1.0, -2.0):
        assert meta.meta_score(p, p) == 0.5
    for p, a in ((0.7, 0.2), (0.1, 0.9), (0.0, 1.0), (1.0, 0.0), (5.0, -5.0)):
        assert meta.meta_score(p, a) == pytest.approx(1 / (1 + math.exp(-2 * (p - a))))
    assert meta.meta_score(0.2, 0.7) < 0.5 < meta.meta_score(0.7, 0.2)


@pytest.mark.parametrize(("p", "a"), [
    (float("nan"), 0.3), (0.3, float("nan")), (float("inf"), 0.3), (0.3, float("-inf")),
    (float("inf"), float("inf")), (float("-inf"), 0.0),
])
def test_meta_score_non_finite_is_a_perfect_prediction(p, a):
    assert meta.meta_score(p, a) == 0.5


@settings(max_examples=50, deadline=None)
@given(st.floats(-1e3, 1e3), st.floats(-1e3, 1e3), st.floats(-1e3, 1e3))
def test_meta_score_is_monotone_in_the_difference(a, x, y):
    lo, hi = sorted((x, y))
    s_lo, s_hi = meta.meta_score(a + lo, a), meta.meta_score(a + hi, a)
    assert 0.0 <= s_lo <= s_hi <= 1.0
    d = (a + lo) - a
    if abs(d) < 300:
        assert s_lo == pytest.approx(1 / (1 + math.exp(-2 * d)), abs=1e-12)


def test_low_streak_counts_only_the_trailing_run():
    assert meta.low_streak([], LOW) == 0
    assert meta.low_streak([0.1, 0.2, 0.9, 0.3, 0.4], LOW) == 2
    assert meta.low_streak([0.1, 0.2, 0.3], LOW) == 3
    assert meta.low_streak([0.1, 0.2, 0.5], LOW) == 0  # exactly 0.5 is not low
    assert meta.low_streak([0.1, float("nan"), 0.2], LOW) == 1  # NaN breaks the run


def test_needs_introspection_at_exactly_five():
    assert not meta.needs_introspection([0.4] * 4, LOW, CONSECUTIVE)
    assert meta.needs_introspection([0.4] * 5, LOW, CONSECUTIVE)
    assert meta.needs_introspection([0.9] + [0.4] * 6, LOW, CONSECUTIVE)
    assert not meta.needs_introspection([0.4] * 4 + [0.6] + [0.4] * 4, LOW, CONSECUTIVE)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(0, 1), max_size=20))
def test_low_streak_matches_a_naive_count(scores):
    n = 0
    while n < len(scores) and scores[len(scores) - 1 - n] < LOW:
        n += 1
    assert meta.low_streak(scores, LOW) == n
    assert meta.needs_introspection(scores, LOW, CONSECUTIVE) == (n >= CONSECUTIVE)


# ---------------------------------------------------------------- binding: rank agreement


@pytest.mark.parametrize("a", [0.0, 0.25, 0.5, 0.9, 1.0])
def test_binding_r_of_equal_agreements_is_one(a):
    assert binding.binding_r(np.full(13, a)) == pytest.approx(1.0)


@pytest.mark.parametrize("ones", range(14))
def test_binding_r_of_a_zero_one_split_is_the_count_imbalance(ones):
    a = np.array([1.0] * ones + [0.0] * (13 - ones))
    # phases 0 and π: e^{i0} = 1, e^{iπ} = −1, so r = |ones − zeros| / 13
    assert binding.binding_r(a) == pytest.approx(abs(ones - (13 - ones)) / 13, abs=1e-12)
    assert binding.binding_r_batch(a[None, :])[0] == pytest.approx(binding.binding_r(a), abs=1e-12)


def test_binding_r_of_an_even_split_in_phase_is_zero():
    even = np.array([1.0] * 6 + [0.0] * 6)  # 12 phases, half at 0, half at π
    assert binding.binding_r(even) == pytest.approx(0.0, abs=1e-12)
    nearly = np.array([1.0] * 6 + [0.0] * 6 + [0.5])  # 13th at π/2: r = |i| / 13
    assert binding.binding_r(nearly) == pytest.approx(1 / 13, abs=1e-12)


def test_active_remeasured_non_finite_leaves():
    ws, _ = step(Workspace(), [c("m", 0.9)], now=0.0)
    ws, events = step(ws, [c("m", float("nan"))], now=1.0)
    assert kinds(events) == ["exit"] and ws == Workspace()


def test_identity_status_of_an_unmeasurable_value_is_critical():
    from contextgraph.gwt.ego import identity_status

    assert identity_status(float("nan"), {"healthy": 0.9, "warning": 0.7, "critical": 0.5}) == "Critical"


def test_a_unanimous_no_binds_but_does_not_agree():
    """r_m cannot tell thirteen spaces that put a memory last from thirteen that put it first; ψ_m can."""
    r_last, psi_last = binding.binding(np.zeros(13))
    r_first, psi_first = binding.binding(np.ones(13))
    assert r_last == pytest.approx(1.0) and r_first == pytest.approx(1.0)
    assert binding.agrees(psi_first) and not binding.agrees(psi_last)
    last = Candidate("a" * 32, r_last, 1.0, 1.0, psi_last)
    assert gw.rank([last], 0.8) == []
    state, events = gw.step(Workspace(), [last], 0.0, enter_threshold=0.8, exit_threshold=0.7,
                            broadcast_seconds=0.1)
    assert state.active is None and events == []


def test_context_similarities_are_each_spaces_measure_with_e12_borrowing_e1():
    from contextgraph.fingerprint import SPACES, Sparse
    from contextgraph.retrieval.similarity import context_similarities, space_similarities
    from contextgraph.storage.fingerprint_columns import FingerprintColumns

    class Cosine:  # a dense space's own measure, as the embedders give it
        def similarity(self, query, docs):
            q = np.asarray(query, dtype=np.float64)
            return np.array([float(np.dot(q, d) / (np.linalg.norm(q) * np.linalg.norm(d))) for d in
                             np.asarray(docs, dtype=np.float64)])

    rng = np.random.default_rng(5)

    def fingerprint():  # each space's vectors of the dtype a stored fingerprint has
        fp = {s.id: rng.random(8).astype(np.float32) for s in SPACES}
        fp[9] = rng.integers(1, 256, 8, dtype=np.uint8)
        fp[12] = rng.random((3, 8)).astype(np.float32)
        for sid in (6, 13):
            fp[sid] = Sparse(np.sort(rng.choice(50, 6, replace=False)).astype(np.int32), np.ones(6, np.float32))
        return fp

    by_space = {s.id: Cosine() for s in SPACES}
    context, docs = fingerprint(), [fingerprint() for _ in range(5)]
    got = context_similarities(by_space, context, docs)
    assert got.shape == (5, 13) and np.all((got >= 0) & (got <= 1))
    for column, space in enumerate(SPACES):
        source = SPACES[0] if space.id == 12 else space
        np.testing.assert_allclose(got[:, column], space_similarities(by_space, source, context, docs))
    assert context_similarities(by_space, context, []).shape == (0, 13)
    # the docs as columns (one array per space: the store model's reference sample, retrieval's candidates)
    columns = FingerprintColumns.from_fingerprints(range(len(docs)), docs)
    np.testing.assert_array_equal(context_similarities(by_space, context, columns), got)
    assert context_similarities(by_space, context, columns.take([])).shape == (0, 13)


# --- binding = agreement with the context (issue 11.6) -------------------------------------------------------------


def naive_context_agreement(s, reference):
    ref = [v for v in reference if math.isfinite(v)]
    if not math.isfinite(s):
        return 0.0
    if not ref:
        return min(max(s, 0.0), 1.0)
    below = sum(1 for v in ref if v < s)
    ties = sum(1 for v in ref if v == s)
    return (below + 0.5 * ties + 0.5) / (len(ref) + 1)


def test_context_agreement_exact_values():
    ref = [0.1, 0.2, 0.3]
    assert binding.context_agreement(0.5, ref) == pytest.approx(3.5 / 4)  # closer than every stored memory
    assert binding.context_agreement(0.0, ref) == pytest.approx(0.5 / 4)  # farther than all of them
    assert binding.context_agreement(0.2, ref) == pytest.approx((1 + 0.5 + 0.5) / 4)  # a tie counts half
    assert binding.context_agreement(0.7, []) == 0.7  # no store distribution yet: the similarity itself
    assert binding.context_agreement(float("nan"), ref) == 0.0
    assert binding.context_agreement(0.25, [0.1, float("nan"), 0.3]) == pytest.approx(1.5 / 3)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-1, 1), min_size=1, max_size=8), st.lists(st.floats(-1, 1), min_size=0, max_size=30),
       st.floats(-1, 1))
def test_context_agreements_match_the_scalar_and_are_monotone(column, reference, higher):
    sims = np.asarray(column, dtype=np.float64)[:, None]
    out = binding.context_agreements(sims, [np.asarray(reference)])
    for value, got in zip(column, out[:, 0]):
        assert got == pytest.approx(naive_context_agreement(value, reference))
        assert 0.0 <= got <= 1.0
    if reference:
        a, b = sorted([column[0], higher])
        assert binding.context_agreement(a, reference) <= binding.context_agreement(b, reference)


def test_context_agreements_shape_errors():
    with pytest.raises(ValueError):
        binding.context_agreements(np.zeros(3), [np.zeros(2)])
    with pytest.raises(ValueError):
        binding.context_agreements(np.zeros((2, 3)), [np.zeros(2)] * 2)


def test_the_relevant_candidate_binds_tighter_than_an_irrelevant_one():
    """A store of 200 memories with random similarities to the context in 13 spaces; the relevant candidate is
    closer than nearly all of them in every space, the irrelevant one is a typical stored memory (its
    percentiles scatter). Ranking among the candidates alone would give the irrelevant one a high standing when
    it is the better of two bad results; context agreement does not."""
    rng = np.random.default_rng(3)
    reference = [rng.normal(0.2, 0.1, 200) for _ in range(13)]
    relevant = np.array([np.quantile(r, 0.97) for r in reference])
    irrelevant = np.array([r[i] for i, r in zip(rng.integers(0, 200, 13), reference)])
    r, psi = binding.context_binding(np.stack([relevant, irrelevant]), reference)
    assert r[0] > 0.95 and psi[0] < 0.2 and binding.agrees(psi[0])
    assert r[0] > r[1] + 0.2
    # standings among the candidates alone: the irrelevant one, the best of the bad results it competes with,
    # stands first in every space and binds perfectly on the agreeing side
    worse = irrelevant - 1.0
    standings = [float(v > w) for v, w in zip(irrelevant, worse)]  # first of two: standing 1
    assert binding.binding(np.array(standings)) == pytest.approx((1.0, 0.0))
    r_ctx, psi_ctx = binding.context_binding(irrelevant[None, :], reference)
    assert r_ctx[0] < 0.9 or psi_ctx[0] > 0.5  # against the store it is an ordinary memory


def test_context_binding_of_a_unanimously_typical_candidate_does_not_agree():
    reference = [np.linspace(0, 1, 101)] * 13
    r, psi = binding.context_binding(np.full((1, 13), 0.5), reference)
    assert r[0] > 0.99 and abs(psi[0] - math.pi / 2) < 0.01  # tightly bound on the border: the workspace's
    # agrees() (ψ < π/2) and its r_m × importance ranking decide; the agreement level is what binding reports
