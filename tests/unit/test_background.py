"""contextgraph.background: a thread whose work no caller waits for lowers its own CPU priority (Linux nice, per
thread) by `concurrency.background_nice` steps, and only its own; the store model's refits are such threads, the
after-answer worker is not (callers wait for its queue); a lowered thread never starts the parallel-read pool
(its threads would inherit the lowered priority and then serve requests at it), never waits on the indexes'
catch-up and never reopens a closed store."""

from __future__ import annotations

import os
import sys
import threading

import anyio
import pytest

from contextgraph import background
from contextgraph.constitution import constitution
from contextgraph.services.engine.store_model import RefitCache
from contextgraph.services.runtime.after_answer import AfterAnswer
from contextgraph.storage import parallel_reads

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice is Linux's")
STEPS = int(constitution().get("concurrency.background_nice"))


def _nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def _expected(before: int) -> int:
    return min(19, before + STEPS)


@linux_only
def test_a_started_background_thread_runs_lowered_and_the_caller_does_not():
    before, seen = _nice(), []
    background.start_thread(lambda tag: seen.append((tag, _nice(), background.in_background())), "ran",
                            name="test-background").join(10)
    assert seen == [("ran", _expected(before), True)]
    assert _nice() == before and not background.in_background()
    assert STEPS > 0  # the shipped constitution lowers them


@linux_only
def test_lowering_twice_lowers_once():
    before, seen = _nice(), []

    def twice() -> None:
        background.lower_this_thread()
        background.lower_this_thread()
        seen.append(_nice())

    thread = threading.Thread(target=twice)
    thread.start()
    thread.join(10)
    assert seen == [_expected(before)]


@linux_only
def test_a_background_refit_is_lowered_and_the_after_answer_worker_is_not():
    """Every tool but store_memory and search_graph waits for the after-answer queue: it runs at the requests'
    priority. A refit nobody waits for runs lowered."""
    before, seen = _nice(), {}
    queue = AfterAnswer()

    async def run() -> None:
        await queue.run(lambda: seen.setdefault("after-answer", (_nice(), background.in_background())), "probe")
        await queue.settled()

    anyio.run(run)
    queue.close()
    cache = RefitCache("probe")
    cache.get("k", 0, lambda stamp: True, lambda: "first")  # no model yet: fitted in the caller
    assert not background.in_background()
    cache.get("k", 1, lambda stamp: stamp != 1,
              lambda: seen.setdefault("refit", (_nice(), background.in_background())) and "second")
    cache.wait()
    assert seen == {"after-answer": (before, False), "refit": (_expected(before), True)}


def test_a_constitution_without_the_setting_leaves_the_priority_and_runs_the_work(monkeypatch):
    """An older constitution copy (CONTEXTGRAPH_CONSTITUTION) has no concurrency.background_nice: the thread runs
    its work at the requests' priority instead of failing before it (a refit that never ran would never run again)."""
    class Older:
        def get(self, dotted: str):
            raise KeyError(dotted)

    monkeypatch.setattr(background, "constitution", lambda: Older())
    before, seen = _nice(), []
    background.start_thread(lambda: seen.append((_nice(), background.in_background())), name="test-older").join(10)
    assert seen == [(before, True)]


def test_a_background_thread_reads_alone():
    got = []
    background.start_thread(lambda: got.append(parallel_reads.get_many(None, None, [b"k"] * 64)),  # type: ignore[arg-type]
                            name="test-background-read").join(10)
    assert got == [None]  # None: the caller reads them itself, in its own transaction


def test_a_background_thread_neither_catches_the_indexes_up_nor_reopens_a_closed_store(tmp_path):
    from contextgraph.errors import StorageError
    from contextgraph.storage.indexes import IndexSet

    class Counting(IndexSet):
        catch_ups = 0

        def catch_up(self, store=None):
            Counting.catch_ups += 1
            return 0

    indexes, handle, outcome = Counting(), _closed_handle(tmp_path), []

    def work() -> None:
        indexes.nearest_many({}, 5)
        try:
            handle.open()
        except StorageError as exc:
            outcome.append(exc.message)

    indexes.store = object()  # a store to catch up with: a request thread would
    background.start_thread(work, name="test-background-store").join(10)
    assert Counting.catch_ups == 0 and outcome == ["the store is closed"]
    indexes.nearest_many({}, 5)  # the caller's thread: a request
    assert Counting.catch_ups == 1


def _closed_handle(home):
    """StoreHandle.open's guard alone: a handle whose store is not open (the rest is never reached)."""
    import types

    from contextgraph.services.runtime.store_handle import StoreHandle

    state = types.SimpleNamespace(_lock=threading.Lock(), _store=None, home=home)
    return types.SimpleNamespace(open=lambda: StoreHandle.open(state))  # type: ignore[arg-type]
