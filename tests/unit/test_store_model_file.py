"""The store model's file (services.engine.store_model_file): every part of a fitted model comes back as it was
saved, and a file that does not belong to this store, these settings or this version, or that is damaged, is
ignored (the model is then fitted as before)."""

from __future__ import annotations

import numpy as np
import pytest

from contextgraph.fingerprint import Sparse
from contextgraph.services.engine import store_model_file as smf
from contextgraph.services.engine.store_model import Clusters, StoreModel
from contextgraph.utl import calibration as cal
from contextgraph.utl import delta_s as ds

KEY, STORE = "k" * 64, "a" * 32


def fingerprint(rng: np.random.Generator) -> dict:
    return {1: rng.standard_normal(384).astype(np.float32),
            6: Sparse(np.array([3, 17, 90], dtype=np.int32), np.array([1.0, 2.0, 1.0], dtype=np.float32)),
            9: rng.integers(0, 256, 128, dtype=np.uint8),
            12: rng.standard_normal((5, 128)).astype(np.float16).astype(np.float32)}


def a_model(seed: int = 0) -> StoreModel:
    rng = np.random.default_rng(seed)
    fit = ds.GaussianFit(rng.standard_normal(384), np.linalg.qr(rng.standard_normal((384, 8)))[0].T,
                         np.sort(rng.random(8))[::-1] + 1.0, 0.37, 1000, 0.12)
    clusters = Clusters(rng.standard_normal((2, 384)), [[4, 9, 11], [20, 31]],
                        [[fingerprint(rng) for _ in range(3)], [fingerprint(rng) for _ in range(2)]],
                        {1: rng.random(2), 7: rng.random(2)}, {1: 0.41, 7: 0.22})
    return StoreModel(
        count=1234, gaussian={1: fit}, idf={6: (np.array([1, 5, 9]), rng.random(3), 7.5)}, clusters=clusters,
        calibration={"E1": cal.Calibration(0.3, 1.2, 64), "E9": cal.Calibration(-0.1, 1.0, 64)}, loo_samples=64,
        reference=tuple(fingerprint(rng) for _ in range(4)),
        coherence={"E1/connectivity": np.sort(rng.random(64)), "E1/connectivity/off": np.sort(rng.random(60))})


def same_fingerprint(a: dict, b: dict) -> bool:
    if set(a) != set(b):
        return False
    for space in a:
        if isinstance(a[space], Sparse):
            if not (np.array_equal(a[space].indices, b[space].indices)
                    and np.array_equal(a[space].values, b[space].values)):
                return False
        elif not np.array_equal(a[space], b[space]):
            return False
    return True


def test_every_part_comes_back_as_saved(tmp_path):
    model, path = a_model(), tmp_path / smf.FILE_NAME
    smf.save(path, model, KEY, STORE, last_seq=2000)
    loaded = smf.load(path, KEY, STORE, last_seq=2100)
    assert loaded is not None
    back, fitted_seq = loaded
    assert fitted_seq == 2000 and back.count == 1234 and back.loo_samples == 64 and not back.quick
    g, h = model.gaussian[1], back.gaussian[1]
    assert all(np.array_equal(getattr(g, f), getattr(h, f)) for f in ("mean", "components", "variances"))
    assert (g.residual_variance, g.samples, g.shrinkage) == (h.residual_variance, h.samples, h.shrinkage)
    assert np.array_equal(back.idf[6][0], model.idf[6][0]) and np.array_equal(back.idf[6][1], model.idf[6][1])
    assert back.idf[6][2] == 7.5
    assert back.calibration == model.calibration
    assert back.coherence.keys() == model.coherence.keys()
    assert all(np.array_equal(back.coherence[k], v) for k, v in model.coherence.items())
    assert len(back.reference) == 4 and all(map(same_fingerprint, model.reference, back.reference))
    c, d = model.clusters, back.clusters
    assert d is not None and c is not None
    assert np.array_equal(c.centroids, d.centroids) and c.members == d.members and c.baseline == d.baseline
    assert c.separation.keys() == d.separation.keys()
    assert all(np.array_equal(c.separation[s], d.separation[s]) for s in c.separation)
    assert [len(f) for f in d.fingerprints] == [3, 2]
    assert all(same_fingerprint(x, y) for xs, ys in zip(c.fingerprints, d.fingerprints) for x, y in zip(xs, ys))
    # what the UTL derives from it is the same too
    assert np.array_equal(back.idf_of(6, np.array([5, 6])), model.idf_of(6, np.array([5, 6])))
    assert back.coherence_weights == model.coherence_weights
    assert back.calibrate("E1", 0.4) == model.calibrate("E1", 0.4)


@pytest.mark.parametrize("key, store, last_seq", [("x" * 64, STORE, 2000), (KEY, "b" * 32, 2000), (KEY, STORE, 1999),
                                                  (KEY, None, 2000)])
def test_a_file_of_other_settings_another_store_or_a_later_state_is_ignored(tmp_path, key, store, last_seq):
    path = tmp_path / smf.FILE_NAME
    smf.save(path, a_model(), KEY, STORE, last_seq=2000)
    assert smf.load(path, key, store, last_seq) is None


def test_a_missing_or_damaged_file_is_ignored_and_a_save_replaces_it_whole(tmp_path):
    path = tmp_path / smf.FILE_NAME
    assert smf.load(path, KEY, STORE, 10) is None
    path.write_bytes(b"PK\x03\x04 not really a zip file")
    assert smf.load(path, KEY, STORE, 10) is None
    smf.save(path, a_model(1), KEY, STORE, last_seq=10)
    smf.save(path, a_model(2), KEY, STORE, last_seq=10)  # replaced, never appended to
    loaded = smf.load(path, KEY, STORE, 10)
    assert loaded is not None and np.array_equal(loaded[0].clusters.centroids, a_model(2).clusters.centroids)
    assert [p.name for p in tmp_path.iterdir()] == [smf.FILE_NAME]  # no temporary file left behind


def test_the_key_follows_the_settings_and_the_embedders():
    class E:
        def __init__(self, method: str) -> None:
            self.method = method

    c = {"utl": {"knn_k": 5}, "retrieval": {"sparse_max_df": 0.25}}
    base = smf.fit_key(c, {1: E("minilm"), 7: E("code v2")})
    assert smf.fit_key(c, {1: E("minilm"), 7: E("code v2")}) == base
    assert smf.fit_key(c, {1: E("minilm"), 7: E("code v3")}) != base
    assert smf.fit_key({**c, "utl": {"knn_k": 6}}, {1: E("minilm"), 7: E("code v2")}) != base


class Oplog:
    """A store's operation log as oplog_since reads it: `ops` from seq 1."""

    def __init__(self, ops: list[str]) -> None:
        self.ops = ops

    def oplog_since(self, seq: int, limit: int | None = None) -> list:
        from types import SimpleNamespace

        rows = [SimpleNamespace(seq=i + 1, op=op) for i, op in enumerate(self.ops)][seq:]
        return rows[:limit]


def test_a_deletion_or_a_long_log_since_the_fit_makes_the_kept_model_stale():
    assert not smf._deleted_since(Oplog(["put"] * 50 + ["rewrite"] * 50), 10)
    assert smf._deleted_since(Oplog(["put"] * 50 + ["delete"] + ["put"] * 5), 10)
    assert not smf._deleted_since(Oplog(["delete"] + ["put"] * 50), 1)  # before the fit: counted by it
    # more entries since the fit than the first caller should read: due for a refit anyway
    assert smf._deleted_since(Oplog(["put"] * (smf._SCAN_LIMIT + 10)), 0)


class TripleStore(Oplog):
    """What TranslationFits reads of a store: its triples, its id and its operation log."""

    store_id = STORE

    def __init__(self, triples: list[tuple], scans: list[int]) -> None:
        super().__init__(["put"] * len(triples))
        self.triples, self.scans = triples, scans

    def triple_count(self) -> int:
        return len(self.triples)

    def live_triples(self) -> list[tuple]:
        self.scans.append(1)
        return self.triples

    def last_seq(self) -> int:
        return len(self.ops)


def test_transe_translations_are_kept_and_the_next_process_does_not_rescan(tmp_path):
    from contextgraph.services.engine.store_model import TranslationFits

    rng = np.random.default_rng(3)
    triples = [(f"m{i}", "a", ("uses", "owns")[i % 2], "b", rng.standard_normal(8), rng.standard_normal(8))
               for i in range(TranslationFits.SYNC_BELOW + 20)]
    scans: list[int] = []
    store = TripleStore(triples, scans)

    def fits() -> TranslationFits:
        saved = smf.SavedModel({"utl": {}, "retrieval": {"sparse_max_df": 0.25}})
        saved.path = tmp_path / smf.FILE_NAME
        return TranslationFits(3, 0.1, saved=saved)

    first = fits().get(store)  # nothing kept yet: the caller scans every triple
    assert scans == [1] and (tmp_path / smf.TRANSLATIONS_FILE).is_file()
    again = fits().get(store)  # a new process: the kept translations, no scan
    assert scans == [1]
    assert again.counts == first.counts and again.residual == pytest.approx(first.residual)
    assert all(np.array_equal(again.vectors[r], first.vectors[r]) for r in first.vectors)
    assert again.min_examples == first.min_examples == 3


def test_doctor_says_which_fits_are_kept_and_names_a_damaged_or_foreign_one(tmp_path):
    from contextgraph.doctor import check_kept_fits

    assert check_kept_fits(tmp_path, 10) == []  # nothing kept yet: nothing to say
    smf.save(tmp_path / smf.FILE_NAME, a_model(), KEY, STORE, 7)
    (tmp_path / smf.TRANSLATIONS_FILE).write_bytes(b"not an npz")
    model, translations = check_kept_fits(tmp_path, 10)
    assert model.ok and "seq 7" in model.detail and "at 10" in model.detail and not model.required
    assert not translations.ok and "unreadable" in translations.detail and "delete" in translations.fix
    assert not translations.required  # a cache: the server refits it, doctor only warns
    (ahead,) = [c for c in check_kept_fits(tmp_path, 5) if c.name == "kept store model"]
    assert not ahead.ok and "ahead of the store's 5" in ahead.detail  # a restored or copied store
