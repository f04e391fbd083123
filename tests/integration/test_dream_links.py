"""A forced full dream on a small planted store (real LMDB, the real embedders) links notes that name the same
thing in different words — a service, a person, a device — and none across topics; the links say what the notes
share, the report carries the operation's reversal hash, and restore_from_hash removes exactly them."""

import asyncio

import pytest

from contextgraph.services.memory.memory_payloads import NewMemory

pytestmark = pytest.mark.anyio
WHY = "planted notes for the dream's shared-name links"
TOPICS = {
    "checkout-svc": (
        "checkout-svc dropped carts whenever the session cache was flushed.",
        "We moved checkout-svc behind the new load balancer last sprint.",
        "checkout-svc logs card numbers masked to the last four digits.",
        "Scaling checkout-svc past eight replicas exhausts the database connections.",
        "The checkout-svc health probe times out during garbage collection pauses.",
        "Nobody has touched the checkout-svc coupon code in two years.",
    ),
    "Ingrid Solberg": (
        "Ingrid Solberg runs the hiring loop for the platform team.",
        "Ingrid wants interview feedback written within a day.",
        "Solberg is moving to the Oslo office in the spring.",
        "Send the offsite agenda to Ingrid before it goes out.",
        "Ingrid Solberg prefers pairing exercises to whiteboard puzzles.",
        "Ingrid approved two extra headcount for the data team.",
    ),
    "Galaxy Tab S8": (
        "The Galaxy Tab S8 renders our charts with blurry labels.",
        "Keep the Galaxy Tab S8 charged; it is the only tablet with the beta build.",
        "Split-screen mode on the Galaxy Tab S8 breaks the login form.",
        "The Galaxy Tab S8 stylus does not register in the signature field.",
        "Rotate the Galaxy Tab S8 twice and the layout jumps back to portrait.",
        "The Galaxy Tab S8 came back from repair with a new screen.",
    ),
}
DISTRACTORS = (
    "Load balancers need health probes that answer within a second.",
    "Interview feedback templates are in the shared drive.",
    "Tablets in the lab must be locked in the cabinet at night.",
    "Post the weekly summary in Slack on Friday.",
)


async def wait_awake(dream, seconds=120.0):
    for _ in range(int(seconds / 0.05)):
        if not dream.dreaming:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the dream is still {dream.state}")


def links_by_provenance(app):
    def read(g):
        out = {}
        for r in g.recent(1000, None, None):
            for e in g.edges_out(r.id):
                if e.type != "Temporal":
                    out[frozenset((e.source, e.target))] = e.provenance
        return out

    return app.services.storage.store.graph_read(read)


async def test_a_dream_links_notes_that_name_the_same_thing_and_none_across_topics(app, call):
    topic_of = {}
    rows = [(text, topic) for topic, notes in TOPICS.items() for text in notes] + [(d, None) for d in DISTRACTORS]
    for k in sorted(range(len(rows)), key=lambda i: (i * 37) % len(rows)):  # topics interleaved, a fixed order
        text, topic = rows[k]
        stored = await app.services.memory.store(NewMemory(text, WHY, session="planted"))
        topic_of[stored.record.id] = topic
    before = links_by_provenance(app)
    dream = app.services.dream
    dream.nrem_seconds, dream.rem_seconds = 0.5, 1.0
    await dream.trigger("full", force=True)
    await wait_awake(dream)
    report = dream.reports[-1]

    after = links_by_provenance(app)
    dreamt = {pair: why for pair, why in after.items() if pair not in before and why.startswith("dream")}
    same_topic = [pair for pair in dreamt if len({topic_of[m] for m in pair}) == 1 and None not in
                  {topic_of[m] for m in pair}]
    across = [pair for pair in dreamt if len({topic_of[m] for m in pair} - {None}) == 2]
    assert len(same_topic) >= 3, report
    assert across == [], [dreamt[p] for p in across]
    assert len(same_topic) >= 0.8 * len(dreamt)
    assert all(why.startswith("dream: shares ") for why in dreamt.values())
    assert len(report["shared_name_edges"]) == len([p for p, why in dreamt.items() if why.startswith("dream: ")])
    # every topic gains links beyond what the store-time rules made
    for topic in TOPICS:
        members = {m for m, t in topic_of.items() if t == topic}
        assert any(pair <= members for pair in dreamt), topic

    # one call undoes the dream's shared-name links, and only them
    (reversal,) = {link["reversal_hash"] for link in report["shared_name_edges"]}
    restored = (await call("restore_from_hash", {"reversal_hash": reversal})).payload
    assert restored["operation"] == "link"
    undone = links_by_provenance(app)
    assert not any(why.startswith("dream: ") for why in undone.values())
    assert all(undone.get(pair) == why for pair, why in before.items())

