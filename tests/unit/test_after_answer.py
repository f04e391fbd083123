"""services.runtime.after_answer: in order, bounded (a caller that finds the queue full queues its piece and waits
for room, the oldest piece, never dropping one), failures logged and never raised, drained by close. Events, not
timings."""

import threading

import anyio
import anyio.lowlevel
import pytest

from contextgraph.services.runtime.after_answer import AfterAnswer

pytestmark = pytest.mark.anyio


async def test_a_full_queue_makes_the_caller_wait_for_room_and_keeps_every_piece_in_order():
    queue, order, returned = AfterAnswer(cap=2), [], []
    first, second = threading.Event(), threading.Event()
    await queue.run(lambda: (first.wait(30), order.append("a")), "a")
    await queue.run(lambda: (second.wait(30), order.append("b")), "b")
    assert order == []  # both callers were answered while their pieces wait

    async def third() -> None:
        await queue.run(lambda: order.append("c"), "c")  # full: waits for the oldest piece, not for its own
        returned.append(list(order))

    async with anyio.create_task_group() as tg:
        tg.start_soon(third)
        await anyio.lowlevel.checkpoint()
        assert returned == []  # still waiting: nothing has finished
        first.set()
    assert returned == [["a"]]  # room once "a" ran, while "b" (and so "c") still wait
    second.set()
    await queue.settled()
    assert order == ["a", "b", "c"]
    queue.close()


async def test_a_failure_is_logged_and_the_next_piece_still_runs():
    queue, ran = AfterAnswer(), []
    await queue.run(lambda: 1 / 0, "fails")
    await queue.run(lambda: ran.append("next"), "next")
    await queue.settled()
    assert ran == ["next"]
    queue.close()


def test_close_runs_what_is_queued_and_a_later_piece_starts_a_new_worker():
    queue, gate, ran = AfterAnswer(), threading.Event(), []

    async def queue_two() -> None:
        await queue.run(lambda: (gate.wait(30), ran.append(1)), "held")
        await queue.run(lambda: ran.append(2), "behind it")

    anyio.run(queue_two)
    gate.set()
    queue.close()
    assert ran == [1, 2]
    anyio.run(queue.run, lambda: ran.append(3), "after close")
    queue.drain()
    assert ran == [1, 2, 3]
    queue.close()
