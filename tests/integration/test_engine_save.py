"""The engine state's saves over a real store (LMDB in a temp dir): the periodic save after an operation is queued
on the writer and not waited for, lands all the same, and a failure is logged, never raised to the caller; the
explicit save is durable when it returns; a part with its own save interval is written by the periodic save at
most that often, and by the explicit save always."""

import threading

import anyio
import pytest

pytestmark = pytest.mark.anyio


class GatedPart:
    """An engine part whose to_doc waits for `gate`: a save that takes as long as the test says."""

    def __init__(self, fail_once: bool = False) -> None:
        self.gate = threading.Event()
        self.dirty = True
        self.fail_once = fail_once
        self.saves = 0

    def to_doc(self) -> dict:
        self.gate.wait(10)
        if self.fail_once:
            self.fail_once = False
            raise RuntimeError("disk said no")
        self.dirty = False
        self.saves += 1
        return {"saves": self.saves}

    def load_doc(self, doc: dict) -> None:
        pass


async def test_the_periodic_save_is_not_waited_for_and_lands(app):
    storage = app.services.storage
    await storage.ready()
    part = storage.parts["gated"] = GatedPart()
    storage._engine_saved_at = 0.0  # due
    with anyio.fail_after(5):
        await storage.save_engine_after_commit()  # returns while the save waits on the writer
    assert storage.store.get_document("gated") is None
    await storage.save_engine_after_commit()  # not due again within the interval: nothing more is queued
    part.gate.set()
    await storage.save_engine()  # queued behind the periodic save, and waited for: both have run when it returns
    assert storage.store.get_document("gated") == {"saves": 1}  # the explicit save found the part clean


async def test_a_failed_periodic_save_is_logged_and_the_next_save_retries(app):
    storage = app.services.storage
    await storage.ready()
    part = storage.parts["gated"] = GatedPart(fail_once=True)
    part.gate.set()
    storage._engine_saved_at = 0.0
    await storage.save_engine_after_commit()  # the failure is not the caller's error
    await storage.save_engine()  # retries: the failed save left the part dirty
    assert storage.store.get_document("gated") == {"saves": 1}
    logged = app.services.log_ring.query("error", 10)
    assert any("saving the engine state failed" in entry["event"] for entry in logged)


async def test_a_part_with_its_own_interval_is_saved_that_often_by_the_periodic_save(app):
    storage = app.services.storage
    await storage.ready()
    part = storage.parts["gated"] = GatedPart()
    part.save_interval_seconds = 3600.0
    part.gate.set()

    async def periodic_save() -> None:
        storage._engine_saved_at = 0.0  # the engine save is due
        await storage.save_engine_after_commit()
        await storage.writer.submit(lambda: None)  # the writer runs jobs in order: the save has run

    await periodic_save()
    assert storage.store.get_document("gated") == {"saves": 1}  # never saved before: saved now
    part.dirty = True
    await periodic_save()
    assert storage.store.get_document("gated") == {"saves": 1}  # dirty, but its interval has not passed
    await storage.save_engine()
    assert storage.store.get_document("gated") == {"saves": 2}  # the explicit save writes it regardless
    assert app.services.thresholds.save_interval_seconds == 30.0  # ATC's state, from the constitution
