"""Every reader of θ_dup reads ATC's value (docs/engine.md#adaptive-thresholds), not the constitution's prior:
critique_context's duplicates, reflect_on_memory's pending duplicates and get_pruning_candidates' redundant
memories all flip when ATC moves θ_dup across a stored pair's E1 cosine. Real LMDB, indexes and transformer,
through the `mcp` SDK client."""

import pytest

from contextgraph.services.engine.atc import Setting

pytestmark = pytest.mark.anyio
WHY = "planting a near-duplicate pair for the θ_dup readers"


async def call(client, name, args=None):
    result = await client.call_tool(name, args or {})
    assert not result.is_error, result.structured_content
    return result.structured_content


async def duplicates_seen(client) -> tuple[int, int, int]:
    """(critique's duplicate findings, reflection's pending duplicates, pruning's redundant candidates)."""
    critique = await call(client, "critique_context", {"context_window": 2, "check_types": ["duplicates"]})
    reflect = await call(client, "reflect_on_memory", {"goal": "tidy up the memory"})
    prune = await call(client, "get_pruning_candidates", {"min_staleness_days": 36500, "min_alignment": 0.0})
    redundant = sum(1 for c in prune["candidates"] for r in c["reasons"] if r["reason"] == "redundant")
    return len(critique["findings"]["duplicates"]), reflect["state"]["pending_duplicates"], redundant


async def test_critique_reflection_and_pruning_decide_with_atcs_theta_dup(client, app):
    for text in ("The nightly backup job copies the Postgres dump to the S3 bucket at 02:00 UTC.",
                 "Every night at 02:00 UTC the backup job copies the Postgres dump to the S3 bucket."):
        await call(client, "store_memory", {"content": text, "rationale": WHY})
    critique = await call(client, "critique_context", {"context_window": 2, "check_types": ["outdated",
                                                                                          "duplicates"]})
    found = critique["findings"]["duplicates"] + critique["findings"]["outdated"]
    cosine = found[0]["e1_cosine"]
    thresholds = app.services.thresholds
    spec = thresholds.spec("theta_dup")
    assert spec.lo + 0.01 < cosine < spec.hi - 0.01, cosine  # so θ_dup can sit on either side of it
    below, above = cosine - 0.005, cosine + 0.005
    thresholds.set("theta_dup", "General", Setting(below), "test: θ_dup under the pair's cosine", None)
    assert await duplicates_seen(client) == (1, 1, 1)
    thresholds.set("theta_dup", "General", Setting(above), "test: θ_dup over the pair's cosine", None)
    assert await duplicates_seen(client) == (0, 0, 0)
