"""Several processes on one data directory, and a writer killed with SIGKILL mid-burst.

Children are fresh interpreters (sys.executable) talking over pipes: "ready" when their store is open, one
line per acknowledged write. Nothing waits on a timer: readers poll in bounded loops."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from storage_fakes import fingerprint, record

from contextgraph.fingerprint import SPACES
from contextgraph.storage.indexes import INDEXED_SPACES, IndexSet
from contextgraph.storage.lmdb_store import LmdbStore

HERE = str(Path(__file__).parent)
DEADLINE_S = 30  # bound on every poll loop; the tests take well under a second each when healthy

_PRELUDE = """
import sys, json, time
sys.path.insert(0, sys.argv[1])
import numpy as np
from storage_fakes import fingerprint, record
from contextgraph.storage.lmdb_store import LmdbStore
from contextgraph.storage.indexes import IndexSet
store = LmdbStore(sys.argv[2])
"""

WRITER = _PRELUDE + """
n, seed = int(sys.argv[3]), int(sys.argv[4])
rng = np.random.default_rng(seed)
print("ready", flush=True)
sys.stdin.readline()
i = 0
while n < 0 or i < n:   # n < 0: until killed
    stored = store.put(record(session="child"), fingerprint(rng, tokens=8))
    print(stored.id, flush=True)   # acknowledged: put has returned, so the memory is durable
    i += 1
store.close()
"""

READER = _PRELUDE + """
n = int(sys.argv[3])
indexes = IndexSet(store)
print("ready", flush=True)
deadline = time.monotonic() + float(sys.argv[4])
polls = 0
while time.monotonic() < deadline and min(indexes.sizes().values() or [0]) < n:
    indexes.catch_up()
    polls += 1
last = store.last_seq()
probe = store.fingerprints([last], spaces=[1])[0] if last else None
top = indexes.search(1, probe[1], 1)[0][0] if probe else None
print(json.dumps({"sizes": indexes.sizes(), "applied": indexes.applied_seq, "last": last, "top": top,
                  "polls": polls}), flush=True)
"""


def _spawn(script: str, *args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", script, HERE, *map(str, args)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _ready(child: subprocess.Popen) -> None:
    line = child.stdout.readline()
    assert line == "ready\n", (line, child.stderr.read() if child.poll() is not None else "")


def test_parent_index_sees_a_child_writers_memories(tmp_path):
    n = 60
    with LmdbStore(tmp_path / "db") as store:
        indexes = IndexSet(store)
        child = _spawn(WRITER, tmp_path / "db", n, 1)
        try:
            _ready(child)
            child.stdin.write("go\n")
            child.stdin.flush()
            seen_partial = False
            deadline = time.monotonic() + DEADLINE_S
            while time.monotonic() < deadline:
                indexes.catch_up()
                size = indexes.sizes().get(1, 0)
                seen_partial |= 0 < size < n
                if size == n:
                    break
            acked = child.stdout.read().split()
            assert child.wait() == 0, child.stderr.read()
        finally:
            child.kill()
        assert len(acked) == n
        assert indexes.sizes() == {s: n for s in INDEXED_SPACES}
        assert indexes.applied_seq == store.last_seq() == n
        assert all(store.get(i) is not None for i in acked)
        probe = store.fingerprints([n])[0]
        assert indexes.search(13, probe[13], 1)[0][0] == n
        print(f"parent caught up while the child wrote: {seen_partial}")


def test_child_index_sees_the_parents_memories(tmp_path):
    n = 60
    rng = np.random.default_rng(2)
    with LmdbStore(tmp_path / "db") as store:
        child = _spawn(READER, tmp_path / "db", n, DEADLINE_S)
        try:
            _ready(child)
            for _ in range(n):
                store.put(record(), fingerprint(rng, tokens=8))
            out, err = child.communicate(timeout=DEADLINE_S + 10)
        finally:
            child.kill()
        assert child.returncode == 0, err
        report = json.loads(out)
        assert report["sizes"] == {str(s): n for s in INDEXED_SPACES}
        assert report["applied"] == report["last"] == n
        assert report["top"] == n


def _hard_kill_run(path: Path, seed: int, acked_before_kill: int) -> list[str]:
    child = _spawn(WRITER, path, -1, seed)
    acked: list[str] = []
    try:
        _ready(child)
        child.stdin.write("go\n")
        child.stdin.flush()
        while len(acked) < acked_before_kill:
            line = child.stdout.readline()
            assert line.endswith("\n"), child.stderr.read()
            acked.append(line.strip())
        os.kill(child.pid, signal.SIGKILL)  # mid-burst: the child is writing flat out
        rest = child.stdout.read()  # ids printed before the kill are acknowledged; a torn last line is not
        acked += [line for line in rest.split("\n")[:-1] if line]
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGKILL
    return acked


@pytest.mark.parametrize("rounds", [3])
def test_sigkill_mid_burst_loses_nothing_acknowledged(tmp_path, rounds):
    path = tmp_path / "db"
    LmdbStore(path).close()
    acked: list[str] = []
    for round_ in range(rounds):
        acked += _hard_kill_run(path, seed=round_, acked_before_kill=25 + 10 * round_)
    with LmdbStore(path) as store:
        assert store.check() == []  # every record has ids, seqs, a complete fingerprint and its put entry
        for memory_id in acked:
            stored = store.get(memory_id)
            assert stored is not None, memory_id
            fp = store.fingerprints([stored.seq])[0]
            assert fp is not None and set(fp) == {s.id for s in SPACES}
            assert fp[12].shape == (8, 128)
        records = {r.id: r.seq for r, _ in store.scan()}
        puts = {e.memory_id: e.memory_seq for e in store.oplog_since(0)}
        assert all(e.op == "put" for e in store.oplog_since(0))
        assert records == puts  # the log and the records agree, in both directions
        assert set(acked) <= set(records) and len(records) - len(acked) <= rounds  # at most one unacked each
        assert store.last_seq() == max(records.values())
        # the store still takes writes (the killed writer's lock, if it held it, was recovered)
        assert store.put(record(), fingerprint(np.random.default_rng(9))).seq == store.last_seq()


HOLDER = _PRELUDE + """
txn = store._env.begin(write=True)   # hold the write lock with a half-written memory in it
txn.put(b"half-written", b"x", db=store._db["memories"])
print("ready", flush=True)
sys.stdin.readline()
"""


def test_a_writer_killed_inside_its_transaction_leaves_nothing_and_no_lock(tmp_path):
    path = tmp_path / "db"
    with LmdbStore(path) as store:
        before = store.put(record(), fingerprint(np.random.default_rng(1)))
        child = _spawn(HOLDER, path)
        try:
            _ready(child)
            os.kill(child.pid, signal.SIGKILL)
        finally:
            child.kill()
            child.wait()
        # LMDB's robust mutex hands the dead holder's write lock to the next writer
        after = store.put(record(), fingerprint(np.random.default_rng(2)))
        assert after.seq == before.seq + 1
        assert store.get("half-written") is None and store.count() == 2 and store.check() == []


GROWER = _PRELUDE.replace("LmdbStore(sys.argv[2])", "LmdbStore(sys.argv[2], map_size=256 * 1024)") + """
rng = np.random.default_rng(5)
ids = [store.put(record(), fingerprint(rng, tokens=8)).id for _ in range(int(sys.argv[3]))]
print(json.dumps({"ids": ids, "map_size": store._env.info()["map_size"]}), flush=True)
"""


def test_a_map_grown_by_another_process_is_adopted(tmp_path):
    path = tmp_path / "db"
    with LmdbStore(path, map_size=256 * 1024) as store:
        first = store.put(record(), fingerprint(np.random.default_rng(1), tokens=8))
        child = _spawn(GROWER, path, 40)
        out, err = child.communicate(timeout=DEADLINE_S)
        assert child.returncode == 0, err
        report = json.loads(out)
        assert report["map_size"] > 256 * 1024  # the child had to grow the map
        assert all(r is not None for r in store.fingerprints(range(1, 42)))  # reads past our old map end
        assert store.get(report["ids"][-1]) is not None
        last = store.put(record(), fingerprint(np.random.default_rng(2), tokens=8))
        assert last.seq == 42 and store.get(first.id) is not None and store.check() == []
