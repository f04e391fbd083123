"""The batch paths of E7, E9, E11 and E12 (issue 19.1) against the per-memory code they replaced
(naive_embedders.py, kept verbatim): the same vectors (E9 bit for bit, the dense spaces within 1e-6), the same
E11 triples, over hand-picked edge cases and hypothesis-generated batches of prose, code and odd characters."""

from __future__ import annotations

import naive_embedders as naive
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextgraph.embedders import entities as en
from contextgraph.embedders import token_spans
from contextgraph.embedders.backbone import BATCH_SIZE, PAD_RATIO, length_buckets
from contextgraph.embedders.base import MemoryInput
from contextgraph.embedders.e07_code import CodeEmbedder
from contextgraph.embedders.e09_hdc import HdcEmbedder, fold, hypervectors
from contextgraph.embedders.e11_entity import EntityEmbedder
from contextgraph.embedders.e12_late_interaction import LateInteractionEmbedder
from contextgraph.vectors import span_token_mask

EDGE_CASES = (
    ("", "text"), ("", "code"), ("a", "text"), ("ab", "text"), ("ok", "code"), ("!!! ??? ...", "mixed"),
    ("Ünïcödé tëxt 🎉 中文字符 ½ ⅷ", "text"),
    ("ContextGraph uses LMDB for storage. numpy depends on OpenBLAS; see https://numpy.org/doc/ and Python 3.11.",
     "text"),
    ("def load_config(path):\n    with open(path) as f:\n        return yaml.safe_load(f)  # read it", "code"),
    ("const userName = getUserName(request.session); // camelCase", "mixed"),
    ("word " * 300, "text"),  # past the 256-token truncation: mentions beyond it have no tokens
    ("x" * 2_000, "text"),  # one text longer than a 255-row counting run
)
WORDS = ("the", "cache", "ContextGraph", "uses", "LMDB", "is", "a", "def", "parse_args()", "os.path.join", "v2.3",
         "/etc/hosts", "Python", "3.11", "and", "calls", "HNSW", "src/app/main.py", "Alice", "for", "if", "x",
         "=", "(", ")", "{", "}", ".", ",", ":", "\n", "    ", "#", "é", "中文", "🎉", "½", "\t", "depends on")
texts = st.lists(st.sampled_from(WORDS), max_size=60).map(" ".join) | st.text(max_size=120)
batches = st.lists(st.tuples(texts, st.sampled_from(("text", "code", "mixed"))), min_size=1, max_size=6)
hypothesis_settings = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def encode(backbone):
    def make(batch):
        encoded = backbone.encode([text for text, _ in batch])
        return [MemoryInput(encoded=e, modality=m) for e, (_, m) in zip(encoded, batch)]

    return make


def check_batch(backbone, items: list[MemoryInput]) -> None:
    e9 = HdcEmbedder()
    for item, vector in zip(items, e9.embed_batch(items)):
        assert np.array_equal(vector, naive.e9(item.text)), item.text
    e7 = CodeEmbedder(backbone)
    for item, vector in zip(items, e7.embed_batch(items)):
        np.testing.assert_allclose(vector, naive.e7(item), atol=1e-6)
    e11 = EntityEmbedder(backbone)
    vectors, triples = e11.embed_with_triples(items)
    assert len(vectors) == len(triples) == len(items)
    for item, vector, found in zip(items, vectors, triples):
        np.testing.assert_allclose(vector, naive.e11(item), atol=1e-6)
        expected = naive.e11_triples(item)
        assert [(t.head, t.relation, t.tail) for t in found] == [t[:3] for t in expected]
        for t, (*_, h, tail) in zip(found, expected):
            np.testing.assert_allclose(t.head_vector, h, atol=1e-6)
            np.testing.assert_allclose(t.tail_vector, tail, atol=1e-6)
        assert [(t.head, t.relation, t.tail) for t in e11.triple_vectors(item)] == [t[:3] for t in expected]
    e12 = LateInteractionEmbedder(backbone)
    for item, vector in zip(items, e12.embed_batch(items)):
        expected = naive.e12(item, e12._projection)
        assert vector.shape == expected.shape
        np.testing.assert_allclose(vector, expected, atol=1e-6)


def test_edge_cases_match_the_per_memory_path(backbone, encode):
    check_batch(backbone, encode(EDGE_CASES))


def test_a_batch_equals_its_memories_one_by_one(backbone, encode):
    items = encode(EDGE_CASES)
    for embedder in (HdcEmbedder(), CodeEmbedder(backbone), EntityEmbedder(backbone),
                     LateInteractionEmbedder(backbone)):
        together = embedder.embed_batch(items)
        for item, vector in zip(items, together):
            np.testing.assert_allclose(vector, embedder.embed_batch([item])[0], atol=1e-6)
        assert embedder.embed_batch([]) == []


@hypothesis_settings
@given(batches)
def test_generated_batches_match_the_per_memory_path(backbone, encode, batch):
    check_batch(backbone, encode(batch))


def test_e9_reads_any_code_point():
    batch = ["lone surrogate \ud800 here", "\U0010ffff", "NUL \x00 byte"]  # the tokenizer refuses the first
    for text, vector in zip(batch, HdcEmbedder().embed_texts(batch)):
        assert np.array_equal(vector, naive.e9(text))


@settings(max_examples=200, deadline=None)
@given(st.lists(texts, min_size=1, max_size=8))
def test_e9_bundle_and_fold_match_per_text(batch):
    bundled = hypervectors(batch)
    for text, bits in zip(batch, bundled):
        assert np.array_equal(bits, naive.hypervector(text))
    folded = fold(bundled)
    for bits, row in zip(bundled, folded):
        assert np.array_equal(row, naive.fold(bits))


@settings(max_examples=300, deadline=None)
@given(texts)
def test_entities_match_the_regex_searches(text):
    assert en.entities(text) == naive.naive_entities(text)
    for start in range(len(text) + 1):
        assert en._opens_sentence(text, start) == naive.opens_sentence(text, start)
        if start >= 2 and text[start - 1] == " " and text[start - 2].isascii() and text[start - 2].isalpha():
            assert en._after_a_name(text, start) == naive.after_a_name(text, start, en._STOP)


spans = st.lists(st.tuples(st.integers(0, 60), st.integers(0, 60)), max_size=6)


@hypothesis_settings
@given(st.lists(st.sampled_from(WORDS), max_size=30).map(" ".join), spans)
def test_span_lookups_match_the_overlap_test(backbone, text, raw_spans):
    encoded = backbone.encode([text])[0]
    # identifier and keyword spans are matches of one regex: sorted and non-overlapping
    ordered = sorted({(min(a, b), max(a, b) + 1) for a, b in raw_spans})
    disjoint = [s for i, s in enumerate(ordered) if i == 0 or s[0] >= ordered[i - 1][1]]
    expected = span_token_mask(encoded.offsets, encoded.special, disjoint)
    assert np.array_equal(token_spans.span_mask(encoded.offsets, encoded.special, disjoint), expected)
    for span in ordered:
        first, stop = token_spans.span_ranges(encoded.offsets, encoded.special, [span])
        real = np.flatnonzero(~encoded.special)
        assert np.array_equal(real[first[0]:stop[0]], np.flatnonzero(span_token_mask(encoded.offsets,
                                                                                      encoded.special, [span])))
    counts = token_spans.alnum_in_spans(text, encoded.offsets)
    assert counts.tolist() == [sum(ch.isalnum() for ch in text[s:e]) for s, e in encoded.offsets.tolist()]


def test_unordered_offsets_fall_back_to_the_overlap_test():
    offsets = np.array([[0, 0], [4, 6], [0, 3], [7, 9], [0, 0]], dtype=np.int32)
    special = np.array([True, False, False, False, True])
    spans = [(1, 2), (5, 8)]
    assert not token_spans.ordered(offsets, special)
    assert np.array_equal(token_spans.span_mask(offsets, special, spans), span_token_mask(offsets, special, spans))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 256), max_size=200))
def test_length_buckets_partition_the_texts_with_bounded_padding(lengths):
    lengths = np.array(lengths, dtype=np.int64)
    buckets = length_buckets(lengths)
    assert sorted(np.concatenate(buckets).tolist() if buckets else []) == list(range(len(lengths)))
    for bucket in buckets:
        sizes = lengths[bucket]
        assert 1 <= len(bucket) <= BATCH_SIZE and sizes.max() <= PAD_RATIO * sizes.min()
        assert (np.diff(sizes) >= 0).all()  # shortest first: each forward's width is its last text


def test_a_bucketed_batch_encodes_as_its_texts_one_by_one(backbone):
    texts = [text for text, _ in EDGE_CASES]
    together = backbone.encode(texts)
    for text, encoded in zip(texts, together):
        alone = backbone.encode([text])[0]
        assert np.array_equal(encoded.token_ids, alone.token_ids)
        np.testing.assert_allclose(encoded.states, alone.states, atol=1e-4)
