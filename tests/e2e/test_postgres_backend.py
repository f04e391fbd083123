"""The core memory and curation tools end to end on PostgreSQL (SPEC D18): every test of test_memory_tools.py and
test_curation_tools.py runs again here with the app's store on a fresh database of the session's embedded
server (CONTEXTGRAPH_STORE_URL), through the same MCP client. The two LMDB-specific ones (reindex of the local
index files; two processes sharing a data directory's log) are replaced by their PostgreSQL counterparts in
tests/integration/storage/test_postgres_processes.py."""

from __future__ import annotations

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
