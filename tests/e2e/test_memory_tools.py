"""The core memory tools end to end through the `mcp` SDK client (in memory), on real LMDB, real indexes and
the real ONNX transformer."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from engine_waits import settled_pulse
from mcp import Client
from tool_errors import refusal

from contextgraph.app import build_app
from contextgraph.server import build_server

pytestmark = pytest.mark.anyio
RATIONALE = "worth keeping for the project"
MEMORIES = [
    ("The deploy failed because the database migration timed out after 30 seconds.", "text"),
    ("Run pytest -x to stop at the first failing test.", "text"),
    ("def fibonacci(n):\n    return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)", "code"),
    ("Kuramoto oscillators synchronise once the coupling exceeds a critical value.", "text"),
    ("The team prefers squash merges so that main keeps one commit per feature.", "text"),
]


async def store(client, content, modality="text", **extra):
    result = await client.call_tool("store_memory", {"content": content, "rationale": RATIONALE,
                                                     "modality": modality, **extra})
    return result.structured_content


async def test_store_then_search_finds_it(client):
    ids = [(await store(client, text, modality))["id"] for text, modality in MEMORIES]
    assert len(set(ids)) == len(ids)
    for query, expected in [("why did the deploy fail", 0), ("recursive function in python", 2),
                            ("how do I run the tests", 1), ("coupled oscillators synchronisation", 3)]:
        out = (await client.call_tool("search_graph", {"query": query, "top_k": 3})).structured_content
        assert out["results"][0]["id"] == ids[expected], (query, out["results"])
        assert set(out["_cognitive_pulse"]) >= {"entropy", "coherence", "quadrant"}


async def test_search_says_when_nothing_relevant_was_found(client, app):
    """Issue 38.6: an unrelated query still gets the nearest memories (a 0.29 score at similarity ~0), ranked as
    ever; the answer now says that none of them is relevant (every similarity under retrieval.relevance_floor,
    measured by benchmarks/bench_relevance_floor.py)."""
    for text, modality in MEMORIES:
        await store(client, text, modality)
    floor = app.constitution.get("retrieval.relevance_floor")
    for query in ("What is the capital of Mongolia?", "How long should I boil an egg for a soft yolk?"):
        out = (await client.call_tool("search_graph", {"query": query, "top_k": 3})).structured_content
        assert out["count"] == 3 and out["nothing_relevant"] is True  # results kept, flagged
        assert all(r["similarity"] < floor for r in out["results"])
        assert out["relevance"].startswith("Nothing relevant found") and f"below {floor:g}" in out["relevance"]
    related = (await client.call_tool("search_graph", {"query": "why did the deploy fail", "top_k": 3})
               ).structured_content
    assert related["nothing_relevant"] is False and "relevance" not in related
    assert related["results"][0]["similarity"] >= floor


async def test_store_memory_moves_the_pulse(client, app):
    """SPEC D16: store_memory, the main tool, updates the pulse (it stayed at entropy 1, coherence 0 before).
    Its UTL is computed after the answer (D24), so the pulse compared is the settled one the next answer shows."""
    await store(client, MEMORIES[0][0])
    pulses = [await settled_pulse(app)]
    for text, modality in MEMORIES[1:]:
        await store(client, text, modality)
        pulses.append(await settled_pulse(app))
    # an exact duplicate (from another session: in the same one it would be taken for a retry): familiar, so
    # entropy falls
    await store(client, MEMORIES[0][0], session_id="another")
    assert (await settled_pulse(app))["entropy"] < pulses[-1]["entropy"]
    assert len({(p["entropy"], p["coherence"], p["learning_score"]) for p in pulses}) == len(pulses)


async def test_search_options(client):
    for text, modality in MEMORIES:
        await store(client, text, modality)
    camel = (await client.call_tool("search_graph", {"query": "fibonacci", "topK": 2})).structured_content
    snake = (await client.call_tool("search_graph", {"query": "fibonacci", "top_k": 2})).structured_content
    assert [r["id"] for r in camel["results"]] == [r["id"] for r in snake["results"]] and camel["count"] == 2
    code_only = (await client.call_tool("search_graph", {"query": "tests", "modality": "code"})).structured_content
    assert [r["modality"] for r in code_only["results"]] == ["code"]
    strict = (await client.call_tool("search_graph", {"query": "fibonacci recursion", "minSimilarity": 0.3})
              ).structured_content
    assert strict["results"] and all(r["similarity"] >= 0.3 for r in strict["results"])
    assert len(strict["results"]) < len(MEMORIES)
    detail = (await client.call_tool("search_graph", {"query": "deploy", "include_breakdown": True})
              ).structured_content
    assert set(detail["stages_ms"]) >= {"embed_query", "s1_sparse_prefilter", "s2_dense_ann", "s3_rrf_fusion",
                                        "s4_purpose", "s5_maxsim_rerank"}
    assert detail["stage4"] == {"active": False, "reason": detail["stage4"]["reason"]} and "north star" in \
        detail["stage4"]["reason"]
    assert len(detail["results"][0]["space_ranks"]) == 13
    info = await refusal(client, "search_graph", {"query": "x", "topK": 101})
    assert info.code == -32602 and info.data["max"] == 100
    info = await refusal(client, "search_graph", {"query": "x", "topK": 3, "top_k": 4})
    assert info.code == -32602


async def test_empty_store_search_says_so(client):
    out = (await client.call_tool("search_graph", {"query": "anything"})).structured_content
    assert out["results"] == [] and "empty" in out["message"]


async def test_pii_is_redacted_before_storage(client, app):
    out = await store(client, "Deploy with key sk-proj-abcdEFGH1234ijklMNOP5678 and password: hunter2hunter")
    assert out["redacted"] == ["api_key", "password"] and "message" in out
    record = app.services.storage.store.get(out["id"])
    assert "sk-proj" not in record.content and "hunter2hunter" not in record.content
    assert "[REDACTED:api_key]" in record.content
    found = (await client.call_tool("search_graph", {"query": "deploy key"})).structured_content
    assert "sk-proj" not in json.dumps(found)


async def test_store_errors(client, app):
    info = await refusal(client, "store_memory", {"content": "no reason given"})
    assert info.code == -32009
    info = await refusal(client, "store_memory", {"content": "x" * 65537, "rationale": RATIONALE})
    assert info.code == -32602 and info.data["max_length"] == 65536
    info = await refusal(client, "store_memory", {"content": "c", "rationale": RATIONALE, "modality": "video"})
    assert "text" in info.data["allowed"]
    info = await refusal(client, "store_memory", {"content": "c", "rationale": RATIONALE, "link_to": ["0" * 32]})
    assert info.code == -32012 and info.data["missing"] == ["0" * 32]
    assert app.services.storage.store.count() == 0  # failed calls left the store as it was


async def test_a_retried_store_returns_the_memory_instead_of_a_copy(client, app):
    """store_memory is idempotent for a while: the same content in the same session again (a client retrying
    after an error it could not interpret) gets the stored memory back, marked, and the store holds one."""
    first = await store(client, MEMORIES[0][0], tags=["deploy"])
    again = await store(client, MEMORIES[0][0], tags=["deploy"])
    assert again["id"] == first["id"] and again["deduplicated"] is True and "deduplicated" not in first
    assert again["created_at"] == first["created_at"] and again["tags"] == ["deploy"]
    store_ = app.services.storage.store
    assert store_.count() == 1
    elsewhere = await store(client, MEMORIES[0][0], session_id="another")  # another session keeps its own
    assert elsewhere["id"] != first["id"] and "deduplicated" not in elsewhere
    forgotten = await client.call_tool("forget_concept", {"node_id": first["id"], "reason": "obsolete",
                                                          "rationale": RATIONALE})
    assert not forgotten.is_error
    anew = await store(client, MEMORIES[0][0])  # what was forgotten since is not handed back: stored anew
    assert anew["id"] not in (first["id"], elsewhere["id"]) and "deduplicated" not in anew
    assert store_.count() == 2


async def test_links_and_importance_are_kept(client, app):
    first = await store(client, "The cache layer sits in front of Postgres.")
    second = await store(client, "Cache invalidation happens on every write.", link_to=[first["id"]],
                         importance=0.9, tags=["cache", "db", "cache"])
    record = app.services.storage.store.get(second["id"])
    assert record.links == (first["id"],) and record.importance == 0.9 and record.tags == ("cache", "db")


async def test_inject_context_reports_utl_and_related(client, app):
    for text, modality in MEMORIES:
        await store(client, text, modality)
    before = app.services.cognition.pulse()
    out = (await client.call_tool("inject_context", {
        "content": "Long database migrations make deploys fail; run them before the release.",
        "rationale": "lesson from the incident", "related_k": 3})).structured_content
    utl = out["utl"]
    assert len(utl["delta_s"]) == 13 and all(0.0 <= v <= 1.0 for v in utl["delta_s"].values())
    assert 0.0 <= utl["entropy"] <= 1.0 and 0.0 <= utl["learningScore"] <= 1.0
    assert out["related"][0]["content"].startswith("The deploy failed")
    assert len(out["related"]) == 3 and out["id"] not in [r["id"] for r in out["related"]]
    assert app.services.cognition.pulse()["entropy"] < before["entropy"]  # the pulse now reflects real operations


async def test_novel_content_is_more_novel_than_a_near_duplicate(client):
    for text, modality in MEMORIES:
        await store(client, text, modality)
    duplicate = (await client.call_tool("inject_context", {"content": MEMORIES[3][0], "rationale": RATIONALE})
                 ).structured_content["utl"]
    novel = (await client.call_tool("inject_context", {
        "content": "Sourdough needs a starter fed with flour and water every day.", "rationale": RATIONALE})
             ).structured_content["utl"]
    # kNN novelty averages the k=5 nearest (SPEC §8), so in a 5-memory store 4 unrelated ones dilute it
    assert novel["delta_s"]["semantic"] > duplicate["delta_s"]["semantic"] + 0.15


async def test_manifest_reports_what_runs(client, app):
    await store(client, "A memory for the manifest.")
    out = (await client.call_tool("get_graph_manifest", {})).structured_content
    layers = out["layers"]
    assert set(layers) == {"perception", "memory", "reasoning", "meta", "action"}
    embedders = layers["perception"]["embedders"]
    assert [e["space"] for e in embedders] == list(range(1, 14))
    assert embedders[0]["dim"] == 384 and "MiniLM" in embedders[0]["method"]
    assert layers["memory"]["memories"] == 1
    assert layers["memory"]["indexes"]  # sizes per space
    assert layers["action"]["tools_registered"] == len(app.registry.specs)


async def test_a_second_process_sees_the_first_ones_memories(app, settings, tmp_path):
    """Two servers on one data directory (two Claude Code windows): each sees the other's writes on its next
    search, through the store's operation log."""
    async with Client(build_server(app), mode="legacy") as client:
        await store(client, "Memory written by the first process about green turtles.")
        script = Path(sys.executable).parent / "contextgraph"
        lines = [
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search_graph", "arguments": {
                "query": "green turtles"}}},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "store_memory", "arguments": {
                "content": "Memory written by the second process about red pandas.", "rationale": RATIONALE}}},
        ]
        env = {**os.environ, "CONTEXTGRAPH_HOME": str(settings.home),
               "CONTEXTGRAPH_MODEL_CACHE": str(settings.models_dir)}
        proc = subprocess.run([str(script), "serve"], input="\n".join(map(json.dumps, lines)) + "\n",
                              capture_output=True, text=True, env=env, timeout=120)
        responses = {r["id"]: r for r in map(json.loads, proc.stdout.splitlines())}
        seen = responses[1]["result"]["structuredContent"]["results"]
        assert seen and "green turtles" in seen[0]["content"]
        assert "result" in responses[2], responses[2]
        found = (await client.call_tool("search_graph", {"query": "red pandas"})).structured_content
        assert "red pandas" in found["results"][0]["content"]


async def store_all_and_search(app) -> list[str]:
    """MEMORIES stored through `app`, then the ids one search finds; the app is closed after."""
    async with Client(build_server(app), mode="legacy") as client:
        for text, modality in MEMORIES:
            await store(client, text, modality)
        found = (await client.call_tool("search_graph", {"query": "deploy failure"})).structured_content
    app.close()
    return [r["id"] for r in found["results"]]


async def search_reopened(settings) -> list[str]:
    """The ids the same search finds in a new app on the same data directory."""
    reopened = build_app(settings)
    try:
        async with Client(build_server(reopened), mode="legacy") as client:
            found = (await client.call_tool("search_graph", {"query": "deploy failure"})).structured_content
    finally:
        reopened.close()
    return [r["id"] for r in found["results"]]


async def test_reindex_rebuilds_what_search_uses(app, settings):
    before = await store_all_and_search(app)
    script = Path(sys.executable).parent / "contextgraph"
    out = subprocess.run([str(script), "reindex", "--home", str(settings.home)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "E1: 5" in out.stdout and "5/5" in out.stderr
    doctor = subprocess.run([str(script), "doctor", "--home", str(settings.home)], capture_output=True, text=True,
                            timeout=120)
    assert "5 memories, consistent" in doctor.stdout
    assert await search_reopened(settings) == before
