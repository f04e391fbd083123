"""The lexical stage through the real pipeline and a real store (SPEC D21): BM25 over the shared analyzer finds
inflections and identifier parts, and the tombstone search uses the same analyzer."""

import pytest

pytestmark = pytest.mark.anyio
WHY = "worth keeping for the project"
MEMORIES = [
    "Sent the invoices for October to ACME on Friday.",
    "def parse_args(argv):\n    parser = build_parser()\n    return parser.parse_args(argv)",
    "The getHTTPResponse helper retries twice on a 503 before giving up.",
    "Sourdough needs a starter fed with flour and water every day.",
]


async def store_all(call):
    ids = []
    for text in MEMORIES:
        out = (await call("store_memory", {"content": text, "rationale": WHY})).payload
        ids.append(out["id"])
    return ids


async def test_bm25_finds_inflections_and_identifier_parts(call):
    ids = await store_all(call)
    for query, expected in (("invoice", 0), ("parse arguments", 1), ("http response", 2), ("getHTTPResponse", 2)):
        out = (await call("search_graph", {"query": query, "top_k": 4, "include_breakdown": True})).payload
        sparse_first = [r["id"] for r in out["results"] if r["space_ranks"]["sparse"] == 1]
        assert sparse_first == [ids[expected]], (query, out["results"])


async def test_tombstone_search_matches_inflections(call):
    ids = await store_all(call)
    await call("forget_concept", {"node_id": ids[0], "reason": "obsolete", "rationale": WHY})
    found = (await call("search_tombstones", {"query": "invoice"})).payload
    assert [t["id"] for t in found["tombstones"]] == [ids[0]]
