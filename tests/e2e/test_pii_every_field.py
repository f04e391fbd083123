"""PII in every free-text argument (issue 12.3), end to end through the `mcp` SDK client on real LMDB, real
indexes and the real model: a card number, an SSN, a password and an AWS secret key planted in each free-text
field of each tool never reach the store's files (read as raw bytes, the way `strings data.mdb` does), an
answer, or get_system_logs; each answer says what was redacted; git hashes and bare base64 runs survive."""

from __future__ import annotations

import json
import re

import pytest

from contextgraph.security.free_text import free_text_fields

pytestmark = pytest.mark.anyio

CARD, SSN, PASSWORD, AWS = ("4111 1111 1111 1111", "123-45-6789", "Hunter2Hunter2",
                            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
RAW = [CARD, CARD.replace(" ", ""), SSN, PASSWORD, AWS]
KINDS = {"card_number", "ssn", "password", "aws_secret_key"}
GIT_HASH = "9fceb02d0ae598e95dc970b74767f19372d61af8"  # 40 hex: must not be taken for an AWS key
BASE64_RUN = "Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0MTIz"  # 40 base64 characters with no key name before them
DEPLOY = "The deploy failed because the database migration timed out after 30 seconds."
DEPLOY2 = "The deploy failed since the database migration hit its 30 second timeout."


def planted(field: str) -> str:
    """All four secrets, the two look-alikes that must survive, and a canary naming the field (found in the
    store's bytes where the field is stored: proof that the byte search can see it)."""
    return (f"canary-{field} card {CARD} ssn {SSN} password={PASSWORD} aws_secret_access_key={AWS} "
            f"commit {GIT_HASH} blob {BASE64_RUN}")


def planted_list(field: str) -> list[str]:
    """Tag-sized items, one secret each."""
    return [f"canary-{field}", f"card {CARD}", f"ssn {SSN}", f"password={PASSWORD}",
            f"aws_secret_access_key={AWS}", GIT_HASH]


async def answer(client, name, args) -> dict:
    result = await client.call_tool(name, args)
    assert not result.is_error, result
    return result.structured_content


def assert_clean(payload) -> None:
    text = json.dumps(payload)
    leaked = [secret for secret in RAW if secret in text]
    assert leaked == [], leaked


def assert_reports(payload, *fields: str) -> None:
    assert KINDS <= set(payload["redacted"]), payload.get("redacted")
    assert set(fields) <= set(payload["redacted_fields"]), payload.get("redacted_fields")


def data_bytes(home) -> bytes:
    """Every file under the data directory (store/data.mdb, lock file, indexes), as raw bytes."""
    return b"".join(path.read_bytes() for path in sorted(home.rglob("*")) if path.is_file())


# Each (tool, free-text field) this test plants a secret in; the first test checks it covers the registry.
COVERED = {
    ("store_memory", "content"), ("store_memory", "rationale"), ("store_memory", "tags"),
    ("inject_context", "content"), ("inject_context", "rationale"), ("inject_context", "tags"),
    ("annotate_node", "annotations.tags"), ("annotate_node", "annotations.notes"),
    ("annotate_node", "annotations.related_concepts"),
    ("merge_concepts", "target_name"), ("merge_concepts", "rationale"),
    ("forget_concept", "rationale"), ("boost_importance", "rationale"),
    ("compute_delta_sc", "new_content"), ("compute_delta_sc", "old_content"),
    ("search_graph", "query"), ("search_tombstones", "query"), ("tool_find", "query"),
    ("temporary_scratchpad", "key"), ("temporary_scratchpad", "value"),
    # issues 15 and 18: text that is searched, embedded, checked or planned from, and a profile's name
    ("search_teleological", "query_content"), ("compute_teleological_vector", "content"),
    ("manage_teleological_profile", "name"), ("query_causal", "query"), ("reflect_on_memory", "goal"),
    ("generate_search_plan", "goal"), ("check_adversarial", "content"), ("test_recall_accuracy", "query"),
    ("debug_compare_retrieval", "query"),
}


# Identifiers a client names (every kind redacted, emails and phones too): test_pii_identifiers.py plants PII in
# the stored session id and in tool names; the engine tools' session ids are accepted and never used.
IDENTIFIERS = {
    ("store_memory", "session_id"), ("inject_context", "session_id"), ("tool_call", "name"),
    ("tool_describe", "name"), ("tool_load", "names"), ("epistemic_action", "session_id"),
    ("get_consciousness_state", "session_id"), ("get_ego_state", "session_id"), ("get_kuramoto_sync", "session_id"),
    ("get_workspace_status", "session_id"),
}


async def test_the_test_plants_a_secret_in_every_free_text_field_the_registry_has(app):
    registry = {(spec.name, path) for spec in app.registry.specs.values() for path in free_text_fields(spec.args)}
    assert registry == COVERED | IDENTIFIERS


async def test_no_secret_from_any_free_text_field_is_stored_echoed_or_logged(client, settings):
    answers = []

    async def run(name, args, *reported: str) -> dict:
        payload = await answer(client, name, args)
        assert_clean(payload)
        if reported:
            assert_reports(payload, *reported)
        answers.append(payload)
        return payload

    a = (await run("store_memory", {"content": planted("content"), "rationale": planted("rationale"),
                                    "tags": planted_list("tags")}, "content", "rationale", "tags"))["id"]
    b = (await run("inject_context", {"content": planted("inject-content"), "rationale": planted("inject-why"),
                                      "tags": planted_list("inject-tags")}, "content", "rationale", "tags"))["id"]
    c = (await run("store_memory", {"content": DEPLOY, "rationale": "a merge needs two of a kind"}))["id"]
    d = (await run("store_memory", {"content": DEPLOY2, "rationale": "a merge needs two of a kind"}))["id"]
    await run("annotate_node", {"node_id": a, "annotations": {
        "tags": planted_list("annotation-tags"), "notes": planted("annotation-notes"),
        "related_concepts": planted_list("related")}},
        "annotations.tags", "annotations.notes", "annotations.related_concepts")
    await run("boost_importance", {"node_id": a, "delta": 0.1, "rationale": planted("boost")}, "rationale")
    merged = await run("merge_concepts", {"source_node_ids": [c, d], "target_name": planted("target-name"),
                                          "rationale": planted("merge")}, "target_name", "rationale")
    assert merged["merged"]
    await run("forget_concept", {"node_id": b, "reason": "obsolete", "rationale": planted("forget")}, "rationale")
    await run("compute_delta_sc", {"vertex_id": a, "new_content": planted("new"), "old_content": planted("old")},
              "new_content", "old_content")
    await run("search_graph", {"query": planted("query")}, "query")
    await run("search_tombstones", {"query": planted("tombstone-query")}, "query")
    await run("tool_find", {"query": planted("find")}, "query")
    await run("temporary_scratchpad", {"action": "write", "key": f"pwd={PASSWORD}", "value": planted("pad")},
              "key", "value")
    pad = await run("temporary_scratchpad", {"action": "read"})
    assert list(pad["entries"]) == ["pwd=[REDACTED:password]"]
    # a call nested in tool_call is redacted by the same dispatcher step
    await run("tool_call", {"name": "annotate_node",
                            "arguments": {"node_id": a, "annotations": {"notes": planted("nested")}}})
    for name, args in (("search_teleological", {"query_content": planted("tele-query")}),
                       ("compute_teleological_vector", {"content": planted("tele-content")})):
        refused = await client.call_tool(name, args)  # no north star yet: refused, and the refusal is clean too
        assert refused.is_error and "north star" in refused.content[0].text.lower()
        assert [secret for secret in RAW if secret in refused.content[0].text] == []
    profile = await run("manage_teleological_profile", {"action": "create", "name": f"ops password={PASSWORD}"})
    assert "password" in profile["redacted"] and profile["redacted_fields"] == ["name"]  # a name is ≤ 128 chars
    await run("manage_teleological_profile", {"action": "list"})
    await run("query_causal", {"query": planted("why")}, "query")
    await run("reflect_on_memory", {"goal": planted("reflect")}, "goal")
    await run("generate_search_plan", {"goal": planted("plan")}, "goal")
    await run("check_adversarial", {"content": planted("adversarial")}, "content")
    await run("test_recall_accuracy", {"query": planted("recall"), "expected_node_ids": [a]}, "query")
    await run("debug_compare_retrieval", {"query": planted("compare"), "spaces": ["E1"]}, "query")
    # what reads the stored text back: lineage (every rationale), recent context, the tombstone
    lineage = await run("get_node_lineage", {"node_id": a})
    assert len(lineage["events"]) >= 3
    recent = await run("get_recent_context", {})
    await run("search_tombstones", {})
    await run("get_system_logs", {"level": "debug", "limit": 1000})

    stored = next(m for m in recent["memories"] if m["id"] == a)
    assert GIT_HASH in stored["content"] and BASE64_RUN in stored["content"]  # look-alikes survive
    assert "[REDACTED:aws_secret_key]" in stored["content"] and "[REDACTED:card_number]" in stored["content"]
    assert GIT_HASH in stored["tags"]

    raw = data_bytes(settings.home)
    leaked = [secret for secret in RAW if secret.encode() in raw]
    assert leaked == [], f"in the data directory's bytes: {leaked}"
    for canary in ("content", "rationale", "tags", "annotation-tags", "annotation-notes", "related", "boost",
                   "target-name", "merge", "forget", "inject-why"):
        assert f"canary-{canary}".encode() in raw, canary  # the byte search does see each stored field
    assert GIT_HASH.encode() in raw and BASE64_RUN.encode() in raw
    # the stored record still lists what its content and rationale lost (MemoryRecord.redactions), in every
    # version of it the files hold (each update rewrites it); other documents that open with its id (and no
    # redactions) are not records
    versions = list(_json_documents_opening_with(raw, b'{"id":"' + a.encode() + b'"'))
    records = [v for v in versions if "redactions" in v]
    assert records and all(KINDS <= set(v["redactions"]) for v in records), records


def _json_documents_opening_with(raw: bytes, opening: bytes):
    """Every JSON object in `raw` that starts with `opening` and parses whole (a page may hold a cut copy)."""
    decoder = json.JSONDecoder()
    for match in re.finditer(re.escape(opening), raw):
        text = raw[match.start(): match.start() + (1 << 20)].decode("utf-8", errors="replace")
        try:
            document, _ = decoder.raw_decode(text)
        except json.JSONDecodeError:
            continue
        if isinstance(document, dict):
            yield document


async def test_emails_stay_by_default(client):
    """pii.redact_emails is false in constitution.yaml: addresses are content a memory must find again."""
    out = await answer(client, "store_memory", {"content": "Release questions go to alice@example.com.",
                                                "rationale": "who owns the release", "tags": ["bob@example.org"]})
    assert out["redacted"] == [] and "redacted_fields" not in out
    found = await answer(client, "search_graph", {"query": "alice@example.com release"})
    assert found["results"][0]["content"] == "Release questions go to alice@example.com."
    assert found["results"][0]["tags"] == ["bob@example.org"]
