"""DeferredApp (deferred_app.py): the App is built once, in the background or by the first request that needs it;
tools/list comes from the listing snapshot until then, from the registry after, or from the registry at once
when no snapshot fits; callbacks run once it is built; a failed build is reported to every request."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import anyio
import pytest

from contextgraph.config import Settings
from contextgraph.constitution import constitution
from contextgraph.deferred_app import AppNotBuilt, DeferredApp
from contextgraph.tools.catalog import build_registry
from contextgraph.tools.listing import live_listing, load_snapshot


def fake_app(profile: str = "core"):
    return SimpleNamespace(registry=build_registry(constitution(), profile), closed=False)


def deferred(build, snapshot=None, profile: str = "core") -> DeferredApp:
    settings = SimpleNamespace(profile=profile)
    return DeferredApp(settings, constitution(), build, snapshot)  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_the_snapshot_answers_until_the_app_is_built_and_the_registry_after():
    release, built = threading.Event(), []
    app = fake_app()

    def build():
        release.wait(10)
        built.append(app)
        return app

    d = deferred(build, load_snapshot(constitution()))
    assert [t.name for t in await d.listed_tools()] == [t.name for t in live_listing(app.registry)]
    assert not built  # the snapshot answered; nothing was built
    app.registry.activate(["get_kuramoto_sync"])  # as tool_load would
    release.set()
    assert await d.get() is app
    assert "get_kuramoto_sync" in [t.name for t in await d.listed_tools()]  # the live registry now
    assert built == [app]


@pytest.mark.anyio
async def test_without_a_snapshot_tools_list_waits_for_the_registry():
    app = fake_app()
    d = deferred(lambda: app, snapshot=None)
    assert await d.listed_tools() == live_listing(app.registry)
    assert d.built() is app


@pytest.mark.anyio
async def test_callbacks_run_once_built_and_at_once_after():
    app = fake_app()
    d, seen = deferred(lambda: app), []
    d.when_built(seen.append)
    d.start()
    d.start()  # no second build
    await d.get()
    d.when_built(seen.append)
    assert seen == [app, app]


@pytest.mark.anyio
async def test_a_failed_build_is_reported_to_every_request():
    def build():
        raise RuntimeError("no services")

    d = deferred(build)
    for _ in range(2):
        with pytest.raises(AppNotBuilt) as raised:
            await d.get()
        assert isinstance(raised.value.__cause__, RuntimeError)
    d.close()  # nothing to close


def test_a_ready_app_is_not_built_again(tmp_path):
    app = SimpleNamespace(settings=Settings.from_env({"CONTEXTGRAPH_HOME": str(tmp_path)}),
                          constitution=constitution(), closed=[])
    app.close = lambda: app.closed.append(True)
    d = DeferredApp.ready(app)  # type: ignore[arg-type]
    assert d.built() is app
    assert anyio.run(d.get) is app
    d.close()
    assert app.closed == [True]


def test_closing_while_it_builds_does_not_wait_and_the_app_closes_itself():
    release, closed, started = threading.Event(), threading.Event(), []
    app = fake_app()
    app.close = closed.set

    def build():
        release.wait(10)
        return app

    d = deferred(build)
    d.when_built(started.append)  # the model load, in the server
    d.start()
    d.close()  # returns at once: nobody used the App
    assert not closed.is_set()
    release.set()
    assert closed.wait(10)
    assert started == []  # the model load was never started
