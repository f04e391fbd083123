"""Concurrent calls through the real MCP client (one SDK session per caller, in memory) on real LMDB, indexes
and the ONNX transformer (issue 19, concurrency): searches fired at once answer what they answer one by one,
their queries embedded in shared batches; stores fired at once with searches all commit and are found after."""

import anyio
import pytest
from mcp import Client

from contextgraph.server import build_server

pytestmark = pytest.mark.anyio
RATIONALE = "worth keeping for the project"
MEMORIES = [
    "The deploy failed because the database migration timed out after 30 seconds.",
    "Run pytest -x to stop at the first failing test.",
    "def fibonacci(n):\n    return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)",
    "Kuramoto oscillators synchronise once the coupling exceeds a critical value.",
    "The team prefers squash merges so that main keeps one commit per feature.",
    "Nightly artifacts go to the cobalt cache bucket; build agents read from it.",
]
QUERIES = [  # (query, index of the memory it is about)
    ("why did the deploy fail", 0),
    ("how do I run the tests and stop early", 1),
    ("recursive function in python", 2),
    ("coupled oscillators synchronisation", 3),
    ("how do we merge pull requests", 4),
    ("where do nightly build artifacts go", 5),
    ("database migration timeout", 0),
    ("fibonacci numbers", 2),
]
NEW = [f"Service {name} writes its logs to the {colour} bucket every hour." for name, colour in
       [("alpha", "vermilion"), ("bravo", "ochre"), ("charlie", "viridian"), ("delta", "saffron"),
        ("echo", "umber"), ("foxtrot", "indigo"), ("golf", "coral"), ("hotel", "teal")]]


async def search(client, query):
    result = await client.call_tool("search_graph", {"query": query, "top_k": 3})
    assert not result.is_error, result
    return [r["id"] for r in result.structured_content["results"]]


async def test_concurrent_searches_and_stores_answer_as_serial_calls(app):
    perception = app.services.perception
    async with Client(build_server(app), mode="legacy") as first:
        ids = []
        for text in MEMORIES:
            stored = await first.call_tool("store_memory", {"content": text, "rationale": RATIONALE})
            ids.append(stored.structured_content["id"])
        serial = [await search(first, query) for query, _ in QUERIES]
    assert [found[0] for found in serial] == [ids[i] for _, i in QUERIES]

    async def at_once(calls) -> list:
        """Run every call on its own client session at once, while the forward limiter is held until all of them
        wait for an embedding: the first runs alone, the rest share one batch, whatever the machine's speed."""
        out: list = [None] * len(calls)
        before = perception.batcher.stats.batches
        held = True
        await perception.cpu.acquire()
        try:
            async with anyio.create_task_group() as tg:
                for i, call in enumerate(calls):
                    async def run(i=i, call=call) -> None:
                        async with Client(build_server(app), mode="legacy") as client:
                            out[i] = await call(client)
                    tg.start_soon(run)
                with anyio.fail_after(60):
                    while perception.batcher.waiting < len(calls) - 1:
                        await anyio.sleep(0.01)
                held = False
                perception.cpu.release()
        finally:
            if held:
                perception.cpu.release()
        assert perception.batcher.stats.batches - before == 2  # len(calls) embeddings in two forward batches
        return out

    # searches at once: the same answers as one by one
    concurrent = await at_once([lambda c, q=query: search(c, q) for query, _ in QUERIES])
    assert concurrent == serial

    # stores and searches at once: every store commits, every search answers, and all new memories are found
    async def store(client, text):
        result = await client.call_tool("store_memory", {"content": text, "rationale": RATIONALE,
                                                         "tags": ["logs"]})
        assert not result.is_error, result
        return result.structured_content["id"]

    mixed = await at_once([lambda c, t=text: store(c, t) for text in NEW] +
                          [lambda c, q=query: search(c, q) for query, _ in QUERIES])
    new_ids, answers = mixed[:len(NEW)], mixed[len(NEW):]
    assert len(set(new_ids)) == len(NEW) and app.services.storage.store.count() == len(MEMORIES) + len(NEW)
    assert [found[0] for found in answers] == [ids[i] for _, i in QUERIES]
    async with Client(build_server(app), mode="legacy") as last:
        for text, new_id in zip(NEW, new_ids):
            assert (await search(last, text))[0] == new_id


async def test_reads_do_not_wait_for_a_forward(app):
    """While a forward holds the embedding limiter (a long batch, as another call's would), tools that only read
    answer: causal exploration and navigation run under the read limiter, status tools under neither."""
    async with Client(build_server(app), mode="legacy") as client:
        ids = []
        for text in MEMORIES[:3]:
            stored = await client.call_tool("store_memory", {"content": text, "rationale": RATIONALE})
            ids.append(stored.structured_content["id"])
        perception = app.services.perception
        await perception.cpu.acquire()
        try:
            with anyio.fail_after(60):
                for name, arguments in [("omni_infer", {"source": ids[0], "target": ids[1], "direction": "forward"}),
                                        ("get_neighborhood", {"node_id": ids[0], "min_weight": 0}),
                                        ("get_recent_context", {}),
                                        ("get_memetic_status", {})]:
                    result = await client.call_tool(name, arguments)
                    assert not result.is_error, (name, result)
        finally:
            perception.cpu.release()
