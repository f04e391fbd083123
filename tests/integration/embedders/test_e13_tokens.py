"""E13 on the real tokenizer: the raw term frequency of each WordPiece id, special tokens left out."""

from __future__ import annotations

from collections import Counter

from contextgraph.embedders.e13_splade import SpladeEmbedder


def test_e13_is_raw_tf_of_token_ids(memory, backbone):
    e13 = SpladeEmbedder(backbone)
    assert e13.dim == 30522
    item = memory("cache cache miss, cache!")
    v = e13.embed(item)
    enc = item.encoded
    counts = Counter(enc.token_ids[~enc.special].tolist())
    assert dict(zip(v.indices.tolist(), v.values.tolist())) == {k: float(c) for k, c in counts.items()}
    assert 101 not in v.indices and 102 not in v.indices  # [CLS]/[SEP] excluded
