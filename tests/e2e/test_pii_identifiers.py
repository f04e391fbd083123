"""PII in the identifiers a client names, end to end through the `mcp` SDK client on real LMDB: a session id is
stored on every memory and keys the session index, and an unknown tool or argument name is echoed in the error
and written to the log; none of them may carry an SSN, an email address or a phone number there."""

from __future__ import annotations

import json

import pytest
from tool_errors import refusal

pytestmark = pytest.mark.anyio
SSN, EMAIL, PHONE = "123-45-6789", "alice@example.com", "+1 415 555 0100"
RAW = [SSN, EMAIL, PHONE, "4155550100"]
WHY = "checking identifiers for PII"


def data_bytes(home) -> bytes:
    return b"".join(path.read_bytes() for path in sorted(home.rglob("*")) if path.is_file())


def leaked(value) -> list[str]:
    text = value if isinstance(value, str) else json.dumps(value)
    return [secret for secret in RAW if secret in text]


async def logs(client) -> list[dict]:
    return (await client.call_tool("get_system_logs", {"level": "debug", "limit": 1000})).structured_content["entries"]


async def test_a_session_id_is_redacted_before_it_is_stored_or_keys_the_index(client, app, settings):
    session = f"user {SSN} {EMAIL} {PHONE}"
    stored = (await client.call_tool("store_memory", {"content": "The deploy failed on a timeout.",
                                                      "rationale": WHY, "session_id": session})).structured_content
    assert stored["session"] == "user [REDACTED:ssn] [REDACTED:email] [REDACTED:phone]"
    assert "session_id" in stored["redacted_fields"] and {"ssn", "email", "phone"} <= set(stored["redacted"])
    again = (await client.call_tool("inject_context", {"content": "The deploy failed twice on a timeout.",
                                                       "rationale": WHY, "session_id": session})).structured_content
    assert again["session"] == stored["session"]  # the same session, under its redacted name
    store = app.services.storage.store
    assert store.session_count(stored["session"]) == 2 and store.session_count(session) == 0
    app.close()  # everything on disk: the store's pages and the saved indexes
    raw = data_bytes(settings.home)
    assert [s for s in RAW if s.encode() in raw] == []
    assert b"[REDACTED:ssn]" in raw


async def test_an_unknown_tool_name_is_redacted_in_the_error_and_the_log(client):
    refused = await refusal(client, f"lookup_{SSN}_{EMAIL}", {})
    assert refused.code == -32004 and leaked(refused.message) == [] and leaked(refused.data) == []
    assert "[REDACTED:" in refused.message
    huge = await refusal(client, "x" * 200_000, {})
    assert huge.code == -32004 and len(huge.message) < 1000  # echoed cut short, not 200 KB back
    logged = json.dumps(await logs(client))
    assert leaked(logged) == [] and "x" * 1000 not in logged
    assert '"tool": "lookup_[REDACTED:' in logged  # the call is logged, under the name as shown


async def test_an_unknown_argument_name_is_redacted_in_the_error_and_the_log(client):
    refused = await refusal(client, "search_graph", {"query": "deploy", f"note {PHONE} {SSN}": 1})
    assert refused.code == -32602 and leaked(refused.message) == [] and leaked(refused.data) == []
    assert "[REDACTED:phone]" in refused.message
    nested = await refusal(client, "tool_call", {"name": f"find_{SSN}", "arguments": {}})
    assert leaked(nested.message) == [] and leaked(nested.data) == []
    loaded = await refusal(client, "tool_load", {"names": [f"tool_{SSN}"]})
    assert leaked(loaded.message) == [] and leaked(loaded.data) == []
    described = await refusal(client, "tool_describe", {"name": f"tool_{EMAIL}"})
    assert leaked(described.message) == [] and leaked(described.data) == []
    assert leaked(await logs(client)) == []


async def test_the_session_summary_prompt_finds_a_session_by_the_name_it_was_stored_under(client):
    session = f"ops {SSN}"
    await client.call_tool("store_memory", {"content": "The deploy failed on a timeout.", "rationale": WHY,
                                            "session_id": session})
    prompt = await client.get_prompt("session_summary", {"session_id": session})
    text = prompt.messages[0].content.text
    assert "(1 memories" in text and "ops [REDACTED:ssn]" in text and leaked(text) == []
