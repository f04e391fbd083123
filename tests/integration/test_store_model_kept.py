"""A server that opens a store serves the store model the previous process fitted in full (services.engine.
store_model_file), instead of a quick fit in its first caller and a full one beside its first calls: the same
model, so the same ΔS/ΔC, with no fit at all while the store is as it was. A deletion since the saved fit makes
it stale at once: it serves while the background refit runs, as a running process's model would."""

from __future__ import annotations

import contextlib
import time

import pytest

from contextgraph import log
from contextgraph.app import build_services
from contextgraph.constitution import constitution
from contextgraph.embedders.pipeline import Draft
from contextgraph.services.engine import delta_sc as delta_sc_module
from contextgraph.services.engine.store_model_file import FILE_NAME
from contextgraph.services.memory.memory_payloads import NewMemory

pytestmark = pytest.mark.anyio
TEXTS = [
    "Release builds are signed on the CI runner with the key kept in the vault.",
    "The search page times out when the query has more than eight filters.",
    "Our retry policy doubles the wait after each failed call, up to a minute.",
    "The onboarding checklist asks new hires to pair on a bug in their first week.",
    "Disk usage on the log volume alerts at 85 percent.",
    "The mobile app caches the last hundred messages for offline reading.",
    "Tomato seedlings need hardening off for a week before planting out.",
    "The billing service reads exchange rates once an hour from the central bank feed.",
    "Feature flags older than ninety days are reviewed and removed.",
    "The staging database is refreshed from an anonymised production snapshot every Sunday.",
    "Code review asks for a test with every bug fix.",
    "Basil wilts when the night temperature drops below ten degrees.",
]
PROBE = "Why does the search page time out on queries with many filters?"


async def settled_model(services, probe):
    """The UTL once every refit the stores started has run: its model is then the last full fit, the one saved
    (a store's UTL after its answer may have started a refit that the first call only finds running)."""
    for _ in range(2):
        await utl_of(services, probe)
        services.storage.delta_sc.wait()
    return await utl_of(services, probe)


async def utl_of(services, probe):
    handle, pipeline = services.storage, await services.perception.pipeline()
    model = handle.delta_sc.model(handle.store, handle.indexes, {e.space: e for e in pipeline.embedders})
    utl = handle.delta_sc.compute(handle.store, handle.indexes, pipeline.embedders, probe,
                                  coherence_history=[0.5] * 4)
    return model, utl


@contextlib.contextmanager
def opened(settings):
    """The services of a process that opens the data directory (the store model as a new server finds it)."""
    services = build_services(settings, constitution(), log.LogRing(100))
    services.storage.open()
    try:
        yield services
    finally:
        services.close()


@pytest.fixture
def fits(monkeypatch):
    """Every store-model fit in this process, quick or full."""
    calls: list[bool] = []
    fit = delta_sc_module.DeltaScComputer._fit

    def counted(self, store, indexes, by_space, quick):
        calls.append(quick)
        return fit(self, store, indexes, by_space, quick)

    monkeypatch.setattr(delta_sc_module.DeltaScComputer, "_fit", counted)
    return calls


async def test_the_next_process_serves_the_saved_model_without_fitting(settings, fits):
    with opened(settings) as services:
        for text in TEXTS:
            await services.memory.store(NewMemory(text, "a memory for the kept-model test"))
        await services.memory.settled()
        pipeline = await services.perception.pipeline()
        (probe,) = pipeline.embed([Draft(PROBE, timestamp=time.time())])
        fitted, before = await settled_model(services, probe)
        assert not fitted.quick  # fitted on 11 or 12 memories: one more is less growth than a refit waits for
        assert (services.storage.store_home / FILE_NAME).is_file()

    fits.clear()
    with opened(settings) as services:
        adopted, after = await utl_of(services, probe)
        services.storage.delta_sc.wait()
        assert fits == []  # neither a quick fit in the caller nor a full one beside it
        assert adopted.count == fitted.count and adopted.loo_samples == fitted.loo_samples
        assert adopted.calibration == fitted.calibration
        assert after.delta_s == pytest.approx(before.delta_s, abs=1e-9)
        assert after.delta_c == pytest.approx(before.delta_c, abs=1e-9)
        assert after.learning_score == pytest.approx(before.learning_score, abs=1e-9)


async def test_a_deletion_since_the_saved_fit_refits_in_the_background(settings, fits):
    with opened(settings) as services:
        ids = [(await services.memory.store(NewMemory(t, "a memory for the kept-model test"))).record.id
               for t in TEXTS]
        await services.memory.settled()
        pipeline = await services.perception.pipeline()
        (probe,) = pipeline.embed([Draft(PROBE, timestamp=time.time())])
        kept, _ = await settled_model(services, probe)
        services.storage.store.graph_write(lambda g: g.delete_memory(ids[0]))

    fits.clear()
    with opened(settings) as services:
        served, _ = await utl_of(services, probe)
        assert fits in ([], [False])  # no fit in the caller: the saved model answers at once ...
        assert served.count == kept.count and served.calibration == kept.calibration
        services.storage.delta_sc.wait()
        refitted, _ = await utl_of(services, probe)
        assert fits == [False] and refitted.count == len(TEXTS) - 1  # ... while a full fit replaces it
