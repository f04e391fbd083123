"""Shared fixtures: an App on a temp data directory, and a helper that runs one tool call in-process."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest  # noqa: E402

from contextgraph.app import App, build_app  # noqa: E402
from contextgraph.config import Settings  # noqa: E402
from contextgraph.tools.context import ToolContext  # noqa: E402


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def settings(tmp_path) -> Settings:
    return Settings.from_env({"CONTEXTGRAPH_HOME": str(tmp_path / "home"), "CONTEXTGRAPH_LOG_LEVEL": "error"})


@pytest.fixture
def app(settings) -> App:
    return build_app(settings)


@pytest.fixture
def call(app):
    """`await call("tool_find", {...})` → the CallOutcome; raises ToolCallFailed like the server sees it."""

    async def _call(name, arguments=None, session="test-session"):
        return await app.dispatcher.call(name, arguments, ToolContext(app, session))

    return _call
