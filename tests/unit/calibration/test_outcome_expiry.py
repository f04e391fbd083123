"""OutcomeLog.expire through its offer queue resolves exactly the predictions a walk over every open one would:
the same ones, each once, oldest offered first, with offers used, replaced, pushed out of the bound and reloaded
in between (a model-based property test against that walk)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from contextgraph.services.outcomes import OutcomeLog, Pending

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
@given(operations, st.integers(2, 5))
def test_expiry_resolves_what_a_full_walk_resolves(ops, bound):
    log = OutcomeLog(max_pairs=100, pending_max=bound, pending_seconds=PENDING_SECONDS)
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
            log = OutcomeLog(max_pairs=100, pending_max=bound, pending_seconds=PENDING_SECONDS)
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
