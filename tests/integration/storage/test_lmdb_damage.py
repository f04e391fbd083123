"""A damaged LMDB data file: cut short (LMDB maps it, and a read past the end killed the process with SIGBUS:
the server on its first call, `doctor` and `export` with exit 135), or a page overwritten in place (MDB_CORRUPTED,
which doctor flagged while the server went on writing into the file).

Whatever could die by a signal runs in a child process, so a signal death is a failed test, not a dead pytest.
Real LMDB, real files damaged on disk, the real CLI."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from storage_fakes import fingerprint, record

from contextgraph.errors import StorageError
from contextgraph.storage.lmdb_damage import NOTE_FILE, file_damage, write_note
from contextgraph.storage.lmdb_store import LmdbStore
from contextgraph.storage.maintenance import STORE_DIR

HERE = str(Path(__file__).parent)
SCRIPT = Path(sys.executable).parent / "contextgraph"
N = 60
MARKER = "the-memory-whose-page-is-overwritten"

OPEN_READ_WRITE = """
import sys, json
sys.path.insert(0, sys.argv[1])
import numpy as np
from storage_fakes import fingerprint, record
from contextgraph.errors import StorageError
from contextgraph.storage.lmdb_store import LmdbStore
try:
    with LmdbStore(sys.argv[2]) as store:
        store.check()
        store.put(record(), fingerprint(np.random.default_rng(1), tokens=2))
    print(json.dumps({"error": None}))
except StorageError as exc:
    print(json.dumps({"error": exc.message}))
"""


def _home(directory: Path, marker_id: str) -> Path:
    rng = np.random.default_rng(8)
    with LmdbStore(directory / STORE_DIR) as store:
        for i in range(N):
            # ids fixed, so the pages lie the same way in every run
            rec = replace(record(content=MARKER), id=marker_id) if i == N // 2 else \
                replace(record(content=f"memory {i}"), id=f"{4 * i:02x}".ljust(32, "7"))
            store.put(rec, fingerprint(rng, tokens=4, e6_nnz=40, e13_nnz=15))
    return directory


@pytest.fixture
def home(tmp_path):
    """The damaged record's id sorts first: a cursor meets its page on the way down from the root, where LMDB
    answers MDB_CORRUPTED."""
    return _home(tmp_path, "0" * 32)


@pytest.fixture
def home_last(tmp_path):
    """The damaged record's id sorts last: a walk meets its page stepping sideways from a sound leaf, where LMDB
    0.9 asserts (SIGABRT) instead of answering an error."""
    return _home(tmp_path, "f" * 32)


def _cli(*args: str, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "CONTEXTGRAPH_HOME": str(home), "CONTEXTGRAPH_LOG_LEVEL": "error"}
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=300, env=env)


def _page_size(data_file: Path) -> int:
    with open(data_file, "rb") as f:
        return struct.unpack_from("<I", f.read(64), 40)[0]


def _overwrite_pages_holding(data_file: Path, needle: bytes) -> int:
    """Zero the flags of every leaf page (P_LEAF) that holds `needle`: LMDB then meets a page that is neither
    branch nor leaf where it expects one, and answers MDB_CORRUPTED. Returns how many pages were hit."""
    size = _page_size(data_file)
    data = data_file.read_bytes()
    hit = 0
    with open(data_file, "r+b") as f:  # in place: the file may be mapped by an open store, and must not shrink
        for number in range(2, len(data) // size):
            offset = number * size
            pgno, _pad, flags = struct.unpack_from("<QHH", data, offset)
            if pgno == number and flags & 0x02 and needle in data[offset:offset + size]:
                f.seek(offset + 10)
                f.write(b"\0\0")
                hit += 1
    return hit


def _cut(home: Path, keep: int) -> None:
    os.truncate(home / STORE_DIR / "data.mdb", keep)


def _cuts(home: Path) -> list[int]:
    data_file = home / STORE_DIR / "data.mdb"
    size, page = data_file.stat().st_size, _page_size(data_file)
    return [size // 2, size - page, page, 100]


@pytest.mark.parametrize("which", range(4))
def test_a_truncated_data_file_is_refused_before_it_is_mapped(home, which):
    _cut(home, _cuts(home)[which])
    assert "data.mdb is truncated" in (file_damage(home / STORE_DIR) or "")
    done = subprocess.run([sys.executable, "-c", OPEN_READ_WRITE, HERE, str(home / STORE_DIR)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"exit {done.returncode} (SIGBUS is -7): {done.stderr[-1500:]}"
    error = json.loads(done.stdout.strip().splitlines()[-1])["error"]
    assert error and "data.mdb is truncated" in error and "backup" in error, error


def test_a_sound_store_shows_no_damage(home):
    assert file_damage(home / STORE_DIR) is None
    assert file_damage(home / "nowhere") is None


def test_an_overwritten_meta_page_is_named(home):
    with open(home / STORE_DIR / "data.mdb", "r+b") as f:
        f.seek(_page_size(home / STORE_DIR / "data.mdb") + 16)  # meta page 1's magic
        f.write(b"\xff" * 8)
    assert "meta page 1 is not an LMDB meta page" in (file_damage(home / STORE_DIR) or "")
    with pytest.raises(StorageError, match="meta page 1"):
        LmdbStore(home / STORE_DIR)


def test_doctor_export_and_reindex_diagnose_a_truncated_store(home, tmp_path):
    _cut(home, _cuts(home)[0])
    doctor = _cli("doctor", home=home)
    assert doctor.returncode == 1, f"exit {doctor.returncode}: {doctor.stderr[-1500:]}"
    line = next(line for line in doctor.stdout.splitlines() if "] store:" in line)
    assert line.startswith("[ MISSING]") and "data.mdb is truncated" in line, doctor.stdout

    out = tmp_path / "export.jsonl"
    export = _cli("export", "--out", str(out), home=home)
    assert export.returncode == 1, f"exit {export.returncode}: {export.stderr[-1500:]}"
    assert "data.mdb is truncated" in export.stderr and "Traceback" not in export.stderr, export.stderr
    assert not out.exists()

    reindex = _cli("reindex", home=home)
    assert reindex.returncode == 1 and "data.mdb is truncated" in reindex.stderr and "Traceback" not in reindex.stderr


def test_a_corrupted_page_met_by_a_read_stops_every_write(home):
    assert _overwrite_pages_holding(home / STORE_DIR / "data.mdb", MARKER.encode()) >= 1
    with LmdbStore(home / STORE_DIR) as store:
        with pytest.raises(StorageError, match="damaged"):
            store.check()  # walks every record: meets the overwritten page
        # a write that touches only sound pages (the meta table) is refused all the same
        with pytest.raises(StorageError, match="writes are refused") as refused:
            store.put_document("probe", {"x": 1})
        assert "data.mdb" in refused.value.message and "MDB_CORRUPTED" in refused.value.message
        assert store.count() == N  # reads go on: what still reads can be exported
    assert (home / STORE_DIR / NOTE_FILE).exists()
    with LmdbStore(home / STORE_DIR) as again, pytest.raises(StorageError, match="writes are refused"):
        again.put(record(), fingerprint(np.random.default_rng(2), tokens=2))


def test_a_server_stops_writing_once_doctor_finds_corruption(home):
    """The server has the store open when doctor (another process) walks into the damaged page."""
    with LmdbStore(home / STORE_DIR) as server:
        server.put_document("probe", {"before": True})  # writes go through while nothing is known
        assert _overwrite_pages_holding(home / STORE_DIR / "data.mdb", MARKER.encode()) >= 1
        doctor = _cli("doctor", home=home)
        line = next(line for line in doctor.stdout.splitlines() if "] store:" in line)
        assert doctor.returncode == 1 and "MDB_CORRUPTED" in line and "data.mdb" in line, doctor.stdout
        with pytest.raises(StorageError, match="writes are refused"):
            server.put_document("probe", {"after": True})
        assert server.get_document("probe") == {"before": True}


def test_doctor_survives_lmdb_aborting_on_a_corrupted_page_and_records_it(home_last):
    assert _overwrite_pages_holding(home_last / STORE_DIR / "data.mdb", MARKER.encode()) >= 1
    with LmdbStore(home_last / STORE_DIR) as server:
        doctor = _cli("doctor", home=home_last)
        assert doctor.returncode == 1, f"exit {doctor.returncode}: {doctor.stderr[-1500:]}"
        line = next(line for line in doctor.stdout.splitlines() if "] store:" in line)
        assert "data.mdb" in line and "killed by SIGABRT" in line, doctor.stdout
        with pytest.raises(StorageError, match="writes are refused"):
            server.put_document("probe", {"after": True})


def test_a_server_opens_a_store_with_damage_on_record_for_reading(app, settings):
    """Opening a data directory writes when tombstones have expired (the purge); with damage on record that
    write is refused, and the store must still open for reading, not fail every call."""
    rng = np.random.default_rng(3)
    with LmdbStore(settings.home / STORE_DIR) as store:
        kept = store.put(record(content="still readable"), fingerprint(rng, tokens=2))
        store.graph_write(lambda g: g.put_tombstone("f" * 32, {"deleted_at": 0.0}, b""))  # long expired
    write_note(settings.home / STORE_DIR, "data.mdb: a page met as MDB_CORRUPTED")
    handle = app.services.storage
    handle.open()  # before: the purge's StorageError escaped and no call could open the store
    assert handle.store.get(kept.id).content == "still readable"
    with pytest.raises(StorageError, match="writes are refused"):
        handle.store.put_document("probe", {"x": 1})
