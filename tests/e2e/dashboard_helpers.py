"""Shared by the dashboard tests: the server started in-process on an ephemeral HTTP port, a real MCP client
over its Streamable HTTP endpoint, and Debian's chromium driven by Playwright (never a downloaded browser)."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from contextgraph.app import App
from contextgraph.transports.network import Listening, serve_network

CHROMIUM = os.environ.get("CONTEXTGRAPH_CHROMIUM", "/usr/bin/chromium")
WHY = "dashboard end-to-end test memory"
NET_ENV = {"CONTEXTGRAPH_PORT": "0", "CONTEXTGRAPH_HTTP_PORT": "0"}


def require_browser() -> str:
    """The system chromium, or a skip; CI (.ci/run installs chromium) sets CONTEXTGRAPH_REQUIRE_BROWSER=1, so a
    missing browser fails there instead of skipping the browser tests silently."""
    path = CHROMIUM if os.path.exists(CHROMIUM) else shutil.which("chromium")
    if path is None:
        if os.environ.get("CONTEXTGRAPH_REQUIRE_BROWSER") == "1":
            pytest.fail(f"no chromium at {CHROMIUM} (apt-get install chromium)")
        pytest.skip("Debian's chromium is not installed (apt-get install chromium; .ci/run does it)")
    return path


@asynccontextmanager
async def serving(app: App) -> AsyncIterator[str]:
    """The app's HTTP transport on an ephemeral port; yields its base URL."""
    async with anyio.create_task_group() as tg:
        listening: Listening = await tg.start(serve_network, app, ("http",))
        try:
            assert listening.http is not None
            host, port = listening.http
            yield f"http://{host}:{port}"
        finally:
            tg.cancel_scope.cancel()


@asynccontextmanager
async def browser_page(tmp_path, **context_options: Any):
    """(page, requests seen, page errors) in a fresh headless chromium context."""
    from playwright.async_api import async_playwright

    executable = require_browser()
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=executable, args=["--no-sandbox", "--disable-gpu"])
        try:
            context = await browser.new_context(viewport={"width": 1400, "height": 1000}, **context_options)
            page = await context.new_page()
            requests: list[str] = []
            errors: list[str] = []
            page.on("request", lambda r: requests.append(r.url))
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            yield page, requests, errors
        finally:
            await browser.close()


async def shoot(page, tmp_path, name: str) -> None:
    """A screenshot of each panel into the test's temp dir (looked at while building the page)."""
    for panel in ("now", "history", "memories", "curation"):
        await page.locator(f"#{panel}").screenshot(path=str(tmp_path / f"{name}-{panel}.png"))


async def call(client, name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    result = await client.call_tool(name, args or {})
    assert not result.is_error, result
    return result.structured_content


async def store(client, content: str, **extra: Any) -> str:
    return (await call(client, "store_memory", {"content": content, "rationale": WHY, **extra}))["id"]


def freeze_network(app: App) -> None:
    """Stop the Kuramoto network's clock, so the phases, r and the pulse the page renders are the ones the MCP
    calls after it read: the oscillators otherwise move between any two reads (that they move is tested with
    the live page)."""
    network = app.services.cognition.network
    network.read()  # integrate up to now first
    frozen = network._clock()
    network._clock = lambda: frozen
