"""The single writer: order, results and errors back to asyncio, drain on close."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest
from storage_fakes import fingerprint, record

from contextgraph.errors import StorageError
from contextgraph.storage.lmdb_store import LmdbStore
from contextgraph.storage.writer import Writer


def test_jobs_run_in_order_on_one_thread():
    seen: list[tuple[int, str]] = []

    async def main(writer):
        jobs = [writer.submit(lambda i=i: seen.append((i, threading.current_thread().name)) or i)
                for i in range(50)]
        return await asyncio.gather(*jobs)

    with Writer() as writer:
        assert asyncio.run(main(writer)) == list(range(50))
    assert [i for i, _ in seen] == list(range(50))
    assert {name for _, name in seen} == {"contextgraph-writer"}


def test_errors_reach_the_caller_and_the_writer_lives_on():
    def boom():
        raise ValueError("no")

    async def main(writer):
        with pytest.raises(ValueError):
            await writer.submit(boom)
        return await writer.submit(lambda: 42)

    with Writer() as writer:
        assert asyncio.run(main(writer)) == 42


def test_close_drains_the_queue_then_refuses_work():
    gate = threading.Event()
    ran: list[int] = []
    writer = Writer()
    first = writer.submit_future(gate.wait)
    rest = [writer.submit_future(ran.append, i) for i in range(5)]
    gate.set()
    writer.close()
    assert first.result() is True and all(f.done() for f in rest) and ran == list(range(5))
    with pytest.raises(StorageError):
        writer.submit_future(print)


def test_store_puts_through_the_writer(tmp_path):
    rng = np.random.default_rng(3)

    async def main(writer, store):
        return await asyncio.gather(*(writer.submit(store.put, record(), fingerprint(rng, tokens=4))
                                      for _ in range(20)))

    with LmdbStore(tmp_path / "db") as store, Writer() as writer:
        stored = asyncio.run(main(writer, store))
    assert [r.seq for r in stored] == list(range(1, 21))
    assert [r.session_position for r in stored] == list(range(20))
