"""contextgraph.background: a thread whose work nobody waits for lowers its own CPU priority (Linux nice, per
thread) by `concurrency.background_nice` steps, and only its own; the after-answer worker and the store model's
refits are such threads; a lowered thread never starts the parallel-read pool (its threads would inherit the
lowered priority and then serve requests at it)."""

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
def test_the_after_answer_worker_and_a_background_refit_are_lowered():
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
    assert seen == {"after-answer": (_expected(before), True), "refit": (_expected(before), True)}


def test_a_background_thread_reads_alone():
    got = []
    background.start_thread(lambda: got.append(parallel_reads.get_many(None, None, [b"k"] * 64)),  # type: ignore[arg-type]
                            name="test-background-read").join(10)
    assert got == [None]  # None: the caller reads them itself, in its own transaction
