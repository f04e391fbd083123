"""The core memory and curation tools end to end on PostgreSQL (SPEC D18): every test of test_memory_tools.py and
test_curation_tools.py runs again here with the app's store on a fresh database of the session's embedded
server (CONTEXTGRAPH_STORE_URL), through the same MCP client. The two LMDB-specific ones are replaced: reindex
by its PostgreSQL counterpart below (the host's in-process indexes), two processes sharing a data directory's log by
tests/e2e/test_postgres_processes.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import test_curation_tools as curation
import test_memory_tools as memory

pytestmark = pytest.mark.anyio

LMDB_ONLY = {"test_reindex_rebuilds_what_search_uses", "test_a_second_process_sees_the_first_ones_memories"}
for _module in (memory, curation):
    for _name, _test in list(vars(_module).items()):
        if _name.startswith("test_") and callable(_test) and _name not in LMDB_ONLY:
            assert _name not in globals(), f"{_name} is in both modules"
            globals()[_name] = _test


@pytest.fixture
def settings(tmp_path, make_settings, postgres_url):
    return make_settings(tmp_path / "home", CONTEXTGRAPH_STORE_URL=postgres_url)


def test_the_store_is_postgres(app):
    from contextgraph.storage.postgres.store import PgStore

    app.services.storage.open()
    assert isinstance(app.services.storage.store, PgStore)
    assert not (app.services.storage.home / "store").exists()  # nothing of LMDB's in the data directory


async def test_reindex_rebuilds_the_local_indexes_search_uses(app, settings, postgres_url):
    """`contextgraph reindex` on PostgreSQL rebuilds the host's in-process indexes (E2-E4, E6, E13) from the
    database (the HNSW indexes are the database's): what it saved is a set of those spaces, and search answers as
    before."""
    before = await memory.store_all_and_search(app)
    script = Path(sys.executable).parent / "contextgraph"
    out = subprocess.run([str(script), "reindex", "--home", str(settings.home)], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "CONTEXTGRAPH_STORE_URL": postgres_url})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "E2: 5, E3: 5, E4: 5, E6: 5, E13: 5" and "5/5" in out.stderr
    manifest = json.loads((settings.home / "indexes" / "manifest.json").read_text())
    assert manifest["indexed"] == [2, 3, 4, 6, 13] and sorted(manifest["spaces"], key=int) == ["2", "3", "4", "6", "13"]
    assert await memory.search_reopened(settings) == before
