"""E9's torch path (used when the backbone is on a GPU) gives the numpy path's bits exactly; run here on torch's
CPU device, over generated texts (unicode, empty, shorter than a trigram) and with chunks small enough that a
text's trigrams span several steps."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("torch")

from contextgraph.embedders.e09_hdc import HdcEmbedder, fold, hypervectors
from contextgraph.embedders.e09_hdc_torch import DeviceHdcEmbedder, folded_bits


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=300), min_size=1, max_size=6), st.sampled_from([7, 64, 1 << 15]))
def test_torch_bits_equal_numpy_bits(texts, chunk):
    assert np.array_equal(folded_bits(texts, "cpu", chunk=chunk), fold(hypervectors(texts)))


def test_embedder_on_a_device_packs_the_same_vectors():
    texts = ["The deploy failed because the migration locked the table.", "", "ab", "naïve café ☕ " * 40]
    on_device = DeviceHdcEmbedder("cpu").embed_texts(texts)  # "cpu" stands in for the GPU's device string
    on_host = HdcEmbedder().embed_texts(texts)
    assert all(np.array_equal(a, b) for a, b in zip(on_device, on_host, strict=True))


def test_a_single_text_stays_on_the_host():
    """One text (a store's, a query) is cheaper in numpy than in ~20 device steps: it never reaches the device,
    which here does not exist (no CUDA on this machine), and its bits are the host's."""
    text = "Rotate the signing key before the certificate expires."
    alone = DeviceHdcEmbedder("cuda:99").embed_texts([text])
    assert len(alone) == 1 and np.array_equal(alone[0], HdcEmbedder().embed_texts([text])[0])
    assert DeviceHdcEmbedder("cuda:99").embed_texts([]) == []
