"""The engine history survives a restart: saved with the engine state into a real LMDB store, loaded when the
store opens again; and a store saved before the history existed opens with an empty one."""

import pytest

from contextgraph.app import build_app
from contextgraph.services.engine.history import DOCUMENT

pytestmark = pytest.mark.anyio
WHY = "history persistence test memory"


async def _call(app, name, arguments):
    return (await app.dispatcher.call(name, arguments, app.tool_context("history-test"))).payload


async def test_history_round_trips_through_the_store(tmp_path, make_settings):
    settings = make_settings(tmp_path / "home")
    app = build_app(settings)
    try:
        await _call(app, "store_memory", {"content": "The deploy failed on a migration timeout.", "rationale": WHY})
        await _call(app, "search_graph", {"query": "deploy"})
        try:
            await _call(app, "search_graph", {"query": "deploy", "top_k": 0})
        except Exception:
            pass  # a refused search counts as an error of its kind
        before = app.services.history.view()
        assert before["calls"]["store"]["total"] == 1
        assert before["calls"]["search"] == {**before["calls"]["search"], "total": 2, "errors": 1}
        assert before["sample_count"] >= 1
    finally:
        app.close()
    again = build_app(settings)
    try:
        await again.services.storage.ready()
        after = again.services.history
        assert list(after.samples) == [tuple(s) for s in zip(*before["samples"].values())]
        assert after.counts == {"store": 1, "search": 2} and after.errors == {"store": 0, "search": 1}
        assert [round(ms, 3) for _, ms in after.latencies["search"]] == [
            round(ms, 3) for _, ms in app.services.history.latencies["search"]]
    finally:
        again.close()


async def test_a_store_without_a_saved_history_opens_with_an_empty_one(tmp_path, make_settings):
    settings = make_settings(tmp_path / "home")
    app = build_app(settings)
    try:
        await _call(app, "store_memory", {"content": "one memory", "rationale": WHY})
        await app.services.storage.writer.submit(lambda: None)  # jobs run in order: the periodic save has run
        store = app.services.storage.store
        store.put_document(DOCUMENT, {})  # as if saved by a version without the history
        app.services.history.dirty = False
    finally:
        app.close()
    again = build_app(settings)
    try:
        await again.services.storage.ready()
        assert not again.services.history.samples and again.services.history.counts == {"store": 0, "search": 0}
    finally:
        again.close()


async def test_the_dispatcher_tells_its_observers_and_survives_a_broken_one(tmp_path, make_settings):
    app = build_app(make_settings(tmp_path / "home"))
    seen = []

    def broken(tool, latency_ms, ok, pulse):
        raise RuntimeError("an observer's bug")

    app.dispatcher.observers[:0] = [broken, lambda *call: seen.append(call)]
    try:
        out = await _call(app, "tool_active", {})
        assert out["count"] >= 1  # answered despite the broken observer
        try:
            await _call(app, "tool_find", {"query": "x", "limit": 999})
        except Exception:
            pass
        assert [(tool, ok) for tool, _ms, ok, _pulse in seen] == [("tool_active", True), ("tool_find", False)]
        assert all(ms >= 0 and set(pulse) >= {"entropy", "coherence"} for _t, ms, _ok, pulse in seen)
    finally:
        app.close()
