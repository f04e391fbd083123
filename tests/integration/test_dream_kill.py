"""A dream killed with SIGKILL loses no committed edge update and leaves no half edge.

The child opens a store the test filled (real fingerprints), starts a long NREM phase and prints the whole edge
table after each committed replay transaction, then holds the writer for a moment so that no later commit can
slip in before the parent's kill. The parent kills it after a few commits and reopens the store: the edges are
exactly the last printed ones, and the store's consistency walk is clean. Nothing waits on a timer: the parent
reads lines."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys

import anyio
import pytest

from contextgraph.services.memory.memory_payloads import NewMemory
from contextgraph.storage.base import Edge
from contextgraph.storage.lmdb_store import LmdbStore
from contextgraph.storage.maintenance import STORE_DIR

pytestmark = pytest.mark.anyio

CHILD = """
import asyncio, json, sys, time
from contextgraph.app import build_app
from contextgraph.config import Settings
from contextgraph.services.dreams import dream_phases

app = build_app(Settings.from_env({"CONTEXTGRAPH_HOME": sys.argv[1], "CONTEXTGRAPH_LOG_LEVEL": "error",
                                   "CONTEXTGRAPH_MODEL_CACHE": sys.argv[2]}), configure_logging=False)
real = dream_phases.commit_replay

def edge_table(store):
    def read(g):
        return {f"{e.source}|{e.target}|{e.type}": e.weight
                for r in g.recent(1000, None, None) for e in g.edges_out(r.id)}
    return store.graph_read(read)

def commit_and_report(store, updates, rule):   # runs on the writer thread
    out = real(store, updates, rule)
    print(json.dumps(edge_table(store)), flush=True)   # committed: LMDB returned from the transaction
    time.sleep(0.3)   # hold the writer: no further commit before the parent's kill
    return out

dream_phases.commit_replay = commit_and_report

async def main():
    dream = app.services.dream
    dream.nrem_seconds = 600.0
    dream.nrem["cues_per_minute"] = 60000
    await dream.trigger("nrem", force=True)
    await asyncio.sleep(600)

asyncio.run(main())
"""


def dream_then_kill(settings) -> list[dict]:
    """Run the child until it has printed three committed states, SIGKILL it, return what it printed."""
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(settings.home), str(settings.model_cache_dir)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "HF_HUB_OFFLINE": "1"})
    snapshots = []
    try:
        assert child.stdout is not None
        while len(snapshots) < 3:
            line = child.stdout.readline()
            if not line:
                raise AssertionError(f"the child ended early: {child.stderr.read() if child.stderr else ''}")
            snapshots.append(json.loads(line))
        child.send_signal(signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGKILL
    return snapshots


async def test_sigkill_during_a_dream_loses_no_committed_edge(app, settings):
    texts = ["The deploy failed because the database migration timed out.",
             "Database migrations time out when the lock table grows large.",
             "A large lock table makes every deploy slow.",
             "Slow deploys cause customer-facing downtime.",
             "Kuramoto oscillators synchronise once the coupling exceeds a critical value.",
             "Coupling above the critical value gives synchrony among oscillators."]
    ids = [(await app.services.memory.store(NewMemory(t, "the dream's crash test"))).record.id for t in texts]
    app.services.storage.store.graph_write(
        lambda g: [g.put_edge(Edge(a, b, "Causal", weight=0.5)) for a, b in itertools.pairwise(ids)])
    app.close()
    snapshots = await anyio.to_thread.run_sync(dream_then_kill, settings)
    store = LmdbStore(settings.home / STORE_DIR)
    try:
        assert store.check() == []  # no half edge: every edge's two index entries agree
        reopened = store.graph_read(lambda g: {f"{e.source}|{e.target}|{e.type}": e.weight
                                                for r in g.recent(1000, None, None) for e in g.edges_out(r.id)})
    finally:
        store.close()
    assert reopened == snapshots[-1]  # everything committed is there, exactly
    assert snapshots[-1] != snapshots[0] or any(v != 0.5 for v in snapshots[0].values())  # the dream did change
