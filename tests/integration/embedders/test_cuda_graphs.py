"""The encoder a CUDA graph records (embedders/cuda_graphs.py), checked on this CPU: it is transformers' BERT
forward, padding to a captured width changes no real token's states, and models it does not reproduce are
refused. The capture and replay themselves need a device: benchmarks/bench_embedding_gpu.py checks them there
(graphed single texts against the same backbone's batched forward)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from contextgraph.embedders.backbone import TorchBackbone, default_model_dir  # noqa: E402
from contextgraph.embedders.cuda_graphs import (  # noqa: E402
    WIDTHS,
    bert_forward,
    bert_weights,
    padded_inputs,
    padded_width,
)

TEXTS = (
    "The build failed because the cache was stale.",
    "def load_config(path):\n    with open(path) as f:\n        return yaml.safe_load(f)",
    "Ünïcödé tëxt with émojis 🎉 and 中文字符 mixed in.",
    "Why does the HNSW index need a rebuild after a crash? " * 6,
)


@pytest.fixture(scope="module")
def reference() -> TorchBackbone:
    return TorchBackbone(default_model_dir(), "cpu")


def _inputs(backbone: TorchBackbone, text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    encoding = backbone._tokenizer.encode(text)
    ids = np.array([encoding.ids], dtype=np.int64)
    return ids, np.ones_like(ids), np.array([encoding.type_ids], dtype=np.int64)


def _forward(backbone: TorchBackbone, arrays: tuple[np.ndarray, ...] | np.ndarray) -> np.ndarray:
    weights = bert_weights(backbone._model)
    assert weights is not None
    ids, mask, types = (torch.from_numpy(np.asarray(a)) for a in arrays)
    with torch.inference_mode():
        return bert_forward(weights, ids, mask, types).numpy()


def test_bert_forward_is_transformers_forward(reference):
    """Unpadded single texts and one padded batch: the same last hidden states as transformers' BertModel."""
    for text in TEXTS:
        ids, mask, types = _inputs(reference, text)
        np.testing.assert_allclose(_forward(reference, (ids, mask, types)), reference._forward(ids, mask, types),
                                   atol=2e-5, rtol=0)
    encoded = [_inputs(reference, text) for text in TEXTS]
    width = max(e[0].shape[1] for e in encoded)
    batch = np.zeros((3, len(TEXTS), width), dtype=np.int64)
    for row, (ids, mask, types) in enumerate(encoded):
        n = ids.shape[1]
        batch[0, row, :n], batch[1, row, :n], batch[2, row, :n] = ids[0], mask[0], types[0]
    ours, theirs = _forward(reference, batch), reference._forward(batch[0], batch[1], batch[2])
    for row, (ids, _, _) in enumerate(encoded):  # padded positions' states are nobody's
        n = ids.shape[1]
        np.testing.assert_allclose(ours[row, :n], theirs[row, :n], atol=2e-5, rtol=0)


def test_padding_to_a_width_keeps_every_tokens_states(reference):
    """What a graph replays: the text padded to its captured width; its real tokens' states are the unpadded
    forward's (masked keys get zero attention weight)."""
    for text in TEXTS:
        ids, mask, types = _inputs(reference, text)
        width = padded_width(ids.shape[1])
        assert width is not None and width >= ids.shape[1]
        padded = padded_inputs(ids, mask, types, width)
        assert padded.shape == (3, 1, width) and not padded[:, :, ids.shape[1]:].any()
        states = _forward(reference, padded)[:, : ids.shape[1]]
        np.testing.assert_allclose(states, _forward(reference, (ids, mask, types)), atol=2e-5, rtol=0)


def test_widths():
    assert padded_width(1) == WIDTHS[0] and padded_width(WIDTHS[0] + 1) == WIDTHS[1]
    assert padded_width(WIDTHS[-1]) == WIDTHS[-1] and padded_width(WIDTHS[-1] + 1) is None
    assert padded_width(40, (32, 64)) == 64


def test_models_it_does_not_reproduce_are_refused(reference):
    config = reference._model.config
    saved = config.hidden_act
    try:
        config.hidden_act = "relu"
        assert bert_weights(reference._model) is None
    finally:
        config.hidden_act = saved
    assert bert_weights(reference._model) is not None


def test_cpu_backbone_never_captures(reference):
    assert reference._graphed is None
