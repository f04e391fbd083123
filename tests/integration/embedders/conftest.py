"""One ONNX backbone per test session, from the user-level model cache (tests/conftest.py: model_cache); every
test shares it."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest

from contextgraph.embedders import code_model
from contextgraph.embedders.backbone import OnnxBackbone, default_model_dir
from contextgraph.embedders.base import MemoryInput
from contextgraph.embedders.pipeline import FingerprintPipeline


@pytest.fixture(scope="session")
def backbone(model_cache) -> OnnxBackbone:
    return OnnxBackbone(default_model_dir(), model_cache)


@pytest.fixture(scope="session")
def code_backbone(model_cache) -> OnnxBackbone:
    """E7's code encoder as the server loads it by default (embedders.code_model; int8 on CPU)."""
    return OnnxBackbone(code_model.assemble(default_model_dir(), model_cache), model_cache, quantized=True)


@pytest.fixture(scope="session")
def pipeline(backbone, code_backbone) -> FingerprintPipeline:
    return FingerprintPipeline(backbone, code_encoder=code_backbone)


@pytest.fixture(scope="session")
def memory(backbone):
    """memory("text", modality=..., timestamp=...) → a MemoryInput encoded by the shared backbone."""

    def make(text: str, **fields) -> MemoryInput:
        return MemoryInput(encoded=backbone.encode([text])[0], **fields)

    return make


@pytest.fixture(scope="session")
def sample_texts() -> tuple[str, ...]:
    return SAMPLE_TEXTS


SAMPLE_TEXTS = (
    "The build failed because the cache was stale.",
    "A stale cache leads to failed builds.",
    "ContextGraph stores memories in LMDB and indexes them with HNSW.",
    "def load_config(path):\n    with open(path) as f:\n        return yaml.safe_load(f)",
    "Yesterday we walked along the river and talked about holidays in Portugal.",
    "Upgrade numpy to 2.4.6 and see https://numpy.org/doc/stable/release.html for details.",
    "",
    "ok",
    "Ünïcödé tëxt with émojis 🎉 and 中文字符 mixed in.",
    "const userName = getUserName(request.session); // camelCase identifiers",
)
