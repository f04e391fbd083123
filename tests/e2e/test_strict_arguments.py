"""Issue 12 item 5 (and issue 11 item 8), through the real dispatcher: every argument must have its JSON type
("5" or true is not an integer, "yes" is not a boolean) while JSON's own conversions still hold (an integer for
a number, an array for a tuple, an ISO string for a datetime); whitespace-only text is refused naming the
field; every memory-id argument takes a UUID with or without hyphens and hands the handler the stored form."""

import uuid
from typing import Annotated

import pytest

from contextgraph.tools.dispatch import ToolCallFailed
from contextgraph.tools.spec import Args
from contextgraph.tools.validation import NOT_BLANK, MemoryId

pytestmark = pytest.mark.anyio
WHY = "testing the argument rules"


async def _refused(call, name, arguments) -> dict:
    with pytest.raises(ToolCallFailed) as info:
        await call(name, arguments)
    assert info.value.code == -32602, info.value.message
    return {"field": info.value.data["field"], "message": info.value.message}


@pytest.mark.parametrize("name, arguments, field", [
    ("search_graph", {"query": "deploy", "top_k": "5"}, "top_k"),
    ("search_graph", {"query": "deploy", "top_k": True}, "top_k"),
    ("search_graph", {"query": "deploy", "topK": "5"}, "top_k"),  # the second spelling too
    ("search_graph", {"query": "deploy", "include_breakdown": "yes"}, "include_breakdown"),
    ("search_graph", {"query": "deploy", "include_breakdown": 1}, "include_breakdown"),
    ("search_graph", {"query": "deploy", "min_similarity": "0.5"}, "min_similarity"),
    ("get_recent_context", {"session_only": "true"}, "session_only"),
    ("get_recent_context", {"limit": 5.0}, "limit"),
    ("tool_find", {"query": "scratch", "limit": "2"}, "limit"),
])
async def test_arguments_must_have_their_json_type(call, name, arguments, field):
    assert (await _refused(call, name, arguments))["field"] == field


@pytest.mark.parametrize("name, arguments, field", [
    ("store_memory", {"content": " \n\t ", "rationale": WHY}, "content"),
    ("inject_context", {"content": "\u00a0 \u2003", "rationale": WHY}, "content"),
    ("search_graph", {"query": "   "}, "query"),
    ("tool_find", {"query": "\t\t"}, "query"),
])
async def test_whitespace_only_text_is_refused_naming_the_field(call, name, arguments, field):
    refused = await _refused(call, name, arguments)
    assert refused["field"] == field and "whitespace" in refused["message"]


async def test_json_conversions_still_hold(call):
    # an integer where a number is due, an ISO string for a datetime
    found = await call("search_graph", {"query": "deploy", "min_similarity": 0, "top_k": 3})
    assert found.payload["count"] == 0
    recent = await call("get_recent_context", {"since": "2024-01-01T00:00:00Z", "session_only": True})
    assert recent.payload["count"] == 0


def test_arrays_validate_into_tuple_fields():
    class TupleArgs(Args):
        names: tuple[str, ...]
        ids: tuple[MemoryId, ...] = ()
        weight: float = 0.0
        note: Annotated[str | None, NOT_BLANK] = None

    hex_id = uuid.uuid4().hex
    args = TupleArgs.model_validate({"names": ["a", "b"], "ids": [str(uuid.UUID(hex_id)).upper()], "weight": 1})
    assert args.names == ("a", "b") and args.ids == (hex_id,) and args.weight == 1.0
    with pytest.raises(ValueError):
        TupleArgs.model_validate({"names": ["a", 5]})


async def test_memory_ids_with_or_without_hyphens(call):
    stored = await call("store_memory", {"content": "The release train leaves every second Tuesday.",
                                         "rationale": WHY})
    node = stored.payload["id"]
    hyphenated = str(uuid.UUID(node))
    for spelling in (node, hyphenated, hyphenated.upper()):
        lineage = await call("get_node_lineage", {"node_id": spelling})
        assert lineage.payload["node_id"] == node, spelling
        neighbours = await call("get_neighborhood", {"node_id": spelling})
        assert neighbours.payload["count"] >= 0
    boosted = await call("boost_importance", {"node_id": hyphenated, "delta": 0.1, "rationale": WHY})
    assert boosted.payload["node_id"] == node
    # get_johari_classification takes the seeds' `node_id` as well as `memory_id` (issue 11 item 8)
    by_memory_id = await call("get_johari_classification", {"memory_id": node})
    by_node_id = await call("get_johari_classification", {"node_id": hyphenated.upper()})
    assert by_node_id.payload["memory_id"] == by_memory_id.payload["memory_id"] == node
    assert (await _refused(call, "get_node_lineage", {"node_id": "not-a-uuid"}))["field"] == "node_id"
