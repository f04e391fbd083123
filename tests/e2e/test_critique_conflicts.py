"""critique_context's conflicts end to end (docs/tools.md#critique), through the `mcp` SDK client on real LMDB,
real indexes and the real ONNX transformer: a value conflict and a move are confirmed, each with a forget_concept
of the claim that no longer holds naming the one that does; a move stored before the claim it moved away from is
only possible (annotate_node); compatible memories on one topic (a manual and a usage tip, two checksum tools, a
move and the state it led to) are no conflict at all."""

import pytest

pytestmark = pytest.mark.anyio
WHY = "planting memories for critique_context"


async def call(client, name, args=None):
    result = await client.call_tool(name, args or {})
    assert not result.is_error, result.structured_content
    return result.structured_content


async def store(client, content):
    return (await call(client, "store_memory", {"content": content, "rationale": WHY}))["id"]


async def test_conflicts_are_precise_and_name_the_newer_claim(client):
    ttl_old = await store(client, "The session cache TTL is 30 minutes.")
    ttl_new = await store(client, "The session cache TTL is 45 minutes.")
    ci_old = await store(client, "Our CI pipeline runs on Jenkins.")
    ci_move = await store(client, "We moved our CI pipeline from Jenkins to GitHub Actions.")
    wiki_move = await store(client, "The team wiki migrated from Confluence to Notion.")
    wiki_old = await store(client, "The team wiki is hosted on Confluence.")
    for text in ("bzip2 compresses files with the Burrows-Wheeler transform.",
                 "Run tar -cjf backup.tar.bz2 docs/ to make a bzip2-compressed archive.",
                 "md5sum prints a 128-bit checksum for each file.",
                 "b2sum prints a 512-bit checksum for each file."):
        await store(client, text)
    ci_new = await store(client, "Our CI pipeline runs on GitHub Actions.")
    out = await call(client, "critique_context", {"context_window": 11, "check_types": ["conflicts", "outdated"]})
    conflicts = {frozenset(m["id"] for m in f["memories"]): f for f in out["findings"]["conflicts"]}
    assert set(conflicts) == {frozenset({ttl_old, ttl_new}), frozenset({ci_old, ci_move}),
                              frozenset({wiki_move, wiki_old}), frozenset({ci_old, ci_new})}
    ttl = conflicts[frozenset({ttl_old, ttl_new})]
    assert ttl["kind"] == "value" and ttl["confirmed"]
    assert ttl["action"] == {**ttl["action"], "tool": "forget_concept", "node_id": ttl_old, "keep": ttl_new,
                             "reason": "incorrect"}
    ci = conflicts[frozenset({ci_old, ci_move})]
    assert ci["kind"] == "supersession" and ci["current"] == ci_move
    assert ci["action"] == {**ci["action"], "node_id": ci_old, "reason": "obsolete", "keep": ci_move}
    assert conflicts[frozenset({ci_old, ci_new})]["action"]["keep"] == ci_new  # the move's new state agrees
    wiki = conflicts[frozenset({wiki_move, wiki_old})]  # the old state stored after the move: which holds?
    assert not wiki["confirmed"] and wiki["action"]["tool"] == "annotate_node"
    outdated = {f["memory"]["id"] for f in out["findings"]["outdated"] if "contradicted" in f["evidence"]}
    assert outdated == {ttl_old, ci_old}  # only a confirmed conflict makes a memory outdated
