"""Several processes on one store keep one engine state (services/runtime/engine_turn.py): a periodic save that
finds another process's save since its own adopts the stored state instead of overwriting it, and a process
whose stamp is still the stored one saves as before. The other process is simulated by writing its documents
into the store, as its writer would."""

import pytest

from contextgraph.services.engine import engine_state
from contextgraph.services.runtime.engine_turn import DOCUMENT as STAMP

pytestmark = pytest.mark.anyio


async def _periodic_save(storage) -> None:
    await storage.writer.submit(storage._save_engine_now, storage.store, True)


async def test_a_save_by_another_process_is_adopted_not_overwritten(app):
    storage = app.services.storage
    await storage.ready()
    cognition = app.services.cognition
    await _periodic_save(storage)  # ours: the stored stamp is now this process's
    mine = storage.store.get_document(STAMP)
    assert mine is not None and storage.turn.known == mine

    theirs = cognition.to_doc()
    theirs["operations"] = cognition.operations + 41  # another worker served 41 more operations
    storage.store.put_document(engine_state.DOCUMENT, {"cognition": theirs, "workspace": {}})
    storage.store.put_document(STAMP, {"by": "another-process", "saves": 7, "at": 0.0})
    cognition.operations += 1  # and this one served one since its own save

    await _periodic_save(storage)
    assert cognition.operations == theirs["operations"]  # the stored lineage, not ours
    assert storage.store.get_document(STAMP)["by"] == "another-process"  # nothing of ours written over it
    assert storage.turn.adopted == 1

    cognition.operations += 1
    await _periodic_save(storage)  # our turn again: no one saved since we adopted
    assert storage.store.get_document(STAMP)["by"] != "another-process"
    assert storage.store.get_document(engine_state.DOCUMENT)["cognition"]["operations"] == theirs["operations"] + 1
