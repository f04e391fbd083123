"""Several servers, one database (SPEC D18): two `contextgraph serve` processes (stdio, each its own data
directory) on one PostgreSQL database store, merge and forget at the same time; nothing is lost, each sees the
other's writes on its next search, and the store is consistent. Then the CLI around it: `contextgraph migrate`
copies an LMDB data directory into a database a server then answers from, and `contextgraph doctor` checks it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from contextgraph.storage.postgres.store import PgStore

SCRIPT = Path(sys.executable).parent / "contextgraph"
WHY = "curating the project memory"
PAIRS = {  # near-duplicates each process merges, and a memory each forgets, stored before both start
    "a": ("The deploy failed because the database migration timed out after 30 seconds.",
          "The deploy failed since the database migration hit its 30 second timeout.",
          "The office plants need watering every Tuesday."),
    "b": ("Run pytest -x to stop the test run at the first failing test.",
          "pytest -x stops the test run at the first failure.",
          "The cafeteria serves soup on Fridays."),
}
TOPICS = {"a": "green sea turtles nesting on the beach", "b": "red pandas climbing bamboo in the zoo"}
N_STORES = 6


class StdioServer:
    """One `contextgraph serve` process spoken to over stdin/stdout (newline-delimited JSON-RPC)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([str(SCRIPT), "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, env=env)
        self.next_id = 0
        self.send({"jsonrpc": "2.0", "id": self._id(), "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
        self.receive(1)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _id(self) -> int:
        self.next_id += 1
        return self.next_id

    def send(self, message: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def send_call(self, name: str, arguments: dict) -> int:
        rid = self._id()
        self.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name,
                                                                                   "arguments": arguments}})
        return rid

    def receive(self, n: int) -> dict[int, dict]:
        """The next n responses by id (notifications skipped)."""
        assert self.proc.stdout is not None
        out: dict[int, dict] = {}
        while len(out) < n:
            line = self.proc.stdout.readline()
            assert line, "the server exited"
            message = json.loads(line)
            if "id" in message:
                out[message["id"]] = message
        return out

    def call(self, name: str, arguments: dict) -> dict:
        rid = self.send_call(name, arguments)
        response = self.receive(1)[rid]
        assert "result" in response and not response["result"].get("isError"), response
        return response["result"]["structuredContent"]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=120)


@pytest.fixture
def env_for(tmp_path, settings, postgres_url):
    def make(name: str) -> dict[str, str]:
        return {**os.environ, "CONTEXTGRAPH_HOME": str(tmp_path / name), "CONTEXTGRAPH_STORE_URL": postgres_url,
                "CONTEXTGRAPH_MODEL_CACHE": str(settings.models_dir), "CONTEXTGRAPH_LOG_LEVEL": "error",
                "CONTEXTGRAPH_AUTO_DREAM": "0"}

    return make


def _store(content: str) -> dict:
    return {"content": content, "rationale": WHY}


def test_two_servers_on_one_database_lose_nothing(env_for, postgres_url):
    servers = {name: StdioServer(env_for(name)) for name in ("a", "b")}
    try:
        made = {name: [servers[name].call("store_memory", _store(text))["id"] for text in PAIRS[name]]
                for name in servers}
        # both at once: each sends all its stores, a merge of its near-duplicates and a forget, then reads
        sent = {name: [servers[name].send_call("store_memory", _store(f"{TOPICS[name]}, note {i}"))
                       for i in range(N_STORES)]
                + [servers[name].send_call("merge_concepts", {"source_node_ids": made[name][:2],
                                                              "target_name": f"{name} merged", "rationale": WHY}),
                   servers[name].send_call("forget_concept", {"node_id": made[name][2], "reason": "obsolete",
                                                              "rationale": WHY})]
                for name in servers}
        answers = {name: servers[name].receive(len(ids)) for name, ids in sent.items()}
        for name, ids in sent.items():
            results = [answers[name][rid]["result"] for rid in ids]
            assert not any(r.get("isError") for r in results), results
            assert results[-2]["structuredContent"]["merged"] is True
        stored = {name: [answers[name][rid]["result"]["structuredContent"]["id"] for rid in ids[:N_STORES]]
                  for name, ids in sent.items()}
        # each sees the other's writes on its next search
        for name, other in (("a", "b"), ("b", "a")):
            found = servers[name].call("search_graph", {"query": TOPICS[other], "top_k": 10})
            assert set(stored[other]) <= {r["id"] for r in found["results"]}
    finally:
        for server in servers.values():
            server.close()
    with PgStore(postgres_url) as pg:
        live = {r.id for r, _ in pg.scan(spaces=[1])}
        # 6 before + 12 stores + 2 merged − 4 merged away − 2 forgotten
        assert pg.count() == 3 * 2 + 2 * N_STORES + 2 - 4 - 2
        assert set(stored["a"]) | set(stored["b"]) <= live
        assert not {made["a"][2], made["b"][2]} & live
        assert len(pg.graph_read(lambda g: list(g.tombstones()))) == 2 + 4  # the forgets and the merged sources
        seqs = [e.seq for e in pg.oplog_since(0)]
        assert seqs == list(range(1, len(seqs) + 1))  # one gapless log, whoever wrote
        assert pg.check() == []


def test_migrate_then_serve_and_doctor(tmp_path, settings, env_for, postgres_url):
    lmdb_home = tmp_path / "lmdb-home"
    lmdb_env = {**env_for("unused"), "CONTEXTGRAPH_HOME": str(lmdb_home)}
    del lmdb_env["CONTEXTGRAPH_STORE_URL"]
    server = StdioServer(lmdb_env)
    try:
        first = server.call("store_memory", _store(TOPICS["a"]))["id"]
        server.call("store_memory", _store(TOPICS["b"]))
    finally:
        server.close()
    out = subprocess.run([str(SCRIPT), "migrate", "--from", f"lmdb://{lmdb_home}", "--to", postgres_url],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "memories 2" in out.stdout and "2/2" not in out.stdout and "migrate" in out.stderr
    again = subprocess.run([str(SCRIPT), "migrate", "--from", str(lmdb_home), "--to", postgres_url],
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr  # a finished migration repeated changes nothing
    server = StdioServer(env_for("pg-home"))
    try:
        found = server.call("search_graph", {"query": "sea turtles", "top_k": 3})
        assert found["results"][0]["id"] == first
    finally:
        server.close()
    doctor = subprocess.run([str(SCRIPT), "doctor", "--home", str(tmp_path / "pg-home"), "--store-url", postgres_url],
                            capture_output=True, text=True, timeout=120)
    assert "PostgreSQL 18" in doctor.stdout and "pgvector: 0.8" in doctor.stdout
    assert "5 of 5 searched vector tables have a valid HNSW index" in doctor.stdout
    assert "2 memories, consistent" in doctor.stdout and "password" not in doctor.stdout
    assert f"{tmp_path / 'pg-home' / 'indexes'} loads" in doctor.stdout  # the in-process indexes the server built
    bad = subprocess.run([str(SCRIPT), "doctor", "--store-url", "postgresql://nobody@/nowhere?host=/nonexistent"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1 and "cannot connect" in bad.stdout
