"""A search writes nothing (services/runtime/access_counts.py): its access counts are gathered in memory and
written in one batch when one is due, and on close; the counts are the same as one write per search made."""

import pytest

pytestmark = pytest.mark.anyio
WHY = "facts the team asked to keep"


async def test_searches_gather_their_accesses_and_close_writes_them_in_one_batch(app, call):
    ids = [(await call("store_memory", {"content": text, "rationale": WHY})).payload["id"] for text in (
        "The staging database is rebuilt every Sunday night.",
        "Release notes are written by the on-call engineer.")]
    storage = app.services.storage
    store = storage.store
    writes = []
    real_touch = store.touch
    store.touch = lambda seqs, now=None: (writes.append(list(seqs)), real_touch(seqs, now))  # type: ignore[method-assign]
    storage.accesses.interval = 3600.0  # no batch due during the searches
    found = []
    for _ in range(3):
        payload = (await call("search_graph", {"query": "when is staging rebuilt", "top_k": 2})).payload
        found += [hit["id"] for hit in payload["results"]]
    assert writes == []  # nothing written by any search
    counts_before = {mid: store.get(mid).access_count for mid in ids}
    storage.close()
    assert len(writes) == 1  # one transaction for every search's accesses
    storage.open()
    for mid in ids:
        assert storage.store.get(mid).access_count == counts_before[mid] + found.count(mid)


async def test_a_due_batch_is_written_through_the_writer_not_by_the_search(app, call):
    await call("store_memory", {"content": "The staging database is rebuilt every Sunday night.", "rationale": WHY})
    storage = app.services.storage
    storage.accesses.interval = 0.0  # every search makes a batch due
    await call("search_graph", {"query": "staging rebuilt", "top_k": 1})
    await storage.writer.submit(lambda: None)  # what the writer had queued has run
    assert storage.accesses.flushes == 1


@pytest.fixture
def pg_app(tmp_path, make_settings, postgres_url):
    from contextgraph.app import build_app

    app = build_app(make_settings(tmp_path / "pg-home", CONTEXTGRAPH_STORE_URL=postgres_url))
    yield app
    app.close()


async def test_a_search_on_postgresql_writes_nothing_so_a_read_replica_could_answer_it(pg_app):
    import time

    async def call(name, arguments):
        return await pg_app.dispatcher.call(name, arguments, pg_app.tool_context("test-session"))

    await call("store_memory", {"content": "The staging database is rebuilt every Sunday night.", "rationale": WHY})
    storage = pg_app.services.storage
    await storage.settled()
    store = storage.store
    writes = []
    real_write = store._write
    store._write = lambda fn: (writes.append(fn), real_write(fn))[1]  # type: ignore[method-assign]
    storage.accesses.interval = 3600.0
    storage._engine_saved_at = time.monotonic() + 3600  # the engine's periodic save is not the search's
    for _ in range(3):
        assert (await call("search_graph", {"query": "when is staging rebuilt", "top_k": 1})).payload["results"]
    await storage.settled()
    await storage.writer.submit(lambda: None)
    assert writes == []
