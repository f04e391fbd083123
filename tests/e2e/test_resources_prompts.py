"""MCP resources, prompts and completion (issue 13.5) through the `mcp` SDK client, in both protocol eras, on
real memories: the status, recent and per-memory resources, the status subscription, the three prompts, and
completion of memory ids, tags and sessions."""

import json

import anyio
import mcp.types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from contextgraph.server import build_server

pytestmark = pytest.mark.anyio
MODES = ["legacy", "2026-07-28"]
WHY = "worth keeping for the project"
DEPLOY = "The deploy failed because the database migration timed out after 30 seconds."
DEPLOY2 = "The deploy failed since the database migration hit its 30 second timeout."
BREAD = "Sourdough needs a starter fed with flour and water every day."


async def store(client, content, **extra):
    result = await client.call_tool("store_memory", {"content": content, "rationale": WHY, **extra})
    assert result.is_error is False, result.structured_content
    return result.structured_content["id"]


def json_of(read):
    (contents,) = read.contents
    assert contents.mime_type == "application/json"
    return json.loads(contents.text)


@pytest.mark.parametrize("mode", MODES)
async def test_resources_list_read_and_template(app, mode):
    async with Client(build_server(app), mode=mode) as client:
        if mode == "legacy":  # (the in-memory discover mode synthesises its capabilities client-side)
            caps = client.server_capabilities
            assert caps.resources is not None and caps.prompts is not None and caps.completions is not None
        assert {r.uri for r in (await client.list_resources()).resources} == {
            "contextgraph://status", "contextgraph://recent"}
        (template,) = (await client.list_resource_templates()).resource_templates
        assert template.uri_template == "contextgraph://memory/{id}"
        first = await store(client, DEPLOY, tags=["deploy", "database"], session_id="s1")
        await store(client, BREAD, tags=["baking"], session_id="s2")
        status = json_of(await client.read_resource("contextgraph://status"))
        assert status["fingerprintCount"] == 2 and set(status["_cognitive_pulse"]) >= {"quadrant"}
        recent = json_of(await client.read_resource("contextgraph://recent"))
        assert [m["content"] for m in recent["memories"]] == [BREAD, DEPLOY]
        memory = json_of(await client.read_resource(f"contextgraph://memory/{first}"))
        assert memory["node_id"] == first and memory["content"] == DEPLOY and memory["tags"] == ["deploy", "database"]
        by_prefix = json_of(await client.read_resource(f"contextgraph://memory/{first[:10]}"))
        assert by_prefix["node_id"] == first
        with pytest.raises(MCPError) as info:
            await client.read_resource("contextgraph://memory/" + "0" * 32)
        assert info.value.error.code == -32602 and "Resource not found" in info.value.error.message
        with pytest.raises(MCPError):
            await client.read_resource("contextgraph://nothing")


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")  # handshake-era subscribe
async def test_status_subscription_notifies_after_a_memory_operation(app):
    updated = anyio.Event()
    uris = []

    async def on_message(message):
        if isinstance(message, types.ResourceUpdatedNotification):
            uris.append(message.params.uri)
            if message.params.uri == "contextgraph://status":
                updated.set()

    async with Client(build_server(app), mode="legacy", message_handler=on_message) as client:
        assert client.server_capabilities.resources.subscribe is True
        await client.subscribe_resource("contextgraph://memory/" + "0" * 32)  # honoured; it never fires
        await client.subscribe_resource("contextgraph://status")
        await client.call_tool("tool_active", {})  # discovery tools do not change the status
        assert not updated.is_set()
        await store(client, DEPLOY)
        with anyio.fail_after(5):
            await updated.wait()
        assert uris == ["contextgraph://status"]  # not recent: this client did not subscribe to it
        await client.unsubscribe_resource("contextgraph://status")
        await store(client, BREAD)
        await client.call_tool("tool_active", {})  # a round trip after the store, so a stray update would be here
        assert uris == ["contextgraph://status"]


async def test_status_updates_reach_a_discover_mode_listener(app):
    async with Client(build_server(app), mode="2026-07-28") as client:
        async with client.listen(resource_subscriptions=["contextgraph://status"]) as subscription:
            await store(client, DEPLOY)
            with anyio.fail_after(5):
                async for _event in subscription:
                    break


@pytest.mark.parametrize("mode", MODES)
async def test_prompts_and_completion(app, mode):
    async with Client(build_server(app), mode=mode) as client:
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        assert set(prompts) == {"recall", "curate_duplicates", "session_summary"}
        assert [(a.name, a.required) for a in prompts["recall"].arguments] == [("topic", True)]
        empty = await client.get_prompt("curate_duplicates")
        assert "Nothing to merge" in empty.messages[0].content.text
        first = await store(client, DEPLOY, tags=["deploy", "database"], session_id="ops-1")
        second = await store(client, DEPLOY2, tags=["deployment"], session_id="ops-1")
        await store(client, BREAD, tags=["baking"], session_id="kitchen")

        recall = await client.get_prompt("recall", {"topic": "why did the deploy fail"})
        text = recall.messages[0].content.text
        assert recall.messages[0].role == "user" and f"[node_{first[:8]}]" in text and "timed out" in text
        assert text.index("migration") < text.index("Sourdough") if "Sourdough" in text else True
        with pytest.raises(MCPError):
            await client.get_prompt("recall", {})  # topic is required
        with pytest.raises(MCPError):
            await client.get_prompt("no_such_prompt")

        summary = (await client.get_prompt("session_summary", {"session_id": "ops-1"})).messages[0].content.text
        assert "session ops-1 (2 memories" in summary and "Sourdough" not in summary and "store_memory" in summary
        duplicates = (await client.get_prompt("curate_duplicates")).messages[0].content.text
        assert "merge_concepts" in duplicates and first in duplicates and second in duplicates

        ids = await client.complete(types.ResourceTemplateReference(uri="contextgraph://memory/{id}"),
                                    {"name": "id", "value": first[:6]})
        assert first in ids.completion.values and all(v.startswith(first[:6]) for v in ids.completion.values)
        tags = await client.complete(types.PromptReference(name="recall"), {"name": "topic", "value": "dep"})
        assert set(tags.completion.values) == {"deploy", "deployment"}
        sessions = await client.complete(types.PromptReference(name="session_summary"),
                                         {"name": "session_id", "value": ""})
        assert set(sessions.completion.values) == {"ops-1", "kitchen"}
        nothing = await client.complete(types.PromptReference(name="recall"), {"name": "other", "value": ""})
        assert nothing.completion.values == []
