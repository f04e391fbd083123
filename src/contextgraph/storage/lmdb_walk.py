"""The store's full consistency walk in a child process, for `contextgraph doctor`.

A corrupted page met by a cursor stepping from one leaf to the next is an assertion failure inside LMDB 0.9
(abort: SIGABRT), not an error code, and a page past the end of a file that shrank under a running walk is
SIGBUS; neither can be caught in the process they happen in. The walk runs in a fresh interpreter so doctor
lives to report either, and records it (lmdb_damage's note) so every process stops writing into the file.

    python -m contextgraph.storage.lmdb_walk STORE_DIR   →   one JSON line: {"count", "problems"} or {"error"}
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from contextgraph.storage.lmdb_damage import DATA_FILE, write_note

_MODULE = "contextgraph.storage.lmdb_walk"


def walk(directory: Path) -> dict:
    """The walk itself, in this process: what doctor reports."""
    from contextgraph.errors import ContextGraphError
    from contextgraph.storage.lmdb_store import LmdbStore

    try:
        with LmdbStore(directory, readonly=True) as store:
            return {"problems": store.check(), "count": store.count()}
    except ContextGraphError as exc:
        return {"error": exc.message}
    except Exception as exc:  # reported, never raised: doctor is what people run when things are broken
        return {"error": f"{type(exc).__name__}: {exc}"}


def walk_in_child(directory: Path, timeout_s: float | None = None) -> dict:
    """walk() in a fresh interpreter; a child killed by a signal is reported (and recorded) as damage."""
    done = subprocess.run([sys.executable, "-m", _MODULE, str(directory)], capture_output=True, text=True,
                          timeout=timeout_s)
    if done.returncode < 0:
        name = signal.Signals(-done.returncode).name
        damage = f"{directory / DATA_FILE}: the consistency walk was killed by {name} inside LMDB"
        write_note(directory, damage)
        return {"error": f"the store is damaged: {damage}"}
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return {"error": f"the consistency walk failed (exit {done.returncode}): {done.stderr.strip()[-500:]}"}


if __name__ == "__main__":
    print(json.dumps(walk(Path(sys.argv[1]))))
