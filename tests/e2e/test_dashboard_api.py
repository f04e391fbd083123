"""The dashboard's HTTP surface without a browser: auth (401 without the token; ?token= sets an HttpOnly,
SameSite=Strict cookie for /dashboard only; the Authorization header), the Origin rule, and the JSON API's
refusals, which are the dispatcher's (-32602 naming the field, -32009, -32012) and leave the store as it was.
The browser's view of the same (cookie set by a navigation) is the last test."""

from __future__ import annotations

import json

import anyio
import httpx2
import pytest
from dashboard_helpers import WHY, browser_page, serving

from contextgraph.app import build_app

pytestmark = pytest.mark.anyio
TOKEN = "s3cret-token-for-the-dashboard"


@pytest.fixture
def make_dash_app(tmp_path, make_settings):
    apps = []

    def make(**env: str):
        app = build_app(make_settings(tmp_path / f"home{len(apps)}", CONTEXTGRAPH_PORT="0",
                                      CONTEXTGRAPH_HTTP_PORT="0", **env))
        apps.append(app)
        return app

    yield make
    for app in apps:
        app.close()


async def _store(app, content: str) -> str:
    outcome = await app.dispatcher.call("store_memory", {"content": content, "rationale": WHY}, app.tool_context())
    return outcome.payload["id"]


async def test_token_required_for_page_and_api(make_dash_app):
    app = make_dash_app(CONTEXTGRAPH_TOKEN=TOKEN)
    async with serving(app) as base, httpx2.AsyncClient(base_url=base) as http:
        for path in ("/dashboard", "/dashboard?live=0", "/dashboard/api/now", "/dashboard/api/history",
                     "/dashboard/api/stream", "/dashboard/static/dashboard.js"):
            refused = await http.get(path)
            assert refused.status_code == 401, path
            assert refused.headers["www-authenticate"].startswith("Bearer")
            assert refused.json()["error"] == "invalid_request"  # RFC 6750's body (issue 38.2)
            assert "/dashboard?token=" in refused.json()["error_description"]  # says how a browser gets in
        assert "/dashboard?token=" not in (await http.post("/mcp", json={})).json()["error_description"]
        assert (await http.get("/dashboard?token=wrong")).status_code == 401
        # the token is accepted in the query of the page only, never on the API
        assert (await http.get(f"/dashboard/api/now?token={TOKEN}")).status_code == 401
        refused_post = await http.post("/dashboard/api/curation/forget", json={"node_id": "x"})
        assert refused_post.status_code == 401
        # the Authorization header works everywhere
        bearer = {"authorization": f"Bearer {TOKEN}"}
        assert (await http.get("/dashboard/api/now", headers=bearer)).status_code == 200
        page = await http.get("/dashboard?live=0", headers=bearer)
        assert page.status_code == 200 and 'data-metric="memory_count"' in page.text


async def test_query_token_sets_a_strict_httponly_cookie_for_the_dashboard_only(make_dash_app):
    app = make_dash_app(CONTEXTGRAPH_TOKEN=TOKEN)
    async with serving(app) as base, httpx2.AsyncClient(base_url=base) as http:
        opened = await http.get(f"/dashboard?live=0&token={TOKEN}")
        assert opened.status_code == 303
        assert opened.headers["location"] == "/dashboard?live=0"  # the token leaves the URL
        cookie = opened.headers["set-cookie"]
        for part in ("HttpOnly", "SameSite=Strict", "Path=/dashboard", "Max-Age="):
            assert part in cookie
        value = cookie.split(";")[0]
        assert TOKEN not in value  # an HMAC of the token, not the token
        jar = {"cookie": value}
        assert (await http.get("/dashboard?live=0", headers=jar)).status_code == 200
        assert (await http.get("/dashboard/api/now", headers=jar)).status_code == 200
        assert (await http.get("/dashboard/api/recent", headers=jar)).status_code == 200
        # the cookie opens nothing outside /dashboard
        assert (await http.get("/health", headers=jar)).status_code == 401
        assert (await http.post("/mcp", headers=jar, json={})).status_code == 401
        # a forged cookie is no credential
        assert (await http.get("/dashboard/api/now", headers={"cookie": "contextgraph_dashboard=" + "0" * 64})
                ).status_code == 401


async def test_cross_origin_requests_are_refused(make_dash_app):
    app = make_dash_app()
    async with serving(app) as base, httpx2.AsyncClient(base_url=base) as http:
        evil = {"origin": "https://evil.example", "content-type": "application/json"}
        forged = await http.post("/dashboard/api/curation/forget", headers=evil,
                                 content=b'{"node_id": "x", "reason": "obsolete", "rationale": "cross-site forgery"}')
        assert forged.status_code == 403
        assert (await http.get("/dashboard/api/now", headers={"origin": "https://evil.example"})).status_code == 403
        assert (await http.get("/dashboard/api/now", headers={"origin": base})).status_code == 200


async def test_api_refusals_are_the_dispatchers_and_change_nothing(make_dash_app):
    app = make_dash_app()
    a = await _store(app, "The deploy failed because the database migration timed out after 30 seconds.")
    b = await _store(app, "Kuramoto oscillators synchronise once the coupling exceeds a critical value.")
    async with serving(app) as base, httpx2.AsyncClient(base_url=base) as http:
        bad = await http.get("/dashboard/api/search", params={"q": "deploy", "top_k": "0"})
        assert bad.status_code == 400
        error = bad.json()["error"]
        assert error["code"] == -32602 and error["data"]["field"] == "top_k"
        assert error["data"]["min"] == 1 and error["data"]["max"] == 100
        not_a_number = (await http.get("/dashboard/api/search", params={"q": "deploy", "top_k": "many"})).json()
        assert not_a_number["error"]["data"]["field"] == "top_k"
        unknown = await http.get("/dashboard/api/memory/" + "f" * 32)
        assert unknown.status_code == 404 and unknown.json()["error"]["code"] == -32012
        assert "traceback" not in unknown.text.lower()
        no_rationale = await http.post("/dashboard/api/curation/merge", json={"source_node_ids": [a, b],
                                                                               "target_name": "x"})
        assert no_rationale.status_code == 400
        assert no_rationale.json()["error"]["code"] == -32009
        assert no_rationale.json()["error"]["data"]["field"] == "rationale"
        extra = await http.post("/dashboard/api/curation/forget", json={"node_id": a, "reason": "obsolete",
                                                                         "rationale": WHY, "force": True})
        assert extra.status_code == 400 and extra.json()["error"]["data"]["field"] == "force"
        not_json = await http.post("/dashboard/api/curation/forget", content=b"node_id=a",
                                   headers={"content-type": "application/x-www-form-urlencoded"})
        assert not_json.status_code == 400 and not_json.json()["error"]["data"]["field"] == "body"
        assert (await http.post("/dashboard/api/curation/boost", json={})).status_code == 404
        # none of that touched the store; the pulse rides on every refusal
        now = (await http.get("/dashboard/api/now")).json()
        assert now["metrics"]["memory_count"] == 2
        assert set(no_rationale.json()["_cognitive_pulse"]) >= {"entropy", "coherence", "learning_score"}
        # and a valid forget does change it, through forget_concept
        done = await http.post("/dashboard/api/curation/forget", json={"node_id": a, "reason": "obsolete",
                                                                        "rationale": WHY})
        assert done.status_code == 200 and done.json()["tool"] == "forget_concept"
        assert len(done.json()["reversal_hash"]) == 64
        assert (await http.get("/dashboard/api/now")).json()["metrics"]["memory_count"] == 1


async def test_api_panels_and_history(make_dash_app):
    app = make_dash_app()
    first = await _store(app, "The deploy failed because the database migration timed out after 30 seconds.")
    async with serving(app) as base, httpx2.AsyncClient(base_url=base) as http:
        found = (await http.get("/dashboard/api/search", params={"q": "deploy failure", "breakdown": "1"})).json()
        assert found["results"][0]["id"] == first and "space_ranks" in found["results"][0]
        page = (await http.get("/dashboard/api/memory/" + first[:8])).json()  # an id prefix is enough
        assert page["memory"]["node_id"] == first and len(page["johari"]["quadrants"]) == 13
        assert page["lineage"]["events"][0]["event"] == "created"
        recent = (await http.get("/dashboard/api/recent", params={"limit": "5"})).json()
        assert [m["id"] for m in recent["memories"]] == [first]
        history = (await http.get("/dashboard/api/history")).json()
        assert history["calls"]["store"]["total"] == 1 and history["calls"]["search"]["total"] == 1
        assert history["sample_count"] >= 1
        assert len(history["samples"]["t"]) == len(history["samples"]["entropy"]) == history["sample_count"]
        now = (await http.get("/dashboard/api/now")).json()
        assert now["neuromodulation"]["available"] is (app.registry.specs.get("get_neuromodulation_state") is not None)
        assert now["kuramoto"]["phases"] == now["metrics"]["oscillators"]


async def test_browser_presents_the_token_once(make_dash_app, tmp_path):
    app = make_dash_app(CONTEXTGRAPH_TOKEN=TOKEN)
    async with serving(app) as base, browser_page(tmp_path) as (page, _requests, _errors):
        refused = await page.goto(base + "/dashboard?live=0")
        assert refused is not None and refused.status == 401
        statuses: list[tuple[str, int]] = []
        page.on("response", lambda r: statuses.append((r.url, r.status)))
        opened = await page.goto(base + f"/dashboard?live=0&token={TOKEN}")
        assert opened is not None and opened.status == 200
        assert page.url == base + "/dashboard?live=0"
        await page.locator("body[data-rendered='1']").wait_for(state="attached")
        cookies = await page.context.cookies()
        session = [c for c in cookies if c["name"] == "contextgraph_dashboard"]
        assert session and session[0]["httpOnly"] and session[0]["sameSite"] == "Strict"
        assert session[0]["path"] == "/dashboard"
        # the page's own API calls ride on the cookie
        await page.fill("#search-q", "anything")
        await page.click("#search-form button[type=submit]")
        await page.locator("#search-results .note").filter(has_text="result").wait_for()
        assert all(status != 401 for url, status in statuses if "/dashboard" in url), statuses


async def test_live_stream_pushes_now_and_ends_cleanly_at_shutdown(make_dash_app):
    app = make_dash_app()
    await _store(app, "The deploy failed because the database migration timed out after 30 seconds.")
    events: list[str] = []
    ended = anyio.Event()

    async def read_stream(base: str, first: anyio.Event) -> None:
        async with httpx2.AsyncClient(base_url=base, timeout=30) as http:
            async with http.stream("GET", "/dashboard/api/stream") as response:
                assert response.status_code == 200
                assert response.headers["content-type"].startswith("text/event-stream")
                async for line in response.aiter_lines():  # raises if the server cuts the stream mid-way
                    if line.startswith("event: "):
                        events.append(line.removeprefix("event: "))
                    if line.startswith("data: ") and events[-1:] == ["now"]:
                        assert json.loads(line.removeprefix("data: "))["metrics"]["memory_count"] == 1
                        first.set()
        ended.set()

    async with anyio.create_task_group() as tg:
        async with serving(app) as base:
            first = anyio.Event()
            tg.start_soon(read_stream, base, first)
            with anyio.fail_after(30):
                await first.wait()
        # serving() has shut the server down: the stream was ended by the server, not cut
        with anyio.fail_after(30):
            await ended.wait()
    assert events[:2] == ["now", "history"]
