"""The dashboard in a real headless browser (Debian's chromium driven by Playwright) against a real server: memories
stored through MCP (Streamable HTTP), the page's numbers checked against the MCP tools, a search, a memory's page
and its neighbourhood graph, a merge of two near-duplicates clicked in the UI and seen through MCP, the live
stream, and that a first load fetches nothing but the page and its own four files (no CDN). Screenshots of
every panel go to the test's temp dir."""

from __future__ import annotations

import time

import pytest
from dashboard_helpers import browser_page, call, freeze_network, serving, shoot, store
from mcp import Client

from contextgraph.app import build_app

pytestmark = pytest.mark.anyio
DEPLOY = "The deploy failed because the database migration timed out after 30 seconds."
DEPLOY2 = "The deploy failed since the database migration hit its 30 second timeout."
OTHER = "Kuramoto oscillators synchronise once the coupling exceeds a critical value."
RUST = "Rust's borrow checker rules out data races at compile time."
HOSTILE = '<img src=x onerror="document.body.dataset.pwned=1"></script> a memory that holds markup'


@pytest.fixture
def dash_app(tmp_path, make_settings):
    app = build_app(make_settings(tmp_path / "home", CONTEXTGRAPH_PORT="0", CONTEXTGRAPH_HTTP_PORT="0"))
    yield app
    app.close()


async def _metrics(page) -> dict[str, tuple[str, str]]:
    """data-metric name → (text, data-value) as the page shows them."""
    out = {}
    for node in await page.locator("[data-metric]").all():
        name = await node.get_attribute("data-metric")
        out[name] = (await node.text_content(), await node.get_attribute("data-value"))
    return out


async def test_snapshot_numbers_match_the_mcp_tools(dash_app, tmp_path):
    async with serving(dash_app) as base, Client(base + "/mcp", mode="legacy") as client:
        for text in (DEPLOY, DEPLOY2, OTHER, RUST):
            await store(client, text)
        freeze_network(dash_app)
        async with browser_page(tmp_path) as (page, requests, errors):
            sizes: dict[str, int] = {}

            async def on_response(response):
                sizes[response.url.rsplit("/", 1)[-1]] = len(await response.body())

            page.on("response", on_response)
            started = time.perf_counter()
            response = await page.goto(base + "/dashboard?live=0")
            await page.locator("body[data-rendered='1']").wait_for(state="attached")
            render_s = time.perf_counter() - started
            assert response is not None and response.status == 200
            memetic = await call(client, "get_memetic_status")
            sync = await call(client, "get_kuramoto_sync")
            shown = await _metrics(page)
            expected = {"memory_count": memetic["fingerprintCount"], "edge_count": memetic["layers"]["memory"]["edges"],
                        "entropy": memetic["utl"]["entropy"], "coherence": memetic["utl"]["coherence"],
                        "learning_score": memetic["utl"]["learningScore"], "kuramoto_r": sync["r"]}
            assert set(shown) == set(expected)
            for name, value in expected.items():
                text, data_value = shown[name]
                assert float(text) == pytest.approx(value, abs=1e-9), name
                assert data_value == text
            assert memetic["fingerprintCount"] == 4
            oscillators = page.locator("[data-oscillator]")
            assert await oscillators.count() == 13
            for i, phase in enumerate(sync["phases"], start=1):
                node = page.locator(f'[data-oscillator="{i}"]')
                assert float(await node.text_content()) == pytest.approx(phase, abs=1e-9)
                assert await node.get_attribute("data-value") == await node.text_content()
            # 13 dots on the circle, and the panels filled from the snapshot
            assert await page.locator("#kuramoto-svg [data-osc-dot]").count() == 13
            assert await page.locator("#recent-list li[data-memory-id]").count() == 4
            assert await page.locator("#johari-table tbody tr").count() == 13
            assert await page.locator("#duplicates [data-task='duplicate']").count() >= 1
            assert await page.locator("#history-engine path.series, #history-engine circle.dot").count() >= 1
            assert await page.locator("#latency-table tbody tr").count() == 2
            # neuromodulators: the levels get_neuromodulation_state reports, or "not available" without that tool
            box = page.locator("#neuromodulation-box")
            if "get_neuromodulation_state" in dash_app.registry.specs:
                state = await call(client, "get_neuromodulation_state")
                levels = {k: v["level"] for k, v in (state.get("modulators") or state).items()
                          if isinstance(v, dict) and "level" in v}
                assert levels
                for name, level in levels.items():
                    shown = float(await box.locator(f"[data-level='{name}']").text_content() or "nan")
                    assert shown == pytest.approx(level, rel=1e-3, abs=1e-6)
            else:
                assert "not available" in (await box.text_content() or "")
            await shoot(page, tmp_path, "snapshot")
            # live=0: one snapshot, no stream, and nothing went wrong in the page
            assert not [u for u in requests if "/dashboard/api/stream" in u]
            assert errors == []
            # what a first load transfers: the page and its own four files, nothing from elsewhere (no CDN)
            await page.wait_for_load_state("networkidle")
            assert set(sizes) == {"dashboard?live=0", "dashboard.js", "charts.js", "graph.js", "dashboard.css"}
            assert all(u.startswith(base) for u in requests)
            print(f"\ndashboard first render (live=0, 4 memories, server snapshot included): {render_s * 1000:.0f} ms; "
                  f"page weight {sum(sizes.values()) / 1024:.1f} KB: "
                  + ", ".join(f"{name} {n / 1024:.1f} KB" for name, n in sorted(sizes.items())))


async def test_search_memory_page_and_graph_expansion(dash_app, tmp_path):
    async with serving(dash_app) as base, Client(base + "/mcp", mode="legacy") as client:
        deploy = await store(client, DEPLOY)
        other = await store(client, OTHER, link_to=[deploy])
        await store(client, RUST, link_to=[other])
        await store(client, HOSTILE)
        async with browser_page(tmp_path) as (page, _requests, errors):
            await page.goto(base + "/dashboard?live=0")
            # a memory's markup is shown as text, never run or parsed (and the CSP forbids inline script anyway)
            assert await page.locator("#recent-list img, #memory-page img").count() == 0
            assert "<img src=x" in (await page.locator("#recent-list").text_content() or "")
            assert await page.locator("body[data-pwned]").count() == 0
            await page.fill("#search-q", "why did the deploy fail")
            await page.check("#search-breakdown")
            await page.click("#search-form button[type=submit]")
            rows = page.locator("#search-table tbody tr")
            await rows.first.wait_for()
            found = await call(client, "search_graph", {"query": "why did the deploy fail", "top_k": 10})
            shown_ids = [await r.get_attribute("data-result-id") for r in await rows.all()]
            assert shown_ids[0] == found["results"][0]["id"] == deploy
            assert set(shown_ids) == {r["id"] for r in found["results"]}
            assert await page.locator("#search-table thead th.rank").count() == 13  # the per-space breakdown
            # open the memory from the results
            await rows.first.locator("a.memory-link").click()
            await page.locator("#memory-page [data-field='memory-id']").filter(has_text=deploy).wait_for()
            hydrated = await call(client, "hydrate_citation", {"citation_tag": f"[node_{deploy}]"})
            assert await page.locator("#memory-page [data-field='content']").text_content() == hydrated["content"]
            johari = await call(client, "get_johari_classification", {"memory_id": deploy})
            cells = await page.locator("#johari-table tbody tr td:nth-child(4)").all()
            quadrants = [await c.text_content() for c in cells]
            assert quadrants == johari["quadrants"]
            # the graph: the memory and its neighbour, then a click expands the neighbour's own neighbourhood
            graph = page.locator("#graph-view")
            assert await graph.locator("g.node").count() == 2
            edge = graph.locator("line.edge").first
            assert await edge.get_attribute("data-edge-type") in ("Semantic", "Temporal", "Causal", "Hierarchical",
                                                                  "Relational")
            await graph.locator(f"g.node[data-node-id='{other}'] circle").click()
            await graph.locator("g.node").nth(2).wait_for()
            assert await graph.locator("g.node").count() == 3
            assert await graph.locator(f"g.node.expanded[data-node-id='{other}']").count() == 1
            # a click on an expanded node opens its page
            await graph.locator(f"g.node[data-node-id='{other}'] circle").click()
            await page.locator("#memory-page [data-field='memory-id']").filter(has_text=other).wait_for()
            await shoot(page, tmp_path, "search")
            assert errors == []


async def test_merge_duplicates_from_the_ui_then_restore(dash_app, tmp_path):
    async with serving(dash_app) as base, Client(base + "/mcp", mode="legacy") as client:
        a, b = await store(client, DEPLOY), await store(client, DEPLOY2)
        await store(client, OTHER)
        duplicates = (await call(client, "get_memetic_status"))["curation_tasks"]["duplicates"]
        assert sorted(duplicates[0]["memories"]) == sorted([a, b])
        async with browser_page(tmp_path) as (page, _requests, errors):
            await page.goto(base + "/dashboard?live=0")
            task = page.locator("#duplicates [data-task='duplicate']").first
            await task.locator("button.merge").click()
            dialog = page.locator("#rationale-dialog")
            await dialog.wait_for()
            # the rationale rule holds for a click: too short → the dispatcher's -32602/-32009 in the dialog
            await page.fill("#rationale-text", "dup")
            await page.click("#rationale-confirm")
            await page.locator("#rationale-error").filter(has_text="code").wait_for()
            assert "rationale" in (await page.locator("#rationale-error").text_content() or "")
            assert (await call(client, "get_memetic_status"))["fingerprintCount"] == 3  # nothing changed
            await page.fill("#merge-target-name", "Deploy failure: migration timeout")
            await page.fill("#rationale-text", "the same incident stored twice by two hooks")
            await page.click("#rationale-confirm")
            message = page.locator("#curation-message")
            await message.filter(has_text="Merged").wait_for()
            merged_id = (await message.text_content() or "").split(" into ")[1].split(" ")[0]
            # through MCP: the sources are gone, the merged memory is live with the name given in the page
            status = await call(client, "get_memetic_status")
            assert status["fingerprintCount"] == 2
            merged = await call(client, "hydrate_citation", {"citation_tag": f"[node_{merged_id}]"})
            assert merged["node_id"] == merged_id
            for source in (a, b):
                lineage = await call(client, "get_node_lineage", {"node_id": source})
                assert lineage["status"] != "live"
                assert any(e["event"] == "merged_into" and e["into"] == merged_id for e in lineage["events"])
            assert not status["curation_tasks"]["duplicates"]
            # the page refreshed its panels: no duplicate task left, the tombstones list the sources
            await page.locator("#duplicates .note").wait_for()
            tombstones = await call(client, "search_tombstones")
            assert {t["id"] for t in tombstones["tombstones"]} >= {a, b}
            await page.locator("#tombstones tr[data-tombstone]").first.wait_for()
            await shoot(page, tmp_path, "merged")
            # restore from the tombstones list undoes the merge
            await page.locator("#tombstones button.restore").first.click()
            await message.filter(has_text="Restored").wait_for()
            after = await call(client, "get_memetic_status")
            assert after["fingerprintCount"] == 3
            assert (await call(client, "get_node_lineage", {"node_id": a}))["status"] == "live"
            assert errors == [] or all("400" in e or "Bad Request" in e for e in errors)  # the refused first try


async def test_live_page_streams_and_the_oscillators_move(dash_app, tmp_path):
    async with serving(dash_app) as base, Client(base + "/mcp", mode="legacy") as client:
        await store(client, DEPLOY)
        async with browser_page(tmp_path) as (page, requests, errors):
            await page.goto(base + "/dashboard")
            await page.locator("#live-status[data-state='live']").wait_for()
            assert [u for u in requests if u.endswith("/dashboard/api/stream")]
            dot = page.locator("#kuramoto-svg [data-osc-dot='9'] circle")  # E9 turns fastest
            first = await dot.get_attribute("cx"), await dot.get_attribute("cy")
            await page.wait_for_timeout(300)
            # the agent's clock (D23): the oscillators hold between operations; a store below moves them
            assert (await dot.get_attribute("cx"), await dot.get_attribute("cy")) == first
            # a memory stored through MCP reaches the page with the next push of the stream, and moves the network
            phase = await page.locator("[data-oscillator='1']").text_content()
            await store(client, OTHER)
            count = page.locator("[data-metric='memory_count']")
            await count.filter(has_text="2").wait_for(timeout=15_000)
            assert await count.get_attribute("data-value") == "2"
            await page.locator("#recent-list li[data-memory-id]").nth(1).wait_for()  # the list follows
            await page.locator("[data-oscillator='1']").filter(has_not_text=phase or "").wait_for(timeout=15_000)
            await shoot(page, tmp_path, "live")
            assert errors == []
