"""The pipeline: one forward for a batch, complete and well-shaped fingerprints, the manifest, the errors."""

from __future__ import annotations

import numpy as np
import pytest

from contextgraph.embedders.base import Embedder
from contextgraph.embedders.pipeline import Draft, FingerprintPipeline
from contextgraph.embedders.registry import default_embedders
from contextgraph.embedders.validation import check_fingerprint
from contextgraph.errors import DimensionMismatch, EmbeddingError, InvalidFingerprint, InvalidParams
from contextgraph.fingerprint import SPACES, Sparse

DIMS = {1: 384, 2: 512, 3: 512, 4: 512, 5: 768, 6: 262144, 7: 400, 8: 384, 9: 1024, 10: 390, 11: 384, 12: 128,
        13: 30522}


class CountingBackbone:
    def __init__(self, inner):
        self.inner, self.calls = inner, []
        for attr in ("model_name", "hidden_size", "runtime", "max_tokens", "vocab_size", "pooling"):
            setattr(self, attr, getattr(inner, attr))

    def encode(self, texts):
        self.calls.append(list(texts))
        return self.inner.encode(texts)


def drafts(sample_texts):
    return [
        Draft(text, modality="code" if "def " in text or "const " in text else "text",
              timestamp=1.76e9 + 3600 * i, session_position=i, global_position=100 + i)
        for i, text in enumerate(sample_texts)
    ]


def test_one_forward_for_the_whole_batch(backbone, sample_texts):
    counting = CountingBackbone(backbone)
    pipeline = FingerprintPipeline(counting)
    fingerprints = pipeline.embed(drafts(sample_texts))
    assert len(counting.calls) == 1 and counting.calls[0] == list(sample_texts)
    assert len(fingerprints) == len(sample_texts)


def test_every_space_has_its_kind_dtype_and_dim(pipeline, sample_texts):
    for fingerprint in pipeline.embed(drafts(sample_texts)):
        assert sorted(fingerprint) == list(range(1, 14))
        for space in SPACES:
            v = fingerprint[space.id]
            if space.kind == "dense":
                assert v.shape == (DIMS[space.id],) and v.dtype == np.float32 and np.isfinite(v).all()
            elif space.kind == "sparse":
                assert isinstance(v, Sparse) and v.indices.dtype == np.int32 and v.values.dtype == np.float32
                assert (len(v) == 0 or v.indices.max() < DIMS[space.id]) and np.all(np.diff(v.indices) > 0)
            elif space.kind == "binary":
                assert v.shape == (DIMS[space.id] // 8,) and v.dtype == np.uint8
            else:
                assert v.ndim == 2 and v.shape[1] == DIMS[space.id] and 1 <= v.shape[0] <= 48


def test_fingerprints_are_deterministic(pipeline, sample_texts):
    first, second = pipeline.embed(drafts(sample_texts)), pipeline.embed(list(reversed(drafts(sample_texts))))
    for a, b in zip(first, reversed(second)):
        for space in a:
            if isinstance(a[space], Sparse):
                np.testing.assert_array_equal(a[space].indices, b[space].indices)
                np.testing.assert_allclose(a[space].values, b[space].values)
            else:
                np.testing.assert_allclose(a[space], b[space], atol=1e-5)  # batch composition may differ


def test_manifest_and_timings(pipeline, sample_texts):
    manifest = pipeline.manifest()
    assert [m["space"] for m in manifest] == list(range(1, 14))
    assert [m["name"] for m in manifest] == [s.name for s in SPACES]
    assert {m["space"]: m["dim"] for m in manifest} == DIMS
    assert all(m["method"] and m["kind"] == SPACES[m["space"] - 1].kind for m in manifest)
    pipeline.embed(drafts(sample_texts)[:2])
    timings = pipeline.last_timings.as_dict()
    assert timings["items"] == 2 and set(timings["embedder_ms"]) == {f"E{i}" for i in range(1, 14)}
    assert timings["total_ms"] >= timings["encode_ms"] > 0


def test_embedders_satisfy_the_protocol(backbone):
    for embedder in default_embedders(backbone):
        assert isinstance(embedder, Embedder)


def test_bad_drafts_are_invalid_params(pipeline):
    for bad in (Draft("x", modality="video"), Draft("x", timestamp=float("nan")), Draft("x", session_position=-1)):
        with pytest.raises(InvalidParams):
            pipeline.embed([bad])
    assert pipeline.embed([]) == []


def test_check_fingerprint_rejects_incomplete_and_misshapen(pipeline):
    manifest = pipeline.manifest()
    good = pipeline.embed([Draft("hello")])[0]
    check_fingerprint(good, manifest)
    missing = {k: v for k, v in good.items() if k != 9}
    with pytest.raises(InvalidFingerprint) as info:
        check_fingerprint(missing, manifest)
    assert info.value.code_name == "INVALID_FINGERPRINT" and info.value.data["missing"] == [9]
    with pytest.raises(DimensionMismatch) as info:
        check_fingerprint({**good, 1: np.zeros(1024, dtype=np.float32)}, manifest)
    assert info.value.code_name == "DIMENSION_MISMATCH" and info.value.data["expected"] == [384]
    with pytest.raises(InvalidFingerprint):
        check_fingerprint({**good, 1: np.full(384, np.nan, dtype=np.float32)}, manifest)
    with pytest.raises(DimensionMismatch):
        check_fingerprint({**good, 13: Sparse(np.array([40000], np.int32), np.ones(1, np.float32))}, manifest)
    with pytest.raises(DimensionMismatch):
        check_fingerprint({**good, 12: np.zeros((3, 64), dtype=np.float32)}, manifest)


def test_pipeline_refuses_an_incomplete_embedder_set(backbone):
    with pytest.raises(InvalidFingerprint):
        FingerprintPipeline(backbone, default_embedders(backbone)[:12])


def test_a_failing_embedder_is_an_embedding_error(backbone):
    embedders = list(default_embedders(backbone))

    class Broken:
        space, name, kind, dim, method = 9, "hdc", "binary", 1024, "broken"

        def embed_batch(self, items):
            raise RuntimeError("boom")

        def similarity(self, query, docs):
            return np.zeros(len(docs), dtype=np.float32)

    embedders[8] = Broken()
    with pytest.raises(EmbeddingError) as info:
        FingerprintPipeline(backbone, embedders).embed([Draft("x")])
    assert info.value.data["space"] == 9


def test_an_embedder_returning_the_wrong_dim_is_caught(backbone):
    embedders = list(default_embedders(backbone))
    e4 = embedders[3]

    class Short:
        space, name, kind, dim, method = 4, e4.name, e4.kind, e4.dim, "short"

        def embed_batch(self, items):
            return [v[:256] for v in e4.embed_batch(items)]

        def similarity(self, query, docs):
            return e4.similarity(query, docs)

    embedders[3] = Short()
    with pytest.raises(DimensionMismatch):
        FingerprintPipeline(backbone, embedders).embed([Draft("x")])


def test_build_pipeline_from_settings(model_cache, tmp_path):
    from contextgraph.config import Settings
    from contextgraph.embedders.pipeline import build_pipeline

    env = {"CONTEXTGRAPH_HOME": str(tmp_path), "CONTEXTGRAPH_RUNTIME": "onnx",
           "CONTEXTGRAPH_MODEL_CACHE": str(model_cache)}
    pipeline = build_pipeline(Settings.from_env(env))  # the int8 graph unless told otherwise
    assert pipeline.backbone.runtime == "onnxruntime-int8" and len(pipeline.embedders) == 13
    fp32 = build_pipeline(Settings.from_env({**env, "CONTEXTGRAPH_INT8": "0"}))
    assert fp32.backbone.runtime == "onnxruntime-fp32" and len(fp32.embedders) == 13
