"""The refit caches' deletion signal (services.store_model.DeletionCount) on a real LMDB store: deletions count,
puts, restores and rewrites do not (a rewrite takes a seq like a delete, which is how `last_seq() - count()` took
every E8 refresh for a deletion and refitted both models after nearly every store)."""

from __future__ import annotations

import numpy as np
from storage_fakes import fingerprint, record

from contextgraph.services.engine.store_model import DeletionCount
from contextgraph.storage.lmdb_store import LmdbStore


def test_only_deletions_count(tmp_path):
    rng = np.random.default_rng(2)
    with LmdbStore(tmp_path / "db") as store:
        stored = [store.put(record(), fingerprint(rng, tokens=2)) for _ in range(5)]
        deletions = DeletionCount()
        assert deletions(store) == 0  # counts from its first call
        old_signal = store.last_seq() - store.count()
        store.rewrite_spaces({stored[0].id: {8: rng.standard_normal(384).astype(np.float32)}})
        assert store.last_seq() - store.count() == old_signal + 1  # what the old signal took for a deletion
        store.put(record(), fingerprint(rng, tokens=2))
        assert deletions(store) == 0
        removed = store.graph_write(lambda g: g.delete_memory(stored[1].id))
        store.delete(stored[2].id)
        assert deletions(store) == 2
        store.graph_write(lambda g: g.restore_memory(removed[0], removed[1]))
        assert deletions(store) == 2
