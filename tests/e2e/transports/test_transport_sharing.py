"""Sharing: 20 concurrent clients over TCP, Streamable HTTP and legacy SSE, all served by one App, store with the
real memory tools and search; no write is lost and every client sees every other client's memories."""

import anyio
import pytest
from mcp import Client
from mcp.client.sse import sse_client
from transport_helpers import http_base, serving, tcp_transport

pytestmark = pytest.mark.anyio
CLIENTS = 20
COLOURS = ["vermilion", "cobalt", "ochre", "viridian", "magenta", "saffron", "teal", "umber", "indigo", "coral"]


def memory_of(i: int) -> str:
    return (f"Client {i:02d} noted that build agent {i:02d} uses the {COLOURS[i % len(COLOURS)]} cache bucket "
            f"for nightly artifacts.")


async def test_twenty_concurrent_clients_lose_no_write(net_app):
    stored: dict[int, str] = {}
    all_stored = anyio.Event()
    seen: dict[int, set[str]] = {}

    async with serving(net_app) as where:
        base = http_base(where)

        def transport(i: int):
            kind = i % 3
            if kind == 0:
                return tcp_transport(*where.tcp), "legacy"
            if kind == 1:
                return base + "/mcp", "legacy" if i % 2 else "2026-07-28"
            return sse_client(base + "/sse"), "legacy"

        async def client(i: int) -> None:
            target, mode = transport(i)
            async with Client(target, mode=mode) as session:
                result = await session.call_tool("store_memory", {
                    "content": memory_of(i), "rationale": "which cache bucket each build agent uses",
                    "tags": ["build", f"agent-{i:02d}"]})
                stored[i] = result.structured_content["id"]
                if len(stored) == CLIENTS:
                    all_stored.set()
                await all_stored.wait()
                found = await session.call_tool("search_graph", {"query": "which cache bucket does a build agent use",
                                                                 "top_k": 100})
                seen[i] = {r["id"] for r in found.structured_content["results"]}

        with anyio.fail_after(120):  # the first store waits for the model to load
            async with anyio.create_task_group() as tg:
                for i in range(CLIENTS):
                    tg.start_soon(client, i)

    ids = set(stored.values())
    assert len(ids) == CLIENTS
    assert all(seen[i] == ids for i in range(CLIENTS)), {i: len(ids - seen[i]) for i in range(CLIENTS)}
    assert net_app.services.storage.store.count() == CLIENTS
