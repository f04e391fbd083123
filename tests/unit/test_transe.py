"""utl.transe (E11's TransE novelty) against a naive reference, and the triples codec round trip."""

import math
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextgraph.storage.base import OplogEntry
from contextgraph.storage.codec import decode_triples, encode_triples
from contextgraph.utl import transe


def _unit(v):
    return v / np.linalg.norm(v)


def _triples(rng, relation, n, translation, noise, dim=16):
    out = []
    for _ in range(n):
        h = _unit(rng.normal(size=dim))
        out.append((relation, h, h + translation + noise * rng.normal(size=dim)))
    return out


def test_translation_and_residual_match_a_naive_fit():
    rng = np.random.default_rng(3)
    r_true = rng.normal(size=16) * 0.3
    data = _triples(rng, "uses", 40, r_true, 0.05)
    model = transe.fit_translations(data, min_examples=3)
    naive_r = sum(t - h for _, h, t in data) / len(data)
    naive_sigma = sum(float(np.sum((h + naive_r - t) ** 2)) for _, h, t in data) / len(data)
    assert np.allclose(model.vectors["uses"], naive_r)
    assert model.residual["uses"] == pytest.approx(naive_sigma)
    assert model.counts == {"uses": 40}


def test_a_relation_needs_min_examples():
    rng = np.random.default_rng(4)
    model = transe.fit_translations(_triples(rng, "calls", 2, np.zeros(16), 0.1), min_examples=3)
    assert model.vectors == {} and transe.transe_novelty(model, _triples(rng, "calls", 1, 0, 0)) is None


def test_a_predicted_tail_is_less_novel_than_a_random_one():
    rng = np.random.default_rng(5)
    r_true = rng.normal(size=16) * 0.5
    model = transe.fit_translations(_triples(rng, "uses", 50, r_true, 0.05), min_examples=3)
    h = _unit(rng.normal(size=16))
    predicted = transe.transe_novelty(model, [("uses", h, h + r_true)])
    random = transe.transe_novelty(model, [("uses", h, _unit(rng.normal(size=16)))])
    assert predicted < 0.5 < random
    e2 = float(np.sum((h + model.vectors["uses"] - (h + r_true)) ** 2))
    assert predicted == pytest.approx(e2 / (e2 + model.residual["uses"]))
    # a relation the model does not know is skipped, not guessed
    assert transe.transe_novelty(model, [("uses", h, h + r_true), ("is_a", h, h)]) == pytest.approx(predicted)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), min_size=8, max_size=8),
       st.integers(min_value=3, max_value=6))
def test_novelty_is_finite_and_in_range(values, n):
    rng = np.random.default_rng(n)
    model = transe.fit_translations(_triples(rng, "uses", n, np.zeros(8), 0.0, dim=8), min_examples=3)
    v = np.asarray(values, dtype=np.float64)
    score = transe.transe_novelty(model, [("uses", v, np.zeros(8)), ("uses", np.zeros(8), v)])
    assert score is not None and 0.0 <= score <= 1.0 and math.isfinite(score)


def test_identical_stored_triples_floor_the_residual():
    h, t = np.ones(4) / 2, np.zeros(4)
    model = transe.fit_translations([("is_a", h, t)] * 3, min_examples=3)
    assert model.residual["is_a"] == transe.VARIANCE_FLOOR
    assert transe.transe_novelty(model, [("is_a", h, t)]) == 0.0


def test_codec_round_trip():
    rng = np.random.default_rng(6)
    triples = [SimpleNamespace(head="ContextGraph", relation="uses", tail="LMDB",
                               head_vector=rng.normal(size=8).astype(np.float32),
                               tail_vector=rng.normal(size=8).astype(np.float32)),
               SimpleNamespace(head="Ünïcode", relation="is_a", tail="name", head_vector=np.zeros(8, np.float32),
                               tail_vector=np.ones(8, np.float32))]
    decoded = decode_triples(encode_triples(triples))
    assert [(h, r, t) for h, r, t, _, _ in decoded] == [("ContextGraph", "uses", "LMDB"), ("Ünïcode", "is_a", "name")]
    for (_, _, _, hv, tv), original in zip(decoded, triples):
        assert np.allclose(hv, original.head_vector, atol=1e-2) and np.allclose(tv, original.tail_vector, atol=1e-2)
    assert decode_triples(encode_triples([])) == []


def test_without_equals_a_refit_without_those_triples():
    rng = np.random.default_rng(8)
    data = _triples(rng, "uses", 12, rng.normal(size=16) * 0.3, 0.1) + _triples(rng, "is_a", 4, 0.1, 0.2)
    model = transe.fit_translations(data, min_examples=3)
    mine = [data[3], data[7], data[13]]
    rest = [t for i, t in enumerate(data) if i not in (3, 7, 13)]
    expected = transe.fit_translations(rest, min_examples=3)
    got = model.without(mine)
    assert set(got.vectors) == set(expected.vectors) == {"uses", "is_a"}
    for relation in expected.vectors:
        assert np.allclose(got.vectors[relation], expected.vectors[relation])
        assert got.residual[relation] == pytest.approx(expected.residual[relation])
        assert got.counts[relation] == expected.counts[relation]
    # taking a relation below min_examples drops it, as a refit would
    assert "is_a" not in model.without([data[12], data[13]]).vectors


class _FakeStore:
    """What TranslationFits reads from a store: counters, the oplog and the live triples."""

    def __init__(self, triples, count):
        self.triples, self.memories, self.seq = triples, count, count
        self.oplog: list[OplogEntry] = []

    def log(self, op):  # every oplog entry takes the next seq, as in both backends
        self.seq += 1
        self.oplog.append(OplogEntry(self.seq, op, "id", 1))

    def triple_count(self):
        return len(self.triples)

    def last_seq(self):
        return self.seq

    def count(self):
        return self.memories

    def oplog_since(self, seq, limit=None):
        return [e for e in self.oplog if e.seq > seq][:limit]

    def live_triples(self):
        return [("id", "h", r, "t", h, t) for r, h, t in self.triples]


def test_large_tables_refit_in_the_background_and_deletions_refit():
    from contextgraph.services.engine.store_model import TranslationFits

    rng = np.random.default_rng(9)
    n = TranslationFits.SYNC_BELOW
    store = _FakeStore(_triples(rng, "uses", n, np.zeros(16), 0.1), n)
    fits = TranslationFits(min_examples=3, refit_growth=0.1)
    assert fits.get(store).counts["uses"] == n  # the first fit is made in the caller
    store.triples += _triples(rng, "uses", n // 5, np.zeros(16), 0.1)
    stale = fits.get(store)  # grown by a fifth: a refit starts in the background, the old model serves
    fits.wait()
    assert stale.counts["uses"] == n and fits.get(store).counts["uses"] == n + n // 5
    current = fits.get(store)
    for _ in range(3):  # rewrites (the E8 refresh) take seqs but delete nothing: no refit
        store.log("rewrite")
    fits.get(store)
    fits.wait()
    assert fits.get(store) is current  # a refit would have made a new model
    store.triples, store.memories = store.triples[:-1], store.memories - 1  # a forget
    store.log("delete")
    fits.get(store)
    fits.wait()
    assert fits.get(store).counts["uses"] == n + n // 5 - 1
    fits.close()
    store.triples = store.triples[:-10]
    assert fits.get(store).counts["uses"] == n + n // 5 - 1  # closed: no refit reads the store any more
