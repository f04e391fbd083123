"""Issue 12.4 as a user met it: a server's saved index files cut in half (`truncate -s 50%`), then a restart.
Before, every start failed to open the store (store_memory -32603, search_graph -32002 blaming the model) and
`contextgraph doctor` said all was well. Now the start rebuilds them from the store and the memories stay
findable; doctor names the damaged files until then. Real MCP client sessions, real CLI, real model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import numpy as np
import pytest
from mcp import Client

from contextgraph.app import build_app
from contextgraph.server import build_server
from contextgraph.storage.maintenance import INDEX_DIR, STORE_DIR

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


def serve_lines(home: Path, calls: list[tuple[str, dict]]) -> tuple[int, dict, str]:
    """A real `contextgraph serve` over stdio in its own process (a signal death shows as its exit status, not
    as a dead pytest): the handshake, the calls, stdin closed. Returns (exit status, {id: response}, stderr)."""
    hello = {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "pytest", "version": "1"}}
    lines = [json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}),
             json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})]
    lines += [json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                          "params": {"name": name, "arguments": args}}) for i, (name, args) in enumerate(calls, 1)]
    proc = subprocess.run([str(SCRIPT), "serve"], input="\n".join(lines) + "\n", capture_output=True, text=True,
                          timeout=300, env={**os.environ, "CONTEXTGRAPH_HOME": str(home), "HF_HUB_OFFLINE": "1",
                                            "CONTEXTGRAPH_LOG_LEVEL": "warn"})
    responses = {r.get("id"): r for r in map(json.loads, proc.stdout.splitlines())}
    return proc.returncode, responses, proc.stderr


def garble(path: Path, rng: np.random.Generator) -> None:
    """8 runs of 64 random bytes past the header; the file keeps its size."""
    with open(path, "r+b") as f:
        for offset in rng.integers(64, path.stat().st_size - 64, size=8):
            f.seek(int(offset))
            f.write(rng.integers(0, 256, size=64, dtype=np.uint8).tobytes())


async def test_garbled_hnsw_graphs_are_rebuilt_by_the_next_server(settings):
    """8 runs of 64 random bytes inside e05.hnsw and e07.hnsw (the file sizes unchanged): hnswlib loaded them and
    the server died by SIGSEGV on every start, while doctor said the indexes load."""
    async with process(settings) as client:
        ids = [(await call(client, "store_memory", {"content": text, "rationale": WHY}))["id"] for text in TEXTS]
    rng = np.random.default_rng(11)
    for name in ("e05.hnsw", "e07.hnsw"):
        garble(settings.home / INDEX_DIR / name, rng)
    line = doctor_line(settings.home)
    assert line.startswith("[ MISSING]") and "e05.hnsw" in line and "e07.hnsw" in line, line

    status, responses, stderr = serve_lines(settings.home, [("search_graph", {"query": "why did the deploy fail"})])
    assert status == 0, f"exit {status} (SIGSEGV is -11): {stderr[-2000:]}"
    found = responses[1]["result"]["structuredContent"]["results"]
    assert found[0]["id"] == ids[0]
    assert "rebuilding" in stderr and "checksum mismatch" in stderr  # the log says why the start was slow
    assert doctor_line(settings.home).startswith("[      ok]")


async def test_a_truncated_store_answers_a_storage_error_instead_of_killing_the_server(settings):
    """data.mdb cut in half: the server died by SIGBUS on its first call, with no log line."""
    async with process(settings) as client:
        await call(client, "store_memory", {"content": TEXTS[0], "rationale": WHY})
    data_file = settings.home / STORE_DIR / "data.mdb"
    os.truncate(data_file, data_file.stat().st_size // 2)

    status, responses, stderr = serve_lines(settings.home, [
        ("store_memory", {"content": TEXTS[1], "rationale": WHY}),
        ("search_graph", {"query": "deploy"}),
        ("tool_find", {"query": "store a memory", "limit": 1}),
    ])
    assert status == 0, f"exit {status} (SIGBUS is -7): {stderr[-2000:]}"
    for refused in (responses[1], responses[2]):
        error = refused.get("error") or {}
        assert error.get("code") == -32001, refused  # STORAGE_ERROR
        assert "data.mdb is truncated" in error["message"], error
        assert "backup" in error["message"] and "Traceback" not in json.dumps(refused)
    assert "result" in responses[3]  # what needs no store still works
