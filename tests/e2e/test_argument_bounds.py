"""Every free-text argument has a bound, and a call past it is refused with -32602 naming the field and the bound
before anything is stored: a client cannot make one memory (and every answer that lists it) megabytes large."""

import pytest
from tool_errors import refusal

pytestmark = pytest.mark.anyio
WHY = "checking the argument bounds"


async def call(client, name, args):
    return (await client.call_tool(name, args)).structured_content


@pytest.mark.parametrize("name", ["store_memory", "inject_context"])
async def test_megabytes_of_tags_are_refused_naming_the_bound(client, app, name):
    huge = ["x" * 120_000] * 32  # 3.8 MB in 32 tags: within the count, each far past its length
    refused = await refusal(client, name, {"content": "a note", "rationale": WHY, "tags": huge})
    assert refused.code == -32602 and refused.data["field"] == "tags" and refused.data["max_length"] == 64
    assert "tags.0" in refused.message and "64" in refused.message
    too_many = await refusal(client, name, {"content": "a note", "rationale": WHY, "tags": ["t"] * 33})
    assert too_many.code == -32602 and too_many.data["max_items"] == 32
    app.services.storage.open()
    assert app.services.storage.store.count() == 0


@pytest.mark.parametrize("name, arguments, field, bound", [
    ("annotate_node", {"node_id": "0" * 32, "annotations": {"tags": ["t" * 65]}}, "annotations", 64),
    ("annotate_node", {"node_id": "0" * 32, "annotations": {"related_concepts": ["c" * 257]}}, "annotations", 256),
    ("tool_load", {"names": ["n" * 129]}, "names", 128),
    ("get_ego_state", {"session_id": "s" * 129}, "session_id", 128),
    ("store_memory", {"content": "a note", "rationale": WHY, "session_id": "s" * 129}, "session_id", 128),
])
async def test_each_bounded_string_names_its_bound(client, name, arguments, field, bound):
    refused = await refusal(client, name, arguments)
    assert refused.code == -32602 and refused.data["field"] == field and refused.data["max_length"] == bound


async def test_too_many_edge_types_are_refused(client):
    refused = await refusal(client, "get_neighborhood", {"node_id": "0" * 32, "edge_types": ["Causal"] * 6})
    assert refused.code == -32602 and refused.data["max_items"] == 5


async def test_annotations_cannot_grow_a_memory_past_its_tag_bound(client):
    stored = await call(client, "store_memory", {"content": "The deploy failed on a timeout.", "rationale": WHY,
                                                 "tags": [f"t{i}" for i in range(30)]})
    ok = await call(client, "annotate_node", {"node_id": stored["id"], "annotations": {"tags": ["a", "b", "t1"]}})
    assert len(ok["tags"]) == 32  # t1 was there already
    refused = await refusal(client, "annotate_node", {"node_id": stored["id"], "annotations": {"tags": ["c"]}})
    assert refused.code == -32602 and refused.data["field"] == "annotations.tags"
    assert refused.data["max_items"] == 32 and "Nothing was changed" in refused.message
    # what was refused changed nothing; annotations that add no tag still work
    notes = await call(client, "annotate_node", {"node_id": stored["id"], "annotations": {"notes": "checked"}})
    assert len(notes["tags"]) == 32 and "c" not in notes["tags"]
    concepts = {"related_concepts": [f"c{i}" for i in range(32)]}
    await call(client, "annotate_node", {"node_id": stored["id"], "annotations": concepts})
    refused = await refusal(client, "annotate_node", {"node_id": stored["id"],
                                                      "annotations": {"related_concepts": ["one more"]}})
    assert refused.code == -32602 and refused.data["field"] == "annotations.related_concepts"


DEPLOY = "The deploy failed because the database migration timed out after 30 seconds. "
DEPLOY2 = "The deploy failed since the database migration hit its 30 second timeout. "


async def test_a_merge_keeps_a_memory_within_the_bounds_a_store_has(client, app):
    """A merged memory is a memory: its tags stop at the tag bound (the rest named in the answer) and a
    concatenation past the content bound is refused, changing nothing."""
    a = await call(client, "store_memory", {"content": DEPLOY, "rationale": WHY,
                                            "tags": [f"a{i}" for i in range(32)]})
    b = await call(client, "store_memory", {"content": DEPLOY2, "rationale": WHY,
                                            "tags": [f"b{i}" for i in range(32)]})
    merged = await call(client, "merge_concepts", {"source_node_ids": [a["id"], b["id"]], "target_name": "deploy",
                                                   "rationale": WHY})
    record = app.services.storage.store.get(merged["merged_id"])
    assert list(record.tags) == [f"a{i}" for i in range(32)]
    assert merged["tags_dropped"] == [f"b{i}" for i in range(32)]

    long_a = await call(client, "store_memory", {"content": DEPLOY * 500, "rationale": WHY})
    long_b = await call(client, "store_memory", {"content": DEPLOY2 * 500, "rationale": WHY})
    count = app.services.storage.store.count()
    refused = await refusal(client, "merge_concepts", {"source_node_ids": [long_a["id"], long_b["id"]],
                                                       "target_name": "deploy", "rationale": WHY,
                                                       "merge_strategy": "concatenate"})
    assert refused.code == -32602 and refused.data["field"] == "merge_strategy"
    assert refused.data["max_length"] == 65536 and "Nothing was changed" in refused.message
    assert app.services.storage.store.count() == count
