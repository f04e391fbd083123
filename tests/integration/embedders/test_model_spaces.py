"""The spaces derived from the shared forward's token states: E1, E5, E7, E8, E10, E11, E12."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from contextgraph.embedders.code_lexer import CLASSES, token_class_histogram
from contextgraph.embedders.e01_semantic import SemanticEmbedder
from contextgraph.embedders.e05_causal import CausalEmbedder, causal_spans, query_direction
from contextgraph.embedders.e07_code import CodeEmbedder
from contextgraph.embedders.e08_graph import GraphEmbedder
from contextgraph.embedders.e10_multimodal import MultimodalEmbedder
from contextgraph.embedders.e11_entity import EntityEmbedder, entities, triples
from contextgraph.embedders.e12_late_interaction import MAX_TOKENS, LateInteractionEmbedder, maxsim, projection
from contextgraph.errors import DimensionMismatch, InvalidParams


def spans_text(text: str) -> tuple[list[str], list[str]]:
    s = causal_spans(text)
    return [text[a:b] for a, b in s.cause], [text[a:b] for a, b in s.effect]


# ---- E1 -------------------------------------------------------------------------------------------------------

def test_e1_unit_norm_and_similarity(memory, backbone):
    e1 = SemanticEmbedder(backbone)
    a, b, c = (e1.embed(memory(t)) for t in ("The cat sat on the mat.", "A cat was sitting on a mat.", "GDP grew 3%."))
    assert a.shape == (384,) and a.dtype == np.float32 and abs(np.linalg.norm(a) - 1) < 1e-5
    sims = e1.similarity(a, [b, c])
    assert sims[0] > sims[1] and sims[0] > 0.7


# ---- E5 -------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("text", "cause", "effect"),
    [
        ("The build failed because the cache was stale.", ["the cache was stale"], ["The build failed"]),
        ("A stale cache leads to failed builds.", ["A stale cache"], ["failed builds"]),
        ("Because the cache was stale, the build failed.", ["the cache was stale"], ["the build failed"]),
        ("The cache was stale. Therefore the build failed.", ["The cache was stale"], ["the build failed"]),
        ("The outage was caused by a bad deploy", ["a bad deploy"], ["The outage was"]),
        ("memory leak -> OOM kill", ["memory leak"], ["OOM kill"]),
        ("Retries were added so that flaky tests pass.", ["Retries were added"], ["flaky tests pass"]),
        ("We have used Python since 2019.", [], []),  # temporal "since", not a cause
        ("Just a plain note.", [], []),
    ],
)
def test_e5_cue_extraction(text, cause, effect):
    assert spans_text(text) == (cause, effect)


@pytest.mark.parametrize(
    ("query", "direction"),
    [
        ("Why did the build fail?", "backward"),
        ("what causes memory leaks", "backward"),
        ("the reason for the outage", "backward"),
        ("What happens if the cache is stale?", "forward"),
        ("effect of a stale cache", "forward"),
        ("what does a bad deploy lead to", "forward"),
        ("consequences of skipping tests", "forward"),
        ("stale cache", "both"),
    ],
)
def test_e5_query_direction(query, direction):
    assert query_direction(query) == direction


def test_e5_asymmetric_similarity(memory, backbone):
    e5 = CausalEmbedder(backbone)
    doc = e5.embed(memory("Heavy rain leads to flooded basements in the old town."))
    about_cause = e5.embed(memory("heavy rain"))
    about_effect = e5.embed(memory("flooded basements"))
    assert doc.shape == (768,) and abs(np.linalg.norm(doc) - 1) < 1e-5
    # a query naming the cause finds the doc going forward; one naming the effect, going backward
    fwd, bwd = e5.similarity(about_cause, [doc], "forward")[0], e5.similarity(about_cause, [doc], "backward")[0]
    assert fwd > bwd + 0.1, (fwd, bwd)
    fwd, bwd = e5.similarity(about_effect, [doc], "forward")[0], e5.similarity(about_effect, [doc], "backward")[0]
    assert bwd > fwd + 0.1, (fwd, bwd)
    both = e5.similarity(about_effect, [doc])[0]
    assert both == pytest.approx(max(fwd, bwd))
    with pytest.raises(ValueError):
        e5.similarity(doc, [doc], "sideways")


def test_e5_without_cue_has_equal_halves(memory, backbone):
    e5 = CausalEmbedder(backbone)
    v = e5.embed(memory("Just a plain note about lunch."))
    cause, effect = e5.halves(v)
    np.testing.assert_allclose(cause, effect)
    whole = SemanticEmbedder(backbone).embed(memory("Just a plain note about lunch."))
    np.testing.assert_allclose(cause, whole, atol=1e-6)


# ---- E7 -------------------------------------------------------------------------------------------------------

CODE = "def load_config(path):\n    with open(path) as f:\n        return yaml.safe_load(f)"


def test_e7_identifier_weighting_changes_the_code_vector(memory, backbone):
    e7 = CodeEmbedder(backbone)
    item = memory(CODE, modality="code")
    weights = e7.token_weights(item)
    tokens = item.encoded
    for word in ("load_config", "yaml.safe_load"):
        start = CODE.index(word)
        inside = (tokens.offsets[:, 0] >= start) & (tokens.offsets[:, 1] <= start + len(word)) & ~tokens.special
        assert inside.any() and np.all(weights[inside] == 3.0)
    assert np.all(weights[tokens.special] == 0.0)
    v = e7.embed(item)
    assert v.shape == (384 + 16,) and abs(np.linalg.norm(v) - 1) < 1e-5
    plain = tokens.states[~tokens.special].mean(axis=0)
    pooled = v[:384] / np.linalg.norm(v[:384])
    assert float(pooled @ plain / np.linalg.norm(plain)) < 0.9999  # the weighting moved it
    assert np.linalg.norm(v[384:]) > 0.1  # code gets its histogram


def test_e7_histogram_only_for_code(memory, backbone):
    e7 = CodeEmbedder(backbone)
    as_text = e7.embed(memory(CODE, modality="text"))
    assert not as_text[384:].any()


def test_token_class_histogram_counts():
    h = token_class_histogram("x = foo(1)  # hi\n")
    counts = dict(zip(CLASSES, np.round(h * 8).astype(int)))
    assert {k: v for k, v in counts.items() if v} == {
        "name": 1, "assignment": 1, "call": 1, "open_bracket": 1, "number": 1, "close_bracket": 1,
        "comment": 1, "newline": 1,
    }
    assert token_class_histogram("").sum() == 0


# ---- E8 -------------------------------------------------------------------------------------------------------

def test_e8_equals_e1_without_neighbours_and_moves_toward_them(memory, backbone):
    e1, e8 = SemanticEmbedder(backbone), GraphEmbedder(backbone)
    item = memory("Notes on configuring the HNSW index.")
    own = e1.embed(item)
    np.testing.assert_array_equal(e8.embed_batch([item])[0], own)
    neighbour = e1.embed(memory("Holiday photos from Lisbon."))
    moved = e8.embed_batch([memory(item.text, neighbours=((0.8, neighbour),))])[0]
    assert float(moved @ neighbour) > float(own @ neighbour) + 0.1
    assert abs(np.linalg.norm(moved) - 1) < 1e-5
    np.testing.assert_allclose(moved, (own + neighbour) / np.linalg.norm(own + neighbour), atol=1e-5)
    zero_weight = e8.embed_batch([memory(item.text, neighbours=((0.0, neighbour),))])[0]
    np.testing.assert_array_equal(zero_weight, own)
    with pytest.raises(DimensionMismatch):
        e8.embed_batch([memory(item.text, neighbours=((1.0, np.ones(10, dtype=np.float32)),))])


# ---- E10 ------------------------------------------------------------------------------------------------------

def test_e10_separates_modalities(memory, backbone):
    e1, e10 = SemanticEmbedder(backbone), MultimodalEmbedder(backbone)
    text = "SELECT * FROM memories"
    as_text, as_code = e10.embed(memory(text, modality="text")), e10.embed(memory(text, modality="code"))
    assert as_text.shape == (390,)
    assert e10.similarity(as_text, [as_code])[0] == pytest.approx(0.8, abs=1e-5)
    other = "Holiday photos from Lisbon."
    cos1 = float(e1.embed(memory(text)) @ e1.embed(memory(other)))
    cos10 = e10.similarity(as_text, [e10.embed(memory(other, modality="text"))])[0]
    assert cos10 == pytest.approx((cos1 + 0.25) / 1.25, abs=1e-5)  # same-modality ordering follows E1
    with pytest.raises(InvalidParams):
        e10.embed(memory(text, modality="video"))


# ---- E11 ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("See https://example.com/docs/a.html and /etc/hosts or src/contextgraph/app.py.",
         [("https://example.com/docs/a.html", "url"), ("/etc/hosts", "path"), ("src/contextgraph/app.py", "path")]),
        ("Upgrade to v2.3.0 with Python 3.11 in 0.5 seconds",
         [("v2.3.0", "version"), ("Python", "phrase"), ("3.11", "version")]),
        ("We call os.path.join and parse_args() with myVar",
         [("os.path.join", "identifier"), ("parse_args", "identifier"), ("myVar", "identifier")]),
        ("Yesterday I met Alice Smith at Google.", [("Alice Smith", "phrase"), ("Google", "phrase")]),
        ("The Global Workspace broadcasts.", [("Global Workspace", "phrase")]),
        ("nothing to see here", []),
    ],
)
def test_e11_entity_extraction(text, expected):
    assert [(e.text, e.kind) for e in entities(text)] == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ContextGraph uses LMDB for storage.", [("ContextGraph", "uses", "LMDB")]),
        ("HNSW is a graph index.", [("HNSW", "is_a", "graph index")]),
        ("The pipeline depends on onnxruntime and tokenizers.", [("pipeline", "depends_on", "onnxruntime")]),
        ("store_memory calls embed_batch() twice.", [("store_memory", "calls", "embed_batch")]),
        ("Nothing relational here.", []),
    ],
)
def test_e11_triples(text, expected):
    assert triples(text) == expected


def test_e11_vector_pools_mentions_and_falls_back_to_e1(memory, backbone):
    e1, e11 = SemanticEmbedder(backbone), EntityEmbedder(backbone)
    plain = memory("nothing to see here")
    np.testing.assert_array_equal(e11.embed(plain), e1.embed(plain))
    item = memory("Alice Smith moved the Kuramoto Network code to src/gwt/kuramoto.py")
    v = e11.embed(item)
    assert v.shape == (384,) and abs(np.linalg.norm(v) - 1) < 1e-5
    assert float(v @ e1.embed(item)) < 0.999
    # two texts sharing their entities but not their wording are closer in E11 than in E1
    a = memory("Alice Smith fixed the Kuramoto Network yesterday.")
    b = memory("Kuramoto Network: reviewed by Alice Smith after lunch, looks fine now.")
    assert float(e11.embed(a) @ e11.embed(b)) > float(e1.embed(a) @ e1.embed(b))


# ---- E12 ------------------------------------------------------------------------------------------------------

def test_e12_tokens_pruned_projected_normalised(memory, backbone):
    e12 = LateInteractionEmbedder(backbone)
    short = e12.embed(memory("Hello, world!"))
    assert short.shape == (2, 128) and short.dtype == np.float32  # [CLS], ",", "!", [SEP] dropped
    np.testing.assert_allclose(np.linalg.norm(short, axis=1), 1.0, atol=1e-5)
    long = e12.embed(memory(" ".join(f"token{i} alpha beta" for i in range(80))))
    assert long.shape == (MAX_TOKENS, 128)
    assert e12.embed(memory("")).shape == (1, 128)  # never empty
    p = projection(384)
    np.testing.assert_allclose(p.T @ p, np.eye(128), atol=1e-5)


def naive_maxsim(q: np.ndarray, docs: list[np.ndarray]) -> list[float]:
    out = []
    for d in docs:
        total = 0.0
        for qi in q:
            total += max(float(np.dot(qi, dj)) for dj in d)
        out.append(total / len(q))
    return out


@settings(max_examples=50, deadline=None)
@given(
    arrays(np.float32, st.tuples(st.integers(1, 6), st.just(8)), elements=st.floats(-1, 1, width=32)),
    st.lists(arrays(np.float32, st.tuples(st.integers(1, 7), st.just(8)), elements=st.floats(-1, 1, width=32)),
             min_size=1, max_size=6),
)
def test_maxsim_matches_naive_double_loop(query, docs):
    np.testing.assert_allclose(maxsim(query, docs), naive_maxsim(query, docs), rtol=1e-5, atol=1e-5)


def test_e12_similarity_ranks_related_text_first(memory, backbone):
    e12 = LateInteractionEmbedder(backbone)
    q = e12.embed(memory("rebuild the HNSW index"))
    docs = [e12.embed(memory(t)) for t in ("The HNSW index is rebuilt at start-up.", "Lunch is at noon.")]
    scores = e12.similarity(q, docs)
    assert scores[0] > scores[1] and e12.similarity(q, []).shape == (0,)
