"""Issue 12.4 as a user met it: a server's saved index files cut in half (`truncate -s 50%`), then a restart.
Before, every start failed to open the store (store_memory -32603, search_graph -32002 blaming the model) and
`contextgraph doctor` said all was well. Now the start rebuilds them from the store and the memories stay
findable; doctor names the damaged files until then. Real MCP client sessions, real CLI, real model."""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import Client

from contextgraph.app import build_app
from contextgraph.server import build_server
from contextgraph.storage.maintenance import INDEX_DIR

pytestmark = pytest.mark.anyio
SCRIPT = Path(sys.executable).parent / "contextgraph"
WHY = "remembering how the deploy went"
TEXTS = ["The deploy failed because the database migration timed out after 30 seconds.",
         "Kuramoto oscillators synchronise once the coupling exceeds a critical value.",
         "The login endpoint started issuing JWT tokens on Monday."]
# The files of the issue. (A cut hnsw graph was already rebuilt before: hnswlib's RuntimeError was one of the
# errors load() caught, and it is loaded first; the storage integration tests cover every kind of file.)
CUT = ["e13.sparse.npz", "e06.sparse.npz", "e09.binary.npz"]


@asynccontextmanager
async def process(settings):
    """One server process on the data directory: an app, a client session, and a clean close at the end."""
    app = build_app(settings)
    try:
        async with Client(build_server(app), mode="legacy") as client:
            yield client
    finally:
        app.close()


async def call(client, name, args) -> dict:
    result = await client.call_tool(name, args)
    assert not result.is_error, result.content
    return result.structured_content


def doctor_line(home: Path) -> str:
    out = subprocess.run([str(SCRIPT), "doctor", "--home", str(home)], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "CONTEXTGRAPH_HOME": str(home)})
    return next(line for line in out.stdout.splitlines() if "] indexes:" in line)


async def test_half_truncated_index_files_are_rebuilt_on_the_next_start(settings):
    async with process(settings) as client:
        ids = [(await call(client, "store_memory", {"content": text, "rationale": WHY}))["id"] for text in TEXTS]
    indexes = settings.home / INDEX_DIR
    assert doctor_line(settings.home).startswith("[      ok]")
    for name in CUT:
        os.truncate(indexes / name, (indexes / name).stat().st_size // 2)

    line = doctor_line(settings.home)  # before issue 12.4: no index check at all, "all required checks passed"
    assert line.startswith("[ MISSING]") and all(name in line for name in CUT), line

    async with process(settings) as client:
        stored = await call(client, "store_memory", {"content": "The rollback restored the previous schema.",
                                                     "rationale": WHY})
        assert stored["stored"]
        found = await call(client, "search_graph", {"query": "why did the deploy fail"})
        assert found["results"][0]["id"] == ids[0]
        assert stored["id"] in [r["id"] for r in (await call(client, "search_graph", {"query": "rollback schema"}))
                                ["results"]]
    # the rebuilt set was saved whole: the next start loads it, and doctor is satisfied
    assert doctor_line(settings.home).startswith("[      ok]")
    async with process(settings) as client:
        found = await call(client, "search_graph", {"query": "Kuramoto coupling"})
        assert found["results"][0]["id"] == ids[1]
