"""E7's code encoder (embedders.code_model): assembled from the base model's tables and the shipped layers,
served like any local model (ONNX on CPU, torch as the reference and on a GPU), and E7 from texts alone equals
E7 in the pipeline (what re-embedding a store runs)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from contextgraph.embedders import code_model
from contextgraph.embedders.backbone import OnnxBackbone, TorchBackbone, default_model_dir
from contextgraph.embedders.model_info import ModelInfo
from contextgraph.embedders.pipeline import Draft, FingerprintPipeline

# Written for these tests (not from any package the model was trained on): docstring-style questions and
# the functions that answer them.
FUNCTIONS = {
    "Return the median of a list of numbers.":
        "def middle_value(xs):\n    s = sorted(xs)\n    n = len(s)\n"
        "    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2",
    "Read a JSON file and return its contents.":
        "def load(path):\n    with open(path, encoding='utf-8') as f:\n        return json.load(f)",
    "Retry a function call with exponential backoff.":
        "def call_again(fn, tries=5):\n    for i in range(tries):\n        try:\n            return fn()\n"
        "        except OSError:\n            time.sleep(2 ** i)\n    raise RuntimeError('gave up')",
    "Split a camelCase identifier into lower-case words.":
        "def words(name):\n    return [w.lower() for w in re.findall(r'[A-Z]?[a-z]+|\\d+', name)]",
    "Count how often each word occurs in a text.":
        "def tally(text):\n    counts = {}\n    for w in text.split():\n        counts[w] = counts.get(w, 0) + 1\n"
        "    return counts",
}


@pytest.fixture(scope="module")
def code_dir(model_cache):
    return code_model.assemble(default_model_dir(), model_cache)


def test_the_assembled_model_is_the_base_tables_and_the_shipped_layers(code_dir, model_cache):
    info = ModelInfo.read(code_dir)
    assert info.name.startswith(code_model.MODEL_NAME + "-") and info.hidden_size == 384
    weights = load_file(str(info.weights_path))
    base = load_file(str(ModelInfo.read(default_model_dir()).weights_path))
    shipped = load_file(str(code_model.shipped_layers()))
    assert set(weights) == set(base)
    for name, tensor in weights.items():
        expected = shipped[name].astype(np.float32) if name in shipped else base[name]
        np.testing.assert_array_equal(tensor, expected, err_msg=name)
    assert any(name.startswith("encoder.") for name in shipped)
    assert not any(name.startswith("embeddings.") for name in shipped)  # frozen in training: not shipped
    stamp = os.stat(info.weights_path).st_mtime_ns
    assert code_model.assemble(default_model_dir(), model_cache) == code_dir  # once: found, not rewritten
    assert os.stat(info.weights_path).st_mtime_ns == stamp


def test_layers_that_do_not_fit_the_base_model_are_refused(tmp_path):
    bad = tmp_path / "bad.safetensors"
    save_file({"encoder.layer.0.attention.self.query.weight": np.zeros((3, 3), dtype=np.float16)}, str(bad))
    with pytest.raises(ValueError, match=r"query\.weight"):
        code_model.assemble(default_model_dir(), tmp_path / "cache", layers=bad)
    stray = tmp_path / "stray.safetensors"
    save_file({"classifier.weight": np.zeros((2, 2), dtype=np.float16)}, str(stray))
    with pytest.raises(ValueError, match="does not"):
        code_model.assemble(default_model_dir(), tmp_path / "cache", layers=stray)
    assert not any(p.name.startswith("code-model-") for p in (tmp_path / "cache").glob("*"))


def test_onnx_serves_the_states_torch_computes(code_backbone, code_dir, model_cache):
    """One model file: the fp32 ONNX graph computes torch's states (the GPU path); the int8 graph the CPU serves
    gives the same sentence vectors to a cosine of 0.98 or more."""
    reference = TorchBackbone(code_dir, "cpu")
    fp32 = OnnxBackbone(code_dir, model_cache)
    texts = [*FUNCTIONS, *FUNCTIONS.values()]
    for a, b, q in zip(fp32.encode(texts), reference.encode(texts), code_backbone.encode(texts)):
        np.testing.assert_array_equal(a.token_ids, b.token_ids)
        assert np.abs(a.states - b.states).max() < 1e-3
        u, v = a.states.mean(axis=0), q.states.mean(axis=0)
        assert float(u @ v / np.linalg.norm(u) / np.linalg.norm(v)) > 0.98


def test_e7_from_texts_equals_e7_in_the_pipeline(backbone, code_backbone):
    pipeline = FingerprintPipeline(backbone, code_encoder=code_backbone)
    texts = [*FUNCTIONS.values(), "a plain note about lunch", ""]
    modalities = ["code"] * len(FUNCTIONS) + ["text", "text"]
    whole = pipeline.embed([Draft(t, m) for t, m in zip(texts, modalities)])
    alone = pipeline.embed_space(7, texts, modalities)
    for fingerprint, vector in zip(whole, alone):
        assert fingerprint[7].shape == (400,)
        np.testing.assert_allclose(fingerprint[7], vector, atol=1e-6)
    assert "code-MiniLM-L6-v2" in pipeline.method(7) and "(int8)" in pipeline.method(7)
    shared = FingerprintPipeline(backbone)
    assert shared.method(7) != pipeline.method(7)  # a store records which one made its E7
    np.testing.assert_allclose(shared.embed_space(7, texts[:2], modalities[:2])[1],
                               shared.embed([Draft(texts[1], "code")])[0][7], atol=1e-6)


def test_the_code_forward_beside_the_shared_one_changes_no_fingerprint(backbone, code_backbone):
    """side_forward runs E7's forward on a thread of its own while the shared forward runs (the CPU serving
    path): every space of every fingerprint equals the one made with the forwards in turn, with several callers
    at once; a failing code forward is E7's EmbeddingError, and the pipeline keeps working after it."""
    from concurrent.futures import ThreadPoolExecutor

    from contextgraph.errors import EmbeddingError

    serial = FingerprintPipeline(backbone, code_encoder=code_backbone)
    side = FingerprintPipeline(backbone, code_encoder=code_backbone, side_forward=True)
    drafts = [Draft(t, m) for t, m in [*((c, "code") for c in FUNCTIONS.values()),
                                        *((q, "text") for q in FUNCTIONS), ("", "text")]]
    want = [serial.embed([d])[0] for d in drafts]  # one by one, as stores and queries come
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda d: side.embed([d])[0], drafts))
    for fingerprints, expected in ((got, want), (side.embed(drafts), serial.embed(drafts))):
        for a, b in zip(fingerprints, expected, strict=True):
            assert a.keys() == b.keys()
            for space in a:
                x, y = (v.values if hasattr(v, "values") else v for v in (a[space], b[space]))
                np.testing.assert_array_equal(x, y)
    code = side.embedders[6]

    def broken(texts):
        raise RuntimeError("the code model's session is gone")

    code.encoder_pooled, real = broken, code.encoder_pooled
    try:
        with pytest.raises(EmbeddingError, match="E7"):
            side.embed(drafts[:2])
    finally:
        code.encoder_pooled = real
    np.testing.assert_array_equal(side.embed(drafts[:1])[0][7], want[0][7])


def test_a_lowered_thread_runs_the_code_forward_itself():
    """A background thread (contextgraph.background lowers its priority) must not start the side forward's worker:
    the worker would inherit the lowered priority and every request's E7 forward after it would run on it."""
    import threading

    from contextgraph.background import start_thread
    from contextgraph.embedders.side_forward import SideForward

    side, ran_on = SideForward("test-side"), []

    def where() -> str:
        ran_on.append(threading.current_thread().name)
        return ran_on[-1]

    start_thread(lambda: side.submit(where).result(), name="lowered").join()
    assert ran_on == ["lowered"] and side._executor is None
    assert side.submit(where).result().startswith("test-side")


def test_each_question_finds_its_function_in_e7(backbone, code_backbone):
    pipeline = FingerprintPipeline(backbone, code_encoder=code_backbone)
    questions, bodies = list(FUNCTIONS), list(FUNCTIONS.values())
    q = np.stack(pipeline.embed_space(7, questions, ["text"] * len(questions)))
    d = np.stack(pipeline.embed_space(7, bodies, ["code"] * len(bodies)))
    assert list((q @ d.T).argmax(axis=1)) == list(range(len(questions)))
