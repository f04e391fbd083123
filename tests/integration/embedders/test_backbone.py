"""The shared transformer: tokenisation traps, batching, the model cache, and agreement with the torch and
sentence-transformers references."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from contextgraph.embedders import onnx_cache
from contextgraph.embedders.backbone import OnnxBackbone, TorchBackbone, default_model_dir, load_backbone
from contextgraph.embedders.e01_semantic import sentence_vector
from contextgraph.embedders.model_info import ModelInfo
from contextgraph.errors import EmbeddingError

TEXTS = (
    "The build failed because the cache was stale.",
    "ContextGraph stores memories in LMDB and indexes them with HNSW.",
    "def load_config(path):\n    with open(path) as f:\n        return yaml.safe_load(f)",
    "Yesterday we walked along the river and talked about holidays in Portugal.",
    "Upgrade numpy to 2.4.6 and see https://numpy.org/doc/stable/release.html for details.",
    "",
    "Ünïcödé tëxt with émojis 🎉 and 中文字符 mixed in.",
    "const userName = getUserName(request.session); // camelCase identifiers",
)

LONG = " ".join(f"word{i} means something slightly different in sentence number {i}." for i in range(60))

AGREEMENT_TEXTS = [
    *TEXTS,
    "Why does the HNSW index need a rebuild after a crash?",
    "import numpy as np\nx = np.zeros((3, 4))\nprint(x.shape)",
    "SELECT name, count(*) FROM memories GROUP BY name HAVING count(*) > 1;",
    "The quick brown fox jumps over the lazy dog.",
    "Kuramoto oscillators synchronise when the coupling K exceeds a critical value.",
    "Bitte speichere diese Notiz: Termin am Dienstag um 10 Uhr.",
    "   leading and trailing whitespace   ",
    "a" * 300,
    "Numbers: 3.14159, 2.71828, 1.41421 and 1e-9.",
    LONG,
    "short",
    "Merge the two duplicate memories about the deployment and keep the newer rationale.",
]


def test_encode_shapes_and_specials(backbone):
    enc = backbone.encode(["Hello world"])[0]
    assert enc.token_ids.tolist() == [101, 7592, 2088, 102]
    assert enc.offsets.tolist() == [[0, 0], [0, 5], [6, 11], [0, 0]]
    assert enc.special.tolist() == [True, False, False, True]
    assert enc.states.shape == (4, backbone.hidden_size) and enc.states.dtype == np.float32
    assert enc.token_ids.dtype == np.int32 and enc.offsets.dtype == np.int32
    assert not enc.truncated


def test_no_fixed_padding_and_own_truncation(backbone):
    """tokenizer.json pads to 128 and truncates at 128; the backbone must do neither."""
    short, long = backbone.encode(["hi", LONG])
    assert len(short.token_ids) == 3
    assert len(long.token_ids) == backbone.max_tokens == 256
    assert long.truncated and long.token_ids[-1] == 102


def test_batching_matches_one_by_one(backbone):
    texts = list(TEXTS) + [LONG] + [f"text number {i}" for i in range(40)]  # > one batch of 32
    together = backbone.encode(texts)
    for text, enc in zip(texts, together):
        alone = backbone.encode([text])[0]
        assert enc.text == text
        np.testing.assert_array_equal(enc.token_ids, alone.token_ids)
        np.testing.assert_allclose(enc.states, alone.states, atol=1e-4)
    assert backbone.encode([]) == []


def test_cache_layout_and_reuse(backbone, model_cache):
    info = ModelInfo.read(default_model_dir())
    digest = onnx_cache.model_hash(info, model_cache)
    assert len(digest) == 16 and int(digest, 16) >= 0
    graph = model_cache / digest / "model.onnx"
    assert backbone.graph_path == graph and graph.is_file()
    assert not [p for p in graph.parent.iterdir() if p.name.endswith(".tmp") or p.name.endswith(".raw")]
    mtime = graph.stat().st_mtime_ns
    again = OnnxBackbone(default_model_dir(), model_cache)  # found in the cache: no second export
    assert graph.stat().st_mtime_ns == mtime
    np.testing.assert_array_equal(again.encode(["same"])[0].states, backbone.encode(["same"])[0].states)


def test_publish_is_atomic(tmp_path):
    final = tmp_path / "sub" / "out.bin"

    def fail(tmp: Path) -> None:
        tmp.write_bytes(b"half")
        raise RuntimeError("export died")

    with pytest.raises(RuntimeError):
        onnx_cache._publish(final, fail)
    assert not final.exists() and list(final.parent.iterdir()) == []
    onnx_cache._publish(final, lambda tmp: tmp.write_bytes(b"whole"))
    assert final.read_bytes() == b"whole" and list(final.parent.iterdir()) == [final]


def test_model_info_reads_the_directory():
    info = ModelInfo.read(default_model_dir())
    assert (info.name, info.hidden_size, info.num_heads, info.vocab_size) == ("all-MiniLM-L6-v2", 384, 12, 30522)
    assert info.pooling == "mean" and info.max_seq_length == 256


def test_bad_model_dir_is_an_embedding_error(tmp_path):
    with pytest.raises(EmbeddingError):
        OnnxBackbone(tmp_path, tmp_path / "cache")


def test_serving_path_never_imports_torch(backbone, model_cache):
    """A fresh process with the graph cached: load + encode imports neither torch nor transformers."""
    script = textwrap.dedent(
        f"""
        import json, sys, time
        t0 = time.perf_counter()
        from contextgraph.embedders.backbone import load_backbone, default_model_dir
        from contextgraph.embedders.pipeline import FingerprintPipeline, Draft
        b = load_backbone(default_model_dir(), {str(model_cache)!r})
        t1 = time.perf_counter()
        FingerprintPipeline(b).embed([Draft("hello world")])
        heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "transformers", "sentence_transformers"))
        print(json.dumps({{"heavy": heavy, "runtime": b.runtime, "load_s": t1 - t0}}))
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "CONTEXTGRAPH_DEVICE"}  # the default: CPU, ONNX
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["heavy"] == [] and report["runtime"] == "onnxruntime-fp32"
    print(f"\ncold OnnxBackbone load (graph cached, fresh process): {report['load_s'] * 1e3:.0f} ms")


def test_load_backbone_choices(model_cache):
    assert isinstance(load_backbone(default_model_dir(), model_cache, runtime="onnx"), OnnxBackbone)
    assert isinstance(load_backbone(default_model_dir(), model_cache, device="cpu"), OnnxBackbone)
    with pytest.raises(ValueError):
        load_backbone(default_model_dir(), model_cache, runtime="tensorflow")
    import torch  # already imported by the export earlier in this session

    if not torch.cuda.is_available():  # asked for CUDA on a machine without it: falls back to ONNX
        assert isinstance(load_backbone(default_model_dir(), model_cache, device="cuda"), OnnxBackbone)


def test_onnx_matches_torch_states(backbone):
    reference = TorchBackbone(default_model_dir(), "cpu")
    assert reference.runtime == "torch-cpu"
    texts = list(TEXTS) + [LONG]
    for a, b in zip(backbone.encode(texts), reference.encode(texts)):
        np.testing.assert_array_equal(a.token_ids, b.token_ids)
        assert np.abs(a.states - b.states).max() < 1e-3


def test_half_precision_torch_path_agrees_with_fp32(backbone):
    """The GPU path's half precision, exercised on this CPU with bfloat16 (CPU torch runs it; float16 matmuls
    are CUDA's): the states come back float32, the model's own batch size is honoured, and E1 stays within
    cosine 0.99 of the fp32 ONNX path (bfloat16 keeps 8 bits of mantissa; float16 on a GPU keeps 11)."""
    half = TorchBackbone(default_model_dir(), "cpu", dtype="bfloat16", batch_size=4)
    assert half.runtime == "torch-cpu-bfloat16" and half.batch_size == 4
    texts = [t for t in AGREEMENT_TEXTS if t.strip()]
    ours = half.encode(texts)
    assert all(enc.states.dtype == np.float32 for enc in ours)
    for a, b in zip(backbone.encode(texts), ours):
        np.testing.assert_array_equal(a.token_ids, b.token_ids)
    cosines = np.array([float(sentence_vector(a) @ sentence_vector(b))
                        for a, b in zip(backbone.encode(texts), ours)])
    assert cosines.min() >= 0.99, dict(zip(texts, cosines.round(4)))
    with pytest.raises(ValueError, match="dtype"):
        TorchBackbone(default_model_dir(), "cpu", dtype="int4")


def test_e1_agrees_with_sentence_transformers(backbone):
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(default_model_dir()), device="cpu")
    model.max_seq_length = backbone.max_tokens
    expected = model.encode(AGREEMENT_TEXTS, normalize_embeddings=True, convert_to_numpy=True)
    ours = np.stack([sentence_vector(enc) for enc in backbone.encode(AGREEMENT_TEXTS)])
    cosines = np.sum(ours * expected, axis=1)
    print(f"\nE1 ONNX fp32 vs sentence-transformers over {len(cosines)} texts: min cosine {cosines.min():.6f}")
    assert cosines.min() >= 0.999, dict(zip(AGREEMENT_TEXTS, cosines.round(5)))


def test_int8_agrees_with_fp32(backbone, model_cache):
    """Per-channel int8 keeps E1 within cosine 0.98 of fp32 for real sentences. One-word and empty texts pool
    mostly the [CLS]/[SEP] states, which quantization moves more (measured 0.955-0.975): bounded separately."""
    quantized = OnnxBackbone(default_model_dir(), model_cache, quantized=True)
    assert quantized.runtime == "onnxruntime-int8" and quantized.graph_path.name == "model.int8.onnx"
    fp32 = np.stack([sentence_vector(e) for e in backbone.encode(AGREEMENT_TEXTS)])
    int8 = np.stack([sentence_vector(e) for e in quantized.encode(AGREEMENT_TEXTS)])
    cosines = np.sum(fp32 * int8, axis=1)
    tiny = np.array([len(t.split()) < 2 for t in AGREEMENT_TEXTS])
    print(
        f"\nE1 int8 vs fp32: {int(np.sum(~tiny))} sentences mean {cosines[~tiny].mean():.4f} min "
        f"{cosines[~tiny].min():.4f}; {int(tiny.sum())} one-word/empty texts min {cosines[tiny].min():.4f}"
    )
    assert cosines[~tiny].min() >= 0.98
    assert cosines[tiny].min() >= 0.94


def test_any_sentence_transformers_layout_works(tmp_path_factory, model_cache, backbone):
    """A different model: transformer in a sub-folder (modules.json), other dimensions, CLS pooling, a short
    position table. Dimensions come from its config.json, and every space follows them."""
    import shutil

    from transformers import BertConfig, BertModel

    from contextgraph.embedders.pipeline import Draft, FingerprintPipeline

    root = tmp_path_factory.mktemp("tiny-st-model")
    config = BertConfig(
        hidden_size=64, num_attention_heads=2, num_hidden_layers=2, intermediate_size=128, vocab_size=30522,
        max_position_embeddings=128,
    )
    BertModel(config).eval().save_pretrained(root / "0_Transformer")
    shutil.copy(default_model_dir() / "tokenizer.json", root / "0_Transformer" / "tokenizer.json")
    (root / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "0_Transformer", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]))
    (root / "1_Pooling").mkdir()
    (root / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": True}))

    tiny = OnnxBackbone(root, model_cache)
    assert (tiny.hidden_size, tiny.pooling, tiny.max_tokens, tiny.model_name) == (64, "cls", 128, root.name)
    assert tiny.graph_path.parent != backbone.graph_path.parent  # its own hash, its own cache entry
    reference = TorchBackbone(root, "cpu")
    for a, b in zip(tiny.encode(TEXTS), reference.encode(TEXTS)):
        assert np.abs(a.states - b.states).max() < 1e-3
    enc = tiny.encode([LONG])[0]
    assert len(enc.token_ids) == 128 and enc.truncated
    np.testing.assert_allclose(sentence_vector(enc, "cls"), enc.states[0] / np.linalg.norm(enc.states[0]), rtol=1e-5)

    pipeline = FingerprintPipeline(tiny)
    dims = {m["space"]: m["dim"] for m in pipeline.manifest()}
    assert (dims[1], dims[5], dims[7], dims[8], dims[10], dims[11], dims[12], dims[13]) == (
        64, 128, 80, 64, 70, 64, 64, 30522
    )
    pipeline.embed([Draft("a short memory about the HNSW index", modality="code")])


@pytest.mark.slow
def test_two_processes_racing_to_export(tmp_path):
    """Both export into one empty cache at once; both end with a working graph and no temporary is left.
    (Slow: two exports on two cores, ~20 s; `pytest -m slow`.)"""
    script = textwrap.dedent(
        f"""
        from contextgraph.embedders.backbone import OnnxBackbone, default_model_dir
        b = OnnxBackbone(default_model_dir(), {str(tmp_path)!r})
        print(b.encode(["race"])[0].states.sum())
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err[-2000:] for _, err in outs]
    assert outs[0][0].strip() == outs[1][0].strip()
    graphs = list(tmp_path.glob("*/model.onnx"))
    assert len(graphs) == 1
    assert not [p for p in tmp_path.rglob("*") if p.name.startswith(".")]
