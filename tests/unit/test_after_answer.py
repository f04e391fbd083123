"""services.runtime.after_answer: in order, bounded (a full queue makes its caller wait for its own piece rather
than drop it), failures logged and never raised, drained by close. Events, not timings."""

import threading

import anyio
import anyio.lowlevel
import pytest

from contextgraph.services.runtime.after_answer import AfterAnswer

pytestmark = pytest.mark.anyio


async def test_a_full_queue_makes_the_caller_wait_for_its_own_piece_in_order():
    queue, gate, order, returned = AfterAnswer(cap=1), threading.Event(), [], []
    await queue.run(lambda: (gate.wait(30), order.append(1)), "first")
    assert order == []  # the first caller was answered while its piece waits

    async def second() -> None:
        await queue.run(lambda: order.append(2), "second")  # the queue is full: it waits for its piece
        returned.append(list(order))

    async with anyio.create_task_group() as tg:
        tg.start_soon(second)
        await anyio.lowlevel.checkpoint()
        gate.set()
    assert returned == [[1, 2]]
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
