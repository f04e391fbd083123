"""D24 (docs/engine.md#after-the-answer): store_memory and search_graph answer before their cognitive work (the
UTL, the engine's record, the listeners) runs; the store is durable before the answer all the same; the next
pulse carries the work; close runs what is queued. A listener held on an Event shows what the caller waited for:
no timings."""

import threading

import pytest

from contextgraph.storage.base import MemoryRecord

pytestmark = pytest.mark.anyio
WHY = "keeping the project memory honest"
HELD_S = 30.0  # how long a held listener waits at most: only on the code this replaces, which waits for it


class Held:
    """A listener that does not return until released, and says what it heard."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.heard: list[str] = []

    def after_store(self, record: MemoryRecord, _fingerprint, _utl) -> None:
        self.release.wait(HELD_S)
        self.heard.append(record.id)

    def after_results(self, query: str, _retrieval) -> None:
        self.release.wait(HELD_S)
        self.heard.append(query)


async def test_store_memory_answers_durably_before_its_cognitive_work(app, call):
    held = Held()
    app.services.memory.listeners.after_store.append(held.after_store)
    count = app.services.cognition.memory_count
    out = (await call("store_memory", {"content": "The deploy failed: the migration timed out.", "rationale": WHY}))
    memory_id = out.payload["id"]
    assert held.heard == []  # answered while its listener is still held
    record = app.services.storage.store.get(memory_id)  # and committed before the answer
    assert record is not None and record.content.startswith("The deploy failed")
    held.release.set()
    await app.services.memory.settled()
    assert held.heard == [memory_id]
    assert app.services.cognition.memory_count == count + 1  # the engine recorded its UTL after the answer


async def test_search_graph_answers_before_its_listeners_and_the_next_tool_sees_them(app, call):
    await call("store_memory", {"content": "Parquet exports land in the analytics bucket nightly.", "rationale": WHY})
    held = Held()
    app.services.memory.listeners.after_results.append(held.after_results)
    out = await call("search_graph", {"query": "where do parquet exports go", "top_k": 3})
    assert out.payload["count"] >= 1 and held.heard == []
    held.release.set()
    await call("get_memetic_status", {})  # any other tool waits for the work answered before it
    assert held.heard == ["where do parquet exports go"]


async def test_close_runs_the_work_queued_after_answers(app, call):
    held = Held()
    app.services.memory.listeners.after_store.append(held.after_store)
    out = await call("store_memory", {"content": "Canary releases send five percent of traffic first.",
                                      "rationale": WHY})
    assert held.heard == []
    held.release.set()
    app.close()  # a clean exit: nothing queued is lost
    assert held.heard == [out.payload["id"]]


async def test_the_utl_after_the_answer_is_measured_against_the_store_before_the_commit(app, call):
    """The deferred UTL leaves the memory itself out: storing a text twice (two sessions, so not a retry) finds
    the first as the nearest, not itself, and the first finds nothing (an empty store)."""
    seen = []
    app.services.memory.listeners.after_store.append(lambda r, _fp, utl: seen.append(sorted(utl.neighbourhood)))
    text = "Kuramoto oscillators synchronise once the coupling exceeds a critical value."
    first = (await call("store_memory", {"content": text, "rationale": WHY}, session="a")).payload
    second = (await call("store_memory", {"content": text, "rationale": WHY}, session="b")).payload
    await app.services.memory.settled()
    store = app.services.storage.store
    assert seen == [[], [store.get(first["id"]).seq]], second
