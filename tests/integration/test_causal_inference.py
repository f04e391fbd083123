"""omni_infer / query_causal's service on a real LMDB store with the real ONNX pipeline: causal chains planted as
text only (no link_to, no edge written by hand), a distractor that denies a cause, and a cycle (issue 18's
done-when)."""

import pytest

from contextgraph.errors import InvalidParams, NodeNotFound
from contextgraph.services.introspection.causal_inference import CausalInference
from contextgraph.services.memory.memory_payloads import NewMemory
from contextgraph.storage.base import Edge

pytestmark = pytest.mark.anyio
WHY = "planting a causal chain for inference"
A = "Heavy rain leads to flooded streets in the old town."
B = "Flooded streets lead to traffic jams on the ring road."
C = "Traffic jams on the ring road cause late deliveries to the bakery."
DENIAL = "Flooded streets do not cause power outages in the old town."
OTHER = [
    "The bakery sells sourdough bread and croissants every morning.",
    "Python's asyncio event loop runs coroutines cooperatively.",
    "The Kuramoto model describes synchronisation of coupled oscillators.",
]


async def plant(app, texts):
    return [(await app.services.memory.store(NewMemory(t, WHY))).record.id for t in texts]


@pytest.fixture
async def chain(app):
    ids = await plant(app, [A, B, C, DENIAL, *OTHER])
    return dict(zip(("a", "b", "c", "denial"), ids[:4]))


def service(app):
    s = app.services
    return CausalInference(s.storage, s.perception, s.memory, s.constitution)


async def test_forward_and_backward_chains_pass_through_b(app, chain):
    a, b, c = chain["a"], chain["b"], chain["c"]
    fwd = await service(app).infer(a, c, "forward")
    assert fwd["found"] and fwd["path"] == [a, b, c]
    assert 0 < fwd["confidence"] < 1 and len(fwd["hops"]) == 2
    assert fwd["confidence"] == pytest.approx(fwd["hops"][0]["strength"] * fwd["hops"][1]["strength"], rel=1e-4)
    bwd = await service(app).infer(c, a, "backward")
    assert bwd["found"] and bwd["path"] == [a, b, c]  # causal order: the cause first
    # the reverse claims do not hold
    assert not (await service(app).infer(c, a, "forward"))["found"]
    assert not (await service(app).infer(a, c, "backward"))["found"]
    both = await service(app).infer(a, c, "bidirectional")
    assert both["found"] and both["forward"]["found"] and not both["backward"]["found"] and not both["mutual"]
    for answer in (fwd, bwd, both):
        assert chain["denial"] not in answer["path"]


async def test_abduction_ranks_the_root_cause_in_the_top_three(app, chain):
    out = await service(app).infer(chain["c"], None, "abduction")
    ranked = [h["id"] for h in out["hypotheses"]]
    assert chain["a"] in ranked[:3] and chain["b"] in ranked[:3]
    assert chain["denial"] not in ranked
    assert all(chain["denial"] not in h["path"] for h in out["hypotheses"])
    top_a = next(h for h in out["hypotheses"] if h["id"] == chain["a"])
    assert top_a["path"] == [chain["a"], chain["b"], chain["c"]]
    with_target = await service(app).infer(chain["c"], chain["a"], "abduction")
    assert with_target["found"] and with_target["target_rank"] in (1, 2, 3)


async def test_the_denial_is_no_evidence(app, chain):
    out = await service(app).infer(chain["denial"], None, "abduction")
    assert not out["found"] and "negated" in out["message"]
    # examined near A (it shares A's words) and set aside, not linked
    assert chain["denial"] in (await service(app).infer(chain["a"], None, "bridge"))["excluded_denials"]
    fwd = await service(app).infer(chain["a"], chain["denial"], "forward")
    assert not fwd["found"]


async def test_bridge_reaches_another_topic(app, chain):
    out = await service(app).infer(chain["a"], None, "bridge")
    bridged = {h["id"]: h for h in out["hypotheses"]}
    # rain → deliveries: a causal link into a topic the source's words do not share (E1 cosine < 0.5)
    assert chain["c"] in bridged and bridged[chain["c"]]["role"] == "effect"
    assert bridged[chain["c"]]["e1_cosine"] < 0.5 and bridged[chain["c"]]["path"] == [chain["a"], chain["b"],
                                                                                    chain["c"]]
    assert all(h["score"] <= h["confidence"] for h in out["hypotheses"])  # confidence × (1 − cosine)


async def test_a_stored_cycle_is_reported_not_followed(app, chain):
    a, c = chain["a"], chain["c"]
    store = app.services.storage.store
    store.graph_write(lambda g: g.put_edge(Edge(c, a, "Causal", weight=0.9, confidence=0.9)))
    out = await service(app).infer(a, c, "forward")
    assert out["found"] and out["path"][0] == a and out["path"][-1] == c
    assert out["cycle_detected"] and out["cycle"][0] == a and out["cycle"][-1] in out["cycle"][:-1]


async def test_query_causal_answers_why_and_what_happens(app, chain):
    why = await service(app).query("Why are deliveries to the bakery late?", 5)
    assert why["direction"] == "backward"
    assert chain["c"] in [x["id"] for x in why["anchors"]]
    causes = [x["id"] for x in why["answers"]]
    assert chain["b"] in causes and chain["a"] in causes and chain["denial"] not in causes
    ahead = await service(app).query("What happens if there is heavy rain?", 5)
    assert ahead["direction"] == "forward"
    assert {chain["b"], chain["c"]} <= {x["id"] for x in ahead["answers"]}


async def test_bad_calls_are_refused(app, chain):
    with pytest.raises(InvalidParams) as err:
        await service(app).infer(chain["a"], None, "forward")
    assert err.value.data["field"] == "target"
    with pytest.raises(NodeNotFound):
        await service(app).infer(chain["a"], "0" * 32, "forward")
