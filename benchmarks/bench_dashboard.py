"""The dashboard (issue 20): page weight, time to first render in Debian's headless chromium, and what each JSON
endpoint costs, on a store of --memories memories (stored through the dispatcher like any MCP call).

* page weight: bytes of the HTML (first snapshot included) and of the script and stylesheet files, as fetched;
* time to first render: from navigation start to the page's first complete drawing of every panel
  (`window.__dashboardFirstRenderMs`, set by dashboard.js once it has drawn the embedded snapshot), median and
  p95 over --loads loads of `/dashboard?live=0`; the server's snapshot (every panel's tool calls) is part of it;
* each endpoint's latency (httpx, sequential), median and p95 over --calls calls.

Timings are wall clock on a machine shared with other engineers' test runs: noisy, report them as such.

Run:  .venv/bin/python benchmarks/bench_dashboard.py [--memories 200] [--loads 15] [--calls 30]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import anyio
import httpx2
from _corpora import prose_corpus
from _stats import format_summary, summarize, write_result

from contextgraph.app import build_app
from contextgraph.config import Settings
from contextgraph.transports.network import serve_network

ENDPOINTS = ("now", "history", "recent", "curation", "search?q=package+manager+for+python&breakdown=1")


async def run(args: argparse.Namespace) -> dict:
    from playwright.async_api import async_playwright

    home = Path(tempfile.mkdtemp(prefix="bench-dashboard-"))
    app = build_app(Settings.from_env({"CONTEXTGRAPH_HOME": str(home), "CONTEXTGRAPH_LOG_LEVEL": "error",
                                       "CONTEXTGRAPH_HTTP_PORT": "0", "CONTEXTGRAPH_PORT": "0"}))
    texts = [item.document for item in prose_corpus().items[: args.memories]]
    ctx = app.tool_context("bench")
    for text in texts:
        await app.dispatcher.call("store_memory", {"content": text[:2000], "rationale": "dashboard benchmark"}, ctx)
    out: dict = {"memories": len(texts)}
    try:
        async with anyio.create_task_group() as tg:
            listening = await tg.start(serve_network, app, ("http",))
            host, port = listening.http
            base = f"http://{host}:{port}"
            async with httpx2.AsyncClient(base_url=base, timeout=60) as http:
                first = await http.get("/dashboard?live=0")
                weight = {"html": len(first.content)}
                for name in ("dashboard.js", "charts.js", "graph.js", "dashboard.css"):
                    weight[name] = len((await http.get(f"/dashboard/static/{name}")).content)
                out["page_weight_bytes"] = weight
                out["page_weight_kb"] = round(sum(weight.values()) / 1024, 1)
                print(f"page weight: {out['page_weight_kb']} KB  " +
                      ", ".join(f"{k} {v / 1024:.1f} KB" for k, v in weight.items()))
                endpoints = {}
                newest = (await http.get("/dashboard/api/recent")).json()["memories"][0]["id"]
                for endpoint in (*ENDPOINTS, f"memory/{newest}", f"neighbourhood/{newest}"):
                    times = []
                    for _ in range(args.calls):
                        started = time.perf_counter()
                        response = await http.get("/dashboard/api/" + endpoint)
                        times.append((time.perf_counter() - started) * 1000)
                        assert response.status_code == 200, response.text
                    endpoints[endpoint] = summarize(times)
                    print(format_summary(f"GET /dashboard/api/{endpoint}", endpoints[endpoint], "ms"))
                out["endpoints_ms"] = endpoints
            async with async_playwright() as pw:
                browser = await pw.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
                renders, loads, ttfb = [], [], []
                for _ in range(args.loads):
                    page = await browser.new_page(viewport={"width": 1400, "height": 1000})
                    started = time.perf_counter()
                    await page.goto(base + "/dashboard?live=0")
                    await page.locator("body[data-rendered='1']").wait_for(state="attached")
                    loads.append((time.perf_counter() - started) * 1000)
                    renders.append(float(await page.evaluate("window.__dashboardFirstRenderMs")))
                    ttfb.append(float(await page.evaluate(
                        "performance.getEntriesByType('navigation')[0].responseStart")))
                    await page.close()
                await browser.close()
            out["first_render_ms"] = summarize(renders)
            out["goto_to_rendered_ms"] = summarize(loads)
            out["first_byte_ms"] = summarize(ttfb)
            print(format_summary("first byte of the page (the server's snapshot)", out["first_byte_ms"], "ms"))
            print(format_summary("first render (navigation start → every panel drawn)", out["first_render_ms"], "ms"))
            print(format_summary("goto → rendered, measured by the driver", out["goto_to_rendered_ms"], "ms"))
            tg.cancel_scope.cancel()
    finally:
        app.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=200)
    parser.add_argument("--loads", type=int, default=15)
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    result = anyio.run(run, args)
    write_result("dashboard", {**result, "note": "wall clock on a shared, loaded machine: noisy"})


if __name__ == "__main__":
    main()
