"""What an index save killed midway leaves behind (issue 12.4): the next open removes it, but never a directory a
running save (in this process or another) is still writing. The killed save is a real child process, SIGKILLed
while its files are written and its rename not yet done; nothing waits on a timer."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from storage_fakes import fingerprint, record

from contextgraph.doctor import check_indexes
from contextgraph.storage import save_dirs
from contextgraph.storage.indexes import IndexSet
from contextgraph.storage.lmdb_store import LmdbStore
from contextgraph.storage.maintenance import INDEX_DIR, STORE_DIR, reindex

HERE = str(Path(__file__).parent)

# Saves into argv[3], but stops where a crash would hurt most: every file written, nothing renamed yet.
STALLED_SAVER = """
import sys
sys.path.insert(0, sys.argv[1])
from contextgraph.storage import indexes as ix, save_dirs
from contextgraph.storage.lmdb_store import LmdbStore

store = LmdbStore(sys.argv[2])
index_set = ix.IndexSet(store)
index_set.catch_up()

def stall(directory):
    print(directory, flush=True)
    sys.stdin.readline()  # until killed

save_dirs._fsync_tree = stall
index_set.save(sys.argv[3])
"""


@pytest.fixture
def home(tmp_path):
    rng = np.random.default_rng(5)
    with LmdbStore(tmp_path / STORE_DIR) as store:
        for _ in range(12):
            store.put(record(), fingerprint(rng, tokens=2, e6_nnz=40, e13_nnz=15))
    return tmp_path


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # reaped: no process has this pid now
    return child.pid


def _leftover(home: Path, role: str, pid: int, age_s: float = 0.0) -> Path:
    path = save_dirs.staging_name(home / INDEX_DIR, role, f"{pid}-0123abcd")
    path.mkdir()
    (path / "e01.hnsw").write_bytes(b"\0" * 4096)
    if age_s:
        then = time.time() - age_s
        os.utime(path, (then, then))
    return path


def _hidden(home: Path) -> list[str]:
    return sorted(p.name for p in home.iterdir() if p.name.startswith("."))


def test_a_save_killed_midway_leaves_a_directory_the_next_open_removes(home):
    child = subprocess.Popen([sys.executable, "-c", STALLED_SAVER, HERE, str(home / STORE_DIR), str(home / INDEX_DIR)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        tmp = Path(child.stdout.readline().strip())  # the child's files are all written
        assert tmp.parent == home and tmp.name.startswith(f".{INDEX_DIR}.tmp-{child.pid}-")
        assert any(tmp.iterdir())
        with LmdbStore(home / STORE_DIR) as store:
            IndexSet.open(home / INDEX_DIR, store)  # the save is alive and holds its directory: left alone
        assert tmp.exists()
        check = check_indexes(home)  # (doctor is a process of its own: it opens the store itself)
        assert check.ok and "partial save" not in check.detail
        child.send_signal(signal.SIGKILL)
        child.wait()
        assert tmp.exists()  # nothing cleans up after a SIGKILL: before issue 12.4 it stayed for good
        check = check_indexes(home)
        assert check.ok and "1 partial save(s)" in check.detail and tmp.name in check.detail
        with LmdbStore(home / STORE_DIR) as store:
            IndexSet.open(home / INDEX_DIR, store)
        assert not tmp.exists() and _hidden(home) == []
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_a_save_running_in_this_process_is_never_removed(home):
    """Another thread's save holds its directory's lock: an open on a second thread must not take it, even if
    the directory looks old."""
    with LmdbStore(home / STORE_DIR) as store:
        indexes = IndexSet.open(home / INDEX_DIR, store)
        tmp = save_dirs.staging_name(home / INDEX_DIR, "tmp", f"{os.getpid()}-feedf00d")
        tmp.mkdir()
        owner = save_dirs.hold(tmp)  # what IndexSet.save does while it writes
        try:
            then = time.time() - 2 * save_dirs.STALE_AFTER_S
            os.utime(tmp, (then, then))
            assert save_dirs.remove_stale(home / INDEX_DIR) == []
            IndexSet.open(home / INDEX_DIR, store)
            assert tmp.exists()
        finally:
            save_dirs.release(owner)
        assert save_dirs.remove_stale(home / INDEX_DIR) == [tmp]  # unlocked and old now: stale
        indexes.save(home / INDEX_DIR)  # and saving still works, leaving nothing behind
    assert _hidden(home) == []


def test_which_leftovers_are_stale(home):
    dead = _dead_pid()
    gone_tmp = _leftover(home, "tmp", dead)  # owner gone, unlocked
    gone_old = _leftover(home, "old", dead)  # an old set its saver never deleted
    young = _leftover(home, "tmp", os.getpid())  # owner alive and recent: perhaps between mkdir and lock
    aged = _leftover(home, "old", os.getpid(), age_s=2 * save_dirs.STALE_AFTER_S)  # alive pid, but far too old
    unrelated = home / ".indexes.tmp-notapid"  # not a name a save makes
    unrelated.mkdir()
    removed = save_dirs.remove_stale(home / INDEX_DIR)
    assert sorted(removed) == sorted([gone_tmp, gone_old, aged])
    assert young.exists() and unrelated.exists()


def test_reindex_removes_leftovers_too(home):
    gone = _leftover(home, "tmp", _dead_pid())
    with open(os.devnull, "w") as progress:
        sizes = reindex(home, stream=progress)
    assert set(sizes.values()) == {12} and not gone.exists()
