"""OutcomeLog.expire through its offer queue resolves exactly the predictions a walk over every open one would:
the same ones, each once, oldest offered first, with offers used, replaced, pushed out of the bound and reloaded
in between (a model-based property test against that walk)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from contextgraph.services.engine.outcomes import OutcomeLog, Pending

PENDING_SECONDS = 10.0
MEMORIES = [f"m{i}" for i in range(6)]
THRESHOLDS = ["theta_a", "theta_b"]


def walk_expire(pending: dict[str, dict[str, Pending]], now: float) -> list[tuple]:
    """The reference: every open prediction older than the window resolves (the former full walk)."""
    out = []
    for memory_id in list(pending):
        for t, p in list(pending[memory_id].items()):
            if now - p.offered_at > PENDING_SECONDS:
                out.append((p.threshold, p.domain, p.score, p.offered_at))
                del pending[memory_id][t]
        if not pending[memory_id]:
            del pending[memory_id]
    return out


operations = st.lists(st.one_of(
    st.tuples(st.just("offer"), st.sampled_from(MEMORIES), st.sampled_from(THRESHOLDS), st.floats(0, 1)),
    st.tuples(st.just("use"), st.sampled_from(MEMORIES)),
    st.tuples(st.just("wait"), st.floats(0.5, 8)),
    st.tuples(st.just("reload")),
), max_size=60)


@settings(max_examples=300, deadline=None)
@given(operations, st.integers(2, 5), st.sampled_from([None, 1, 4]))
def test_expiry_resolves_what_a_full_walk_resolves(ops, bound, compact_floor):
    """compact_floor 1 or 4: the offer queue is rebuilt from the live predictions along the way."""
    log = OutcomeLog(max_pairs=100, pending_max=bound, pending_seconds=PENDING_SECONDS, compact_floor=compact_floor)
    reference: dict[str, dict[str, Pending]] = {}
    now = 0.0
    for op in ops:
        if op[0] == "offer":
            _, memory_id, threshold, score = op
            p = Pending(threshold, "general", score, now, "q")
            log.offer(memory_id, p)
            open_ = reference.pop(memory_id, {})
            open_[threshold] = p
            reference[memory_id] = open_
            while len(reference) > bound:
                reference.pop(next(iter(reference)))
        elif op[0] == "use":
            log.use(op[1])
            reference.pop(op[1], None)
        elif op[0] == "wait":
            now += op[1]
        else:  # a restart: the pending predictions come back from the persisted document
            doc = log.to_doc()
            log = OutcomeLog(max_pairs=100, pending_max=bound, pending_seconds=PENDING_SECONDS,
                             compact_floor=compact_floor)
            log.load_doc(doc)
        expired = log.expire(now)
        expected = walk_expire(reference, now)
        assert sorted((r.threshold, r.domain, r.score) for r in expired) == \
               sorted((t, d, s) for t, d, s, _ in expected)
        assert log.pending_count == sum(len(v) for v in reference.values())
    left = sum(len(v) for v in reference.values())
    assert len(log.expire(now + PENDING_SECONDS + 1)) == left and log.pending_count == 0  # all due at last


def test_expired_predictions_resolve_oldest_offered_first():
    log = OutcomeLog(max_pairs=100, pending_max=10, pending_seconds=PENDING_SECONDS)
    log.offer("a", Pending("theta_a", "general", 0.1, 0.0, "q1"))
    log.offer("b", Pending("theta_a", "general", 0.2, 1.0, "q1"))
    log.offer("a", Pending("theta_b", "general", 0.3, 2.0, "q2"))  # moves "a" to the back of the open list
    assert [r.score for r in log.expire(20.0)] == [0.1, 0.2, 0.3]


def test_offer_queue_rebuilds_stay_rare_when_every_prediction_is_live(monkeypatch):
    """Four thresholds per memory at the pending bound: the live predictions alone fill the queue's floor. The
    rebuild used to trigger on the floor alone, so it re-sorted every live prediction on every offer from then
    on; it now waits for the queue to double, a rebuild per ~live-count offers."""
    bound, thresholds = 50, ["theta_opt", "theta_acc", "theta_warn", "theta_kur"]
    log = OutcomeLog(max_pairs=100, pending_max=bound, pending_seconds=1e9, compact_floor=4 * bound)
    rebuilds = 0
    queued = OutcomeLog._queued

    def counting(pending):
        nonlocal rebuilds
        rebuilds += 1
        return queued(pending)

    monkeypatch.setattr(OutcomeLog, "_queued", staticmethod(counting))
    offers = 0
    for round_ in range(40):  # the same 2 × bound memories found again and again, each against every threshold
        for i in range(2 * bound):
            for t in thresholds:
                log.offer(f"m{i}", Pending(t, "general", 0.5, float(offers), f"q{round_}"))
                offers += 1
    assert log.pending_count == 4 * bound  # at the bound, every prediction live
    assert rebuilds <= offers // (4 * bound) + 1  # the old trigger: 7,900 here
    assert len(log._offers) <= 2 * 4 * bound + 1
    # the queue still expires exactly the live predictions, oldest first
    expired = log.expire(2e9)
    assert len(expired) == 4 * bound and log.pending_count == 0
