"""Shared by the e2e tests: an in-memory MCP SDK client session on the test's app (legacy handshake)."""

import pytest
from mcp import Client

from contextgraph.server import build_server


@pytest.fixture
async def client(app):
    async with Client(build_server(app), mode="legacy") as c:
        yield c
