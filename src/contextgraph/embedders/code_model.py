"""The code encoder E7 reads by default: all-MiniLM-L6-v2 fine-tuned here on (docstring sentence, function body)
pairs from third-party packages (docs/spaces.md#e7-code; the model card is code_model/README.md).

What ships is only what training changed: the six transformer layers in float16 (code_model/code_model.safetensors,
~21 MB). The embedding tables were frozen, so they are the base model's. `assemble` writes a complete model
directory (the base model's config and tokenizer, float32 weights: base tables + shipped layers) into the model
cache once, under a name keyed by both files; from there it loads like any local model directory (an ONNX graph
exported and cached on CPU, torch on a GPU), so CPU and GPU serve the same weights.

Needs safetensors and numpy only, never torch: a server assembles the directory on its first start."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from contextgraph.embedders.model_info import ModelInfo

SHIPPED_DIR = Path(__file__).resolve().parent / "code_model"
LAYERS_NAME = "code_model.safetensors"
MODEL_NAME = "code-MiniLM-L6-v2"  # + the layers' digest: a retrained model is another method to a store
MAX_SEQ_LENGTH = 128  # as trained: measured 0.6362 vs 0.6317 at 256 (E7 alone, code test half), and half the cost
# The base model's files the assembled directory needs besides the weights (the tokenizer's and the config).
_COPIED = ("config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json")


def shipped_layers() -> Path:
    return SHIPPED_DIR / LAYERS_NAME


def assemble(base_dir: Path, cache_dir: Path, layers: Path | None = None) -> Path:
    """The complete code model's directory under `cache_dir`, written on first use (atomically: a racing process
    finds either nothing or the whole directory). Raises FileNotFoundError when the layers are missing."""
    layers = layers or shipped_layers()
    base = ModelInfo.read(base_dir)
    digest = _digest(layers)
    st = base.weights_path.stat()
    identity = f"{digest}|{MAX_SEQ_LENGTH}|{base.weights_path.resolve()}|{st.st_size}|{st.st_mtime_ns}"
    stamp = hashlib.sha256(identity.encode())
    target = Path(cache_dir) / f"code-model-{stamp.hexdigest()[:16]}"
    if (target / "model.safetensors").is_file():
        return target
    from safetensors.numpy import load_file, save_file

    weights = load_file(str(base.weights_path))
    tuned = load_file(str(layers))
    unknown = sorted(set(tuned) - set(weights))
    if unknown:
        raise ValueError(f"{layers} has tensors the base model does not: {unknown[:3]}")
    for name, tensor in tuned.items():
        if tensor.shape != weights[name].shape:
            raise ValueError(f"{layers}: {name} is {tensor.shape}, the base model's {weights[name].shape}")
        weights[name] = tensor.astype(np.float32)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".code-model-", dir=target.parent))
    try:
        for name in _COPIED:
            if (base.transformer_dir / name).is_file():
                shutil.copyfile(base.transformer_dir / name, staging / name)
        save_file(weights, str(staging / "model.safetensors"))
        (staging / "sentence_bert_config.json").write_text(
            json.dumps({"max_seq_length": MAX_SEQ_LENGTH, "do_lower_case": False}), encoding="utf-8")
        (staging / "README.md").write_text(f"# {MODEL_NAME}-{digest[:8]}\n\nAssembled from {layers}; its model "
                                           "card is the README.md beside it.\n", encoding="utf-8")
        try:
            os.rename(staging, target)
        except OSError:  # another process published it first: theirs is the same bytes
            if not (target / "model.safetensors").is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _digest(layers: Path) -> str:
    """sha256 of the shipped layers' bytes (~21 MB, ~40 ms): names the model, so that a store whose E7 another
    version made re-embeds it, and keys the assembled directory together with the base weights' identity."""
    digest = hashlib.sha256()
    with open(layers, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
