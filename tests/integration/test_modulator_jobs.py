"""Each modulator's job through the real MemoryService and the real listeners (docs/engine.md#what-each-modulator-
does), on a tiny planted store: a weak search arouses noradrenaline and the next similar query finds the note
linked to its hit; a memory the agent cites ranks higher in the next related answer, which keeps its set; at rest
nothing moves. The notes come from benchmarks/modulators_corpus.py's cases."""

import pytest

from contextgraph.services.memory.memory_payloads import NewMemory

pytestmark = pytest.mark.anyio
WHY = "planted for the modulator tests"
DISTRACTORS = [
    "Team lunch is on Thursdays at the Italian place near the office.",
    "Our design system uses an 8 pixel spacing grid and the Inter typeface.",
    "Expense reports above 500 euros need a manager's approval.",
    "The on-call rotation is weekly and hands over on Monday at 10:00.",
    "Feature flags are managed in the flags service; stale flags are removed monthly.",
    "Load tests run against the perf environment every Wednesday night.",
    "The CI pipeline runs lint, unit tests and a container build on every push.",
    "Billing statements are emailed to customers on the first day of each month.",
    "The status page outage in May lasted ten minutes and was caused by a DNS typo.",
    "The billing team reviews failed payments every Tuesday morning.",
]
HIT = "The billing outage on March 3 was caused by an expired TLS certificate on the payments gateway."
LINKED = "Runbook: run certbot renew on gw-02, reload nginx, and set a reminder fourteen days before expiry."
QUERY = "what caused the billing outage"
# nothing in the store is about these: search_graph says nothing_relevant, twice
WEAK = ("recipe for a sourdough starter", "knitting pattern for a winter scarf")
USED = "Rotate database credentials with the vault-rotate script; apps pick them up within five minutes."
OTHERS = ["Database credentials used to be stored in the env file on each host.",
          "Read-only analysts get database credentials through the data portal."]
K = 3


async def put(app, text, link_to=()):
    return (await app.services.memory.store(NewMemory(text, WHY, link_to=tuple(link_to)))).record.id


async def search(app, query, k=K):
    out = await app.services.memory.search(query, top_k=k, min_similarity=0.0, modality=None, breakdown=False)
    await app.services.memory.settled()  # the results listeners have heard it
    return out.payload()


def ids(payload):
    return [r["id"] for r in payload["results"]]


async def test_a_weak_search_makes_the_next_similar_query_find_the_linked_note(app, call):
    for text in DISTRACTORS:
        await put(app, text)
    hit = await put(app, HIT)
    linked = await put(app, LINKED, [hit])
    neuro = app.services.neuromodulation
    before = await search(app, QUERY)
    assert hit == ids(before)[0] and linked not in ids(before)  # worded without the query's words
    assert neuro.level("noradrenaline") == neuro.bounds["noradrenaline"].baseline  # a good search arouses nothing
    for query in WEAK:
        assert (await search(app, query))["nothing_relevant"]
    assert neuro.level("noradrenaline") > 1.4
    after = await search(app, QUERY)
    assert ids(after)[0] == hit and linked in ids(after)
    assert "noradrenaline" in after["modulation_note"] and "joined the answer" in after["modulation_note"]
    state = (await call("get_neuromodulation_state", {})).payload
    assert "noradrenaline" in state["last_search_effect"] and state["noradrenaline"]["effect"]["graph_spread"] > 0


async def test_a_cited_memory_ranks_higher_in_the_next_answer_and_nothing_is_left_out(app, call):
    others = [await put(app, text) for text in DISTRACTORS + OTHERS]
    used = await put(app, USED)
    before = await search(app, "database credentials")
    assert used in ids(before) and ids(before)[0] != used  # the case: answered, but not first
    await search(app, "how do we rotate database credentials")
    await call("hydrate_citation", {"citation_tag": f"[node_{used[:8]}]"})  # the agent uses it: evidence
    neuro = app.services.neuromodulation
    assert neuro.level("dopamine") > neuro.bounds["dopamine"].baseline
    after = await search(app, "database credentials")
    assert ids(after).index(used) < ids(before).index(used)
    assert set(ids(after)) == set(ids(before))  # a boost reorders the answer, it never hides a result
    assert "dopamine" in after["modulation_note"]
    await call("update_synergy_matrix", {"query_vector_id": others[-1], "result_vector_id": used,
                                         "feedback": "not_relevant"})
    assert ids(await search(app, "database credentials")) == ids(before)  # refuted: no longer boosted
