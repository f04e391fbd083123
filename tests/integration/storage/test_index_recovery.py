"""Damaged saved indexes (issue 12.4): whatever cannot be loaded is rebuilt from the store when the set opens,
and `doctor`'s index check names it. Real LMDB, real indexes, real files cut short on disk."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest
from storage_fakes import fingerprint, record

from contextgraph.doctor import check_indexes
from contextgraph.storage.indexes import INDEXED_SPACES, IndexSet, saved_set_problems
from contextgraph.storage.lmdb_store import LmdbStore
from contextgraph.storage.maintenance import INDEX_DIR, STORE_DIR
from contextgraph.storage.sparse_index import SparseIndex

N = 30
# the files of issue 12.4, and the siblings a dense index needs; every kind of index and the manifest
DAMAGED = ["e13.sparse.npz", "e06.sparse.npz", "e09.binary.npz", "e01.hnsw", "e05.hnsw.state.npy",
           "e07.hnsw.meta.json", "e03.timeline.npz", "e10.borrowed.npz", "manifest.json"]


@pytest.fixture
def home(tmp_path):
    """A data directory as a server leaves it: N memories in the store and a saved set of indexes."""
    rng = np.random.default_rng(3)
    with LmdbStore(tmp_path / STORE_DIR) as store:
        for _ in range(N):
            store.put(record(), fingerprint(rng, tokens=2, e6_nnz=40, e13_nnz=15))
        IndexSet.open(tmp_path / INDEX_DIR, store)
    return tmp_path


def _truncate(path, fraction):
    os.truncate(path, int(path.stat().st_size * fraction))


def _assert_serves_every_memory(indexes: IndexSet, store: LmdbStore) -> None:
    assert indexes.sizes() == {space: N for space in INDEXED_SPACES}
    last = store.last_seq()
    probe = store.fingerprints([last])[0]
    for space in INDEXED_SPACES:  # each space finds the memory by its own vector
        assert last in {seq for seq, _ in indexes.search(space, probe[space], 5)}, space


@pytest.mark.parametrize("name", DAMAGED)
@pytest.mark.parametrize("fraction", [0.5, 0.0])
def test_a_truncated_index_file_is_rebuilt_at_open_and_saved_whole(home, name, fraction):
    _truncate(home / INDEX_DIR / name, fraction)
    with LmdbStore(home / STORE_DIR) as store:
        problems = saved_set_problems(home / INDEX_DIR, store)
        assert problems and name.split(".")[0] in problems[0]  # the damage is found, and the file named
        opened = IndexSet.open(home / INDEX_DIR, store)  # before issue 12.4: BadZipFile / EOFError escaped here
        _assert_serves_every_memory(opened, store)
        # the rebuilt set replaced the damaged one on disk: the next start loads it instead of rebuilding again
        assert saved_set_problems(home / INDEX_DIR, store) == []
        again = IndexSet.load(home / INDEX_DIR, store)
        assert again is not None
        _assert_serves_every_memory(again, store)


def test_a_set_saved_before_the_manifest_named_its_spaces_loads_as_the_full_layout(home):
    """Manifests written before `indexed` (the spaces a set keeps) were always LMDB's full sets: one without it
    loads as such, not rebuilt; asked for other spaces (PostgreSQL's set), it is not taken."""
    manifest = home / INDEX_DIR / "manifest.json"
    saved = json.loads(manifest.read_text())
    assert saved.pop("indexed") == list(INDEXED_SPACES)
    manifest.write_text(json.dumps(saved))
    with LmdbStore(home / STORE_DIR) as store:
        loaded = IndexSet.load(home / INDEX_DIR, store)
        assert loaded is not None and loaded.spaces == INDEXED_SPACES
        _assert_serves_every_memory(loaded, store)
        assert IndexSet.load(home / INDEX_DIR, store, spaces=(2, 3, 4, 6, 13)) is None


def test_a_sparse_file_whose_arrays_disagree_is_rebuilt(home):
    """A file that unzips and parses but whose postings point past its documents must fail at load, not in the
    first search."""
    path = home / INDEX_DIR / "e13.sparse.npz"
    with np.load(path) as data:
        arrays = dict(data)
    arrays["docs"] = arrays["docs"] + 10 * N
    with open(path, "wb") as f:
        np.savez(f, **arrays)
    with pytest.raises(ValueError, match="posting"):
        SparseIndex.load(path)
    with LmdbStore(home / STORE_DIR) as store:
        assert any("e13.sparse.npz" in p for p in saved_set_problems(home / INDEX_DIR, store))
        _assert_serves_every_memory(IndexSet.open(home / INDEX_DIR, store), store)


def test_a_readable_file_of_another_index_is_not_taken_for_the_saved_one(home, tmp_path_factory):
    """A whole, valid file of a different size (a file copied from another data directory, a stale sibling):
    its checksum tells it apart (and, behind that, the manifest's entry counts)."""
    other = tmp_path_factory.mktemp("other")
    rng = np.random.default_rng(4)
    with LmdbStore(other / STORE_DIR) as store:
        for _ in range(5):
            store.put(record(), fingerprint(rng, tokens=2, e6_nnz=40, e13_nnz=15))
        IndexSet.open(other / INDEX_DIR, store)
    shutil.copy(other / INDEX_DIR / "e09.binary.npz", home / INDEX_DIR / "e09.binary.npz")
    with LmdbStore(home / STORE_DIR) as store:
        assert saved_set_problems(home / INDEX_DIR, store) == [
            "e09.binary.npz: checksum mismatch, the file changed after it was saved"]
        _assert_serves_every_memory(IndexSet.open(home / INDEX_DIR, store), store)


@pytest.mark.parametrize("name", ["e13.sparse.npz", "e09.binary.npz", "e01.hnsw"])
def test_doctor_flags_a_damaged_index_and_passes_once_it_is_rebuilt(home, name):
    assert check_indexes(home).ok
    _truncate(home / INDEX_DIR / name, 0.5)
    check = check_indexes(home)  # before issue 12.4 doctor had no index check: "all required checks passed"
    assert not check.ok and check.required
    assert name in check.detail and "reindex" in check.fix
    with LmdbStore(home / STORE_DIR) as store:
        IndexSet.open(home / INDEX_DIR, store)
    assert check_indexes(home).ok


def test_doctor_reads_only(home):
    _truncate(home / INDEX_DIR / "e13.sparse.npz", 0.5)
    before = {p.name: p.stat().st_size for p in (home / INDEX_DIR).iterdir()}
    assert not check_indexes(home).ok
    assert {p.name: p.stat().st_size for p in (home / INDEX_DIR).iterdir()} == before


def test_doctor_on_a_fresh_directory(tmp_path):
    check = check_indexes(tmp_path / "never-used")
    assert check.ok and "none saved yet" in check.detail


def test_doctor_survives_a_file_where_the_data_directory_should_be(tmp_path):
    (tmp_path / "file").write_text("x")
    check = check_indexes(tmp_path / "file")  # the data directory check is the one that reports this
    assert check.ok and "none saved yet" in check.detail
