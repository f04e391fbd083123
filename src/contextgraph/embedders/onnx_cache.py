"""The model cache: the ONNX graph of a local model, exported once with torch and kept under
`cache_dir/<model-hash>/` (by default the installation's cache, shared by every data directory:
config.default_model_cache).
The only module here that writes files, and the only one that imports torch or
transformers (inside `_export_fp32`, never at import time): serving reads the cached graph with ONNX Runtime.

Every file is written to a temporary name in its final directory and renamed into place, so two processes that
race to export the same model both end with a complete graph and neither ever reads a half-written one."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path

from contextgraph.embedders.model_info import ModelInfo

FP32_NAME = "model.onnx"
INT8_NAME = "model.int8.onnx"
OPSET = 17
_HASH_CHUNK = 1 << 20


def model_hash(info: ModelInfo, cache_dir: Path) -> str:
    """sha256 over config.json + the weights + tokenizer.json, first 16 hex digits.

    Hashing ~90 MB of weights costs ~0.2 s, as much as loading the graph, so the result is remembered in the
    cache keyed by the files' paths, sizes and modification times; a changed file gets a new key and is re-hashed."""
    files = (info.config_path, info.weights_path, info.tokenizer_path)
    stamp = hashlib.sha256()
    for path in files:
        st = path.stat()
        stamp.update(f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    memo = Path(cache_dir) / "hashes" / stamp.hexdigest()[:32]
    try:
        remembered = memo.read_text().strip()
        if len(remembered) == 16:
            return remembered
    except FileNotFoundError:
        pass
    content = hashlib.sha256()
    for path in files:
        with open(path, "rb") as f:
            while chunk := f.read(_HASH_CHUNK):
                content.update(chunk)
    digest = content.hexdigest()[:16]
    _atomic_write_bytes(memo, digest.encode())
    return digest


# One export at a time per process: transformers' lazy module imports are not thread-safe (two loader threads
# importing it at once get "cannot import name 'AutoModel'"), and a second export would only repeat the first.
# Across processes the atomic rename in _publish keeps racing exports safe.
_EXPORT_LOCK = threading.Lock()


def cached_graph(info: ModelInfo, cache_dir: Path, *, quantized: bool = False) -> Path:
    """The path of the model's ONNX graph (fp32 fused, or int8 per-channel), exporting it first if absent."""
    model_cache = Path(cache_dir) / model_hash(info, cache_dir)
    fp32 = model_cache / FP32_NAME
    int8 = model_cache / INT8_NAME
    wanted = int8 if quantized else fp32
    if wanted.is_file():
        return wanted
    with _EXPORT_LOCK, _export_lock_file(model_cache):
        if not fp32.is_file():
            _publish(fp32, lambda tmp: _export_fp32(info, tmp))
        if quantized and not int8.is_file():
            _publish(int8, lambda tmp: _quantize_int8(fp32, tmp))
    return wanted


@contextlib.contextmanager
def _export_lock_file(model_cache: Path) -> Iterator[None]:
    """One export at a time across processes too: the cache is shared by every data directory, so
    `setup.sh`, a server and a hook can all miss it at once; the later ones wait (seconds) and find the graph
    the first one published instead of exporting it again. Without flock (or on a filesystem that refuses it)
    they export side by side, which the atomic rename keeps safe."""
    model_cache.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # not POSIX
        yield
        return
    with open(model_cache / ".export.lock", "a+b") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX)
        except OSError:
            yield
            return
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _export_fp32(info: ModelInfo, dest: Path) -> None:
    """torch → ONNX (opset 17, TorchScript exporter, dynamic batch and sequence axes) → onnxruntime's transformer
    optimizer (fused attention, layer norms, GELU), written to `dest`."""
    import inspect

    import torch
    from onnxruntime.transformers.optimizer import optimize_model
    from transformers import AutoModel

    # Eager attention exports as plain MatMul/Softmax, which the optimizer fuses into its Attention kernel;
    # the SDPA path exports in a shape it does not recognise (measured: 0 of 6 attention blocks fused).
    try:
        model = AutoModel.from_pretrained(str(info.transformer_dir), attn_implementation="eager")
    except (TypeError, ValueError):
        model = AutoModel.from_pretrained(str(info.transformer_dir))
    model.eval()
    takes_token_types = "token_type_ids" in inspect.signature(model.forward).parameters

    class LastHiddenState(torch.nn.Module):
        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids=None):
            extra = {"token_type_ids": token_type_ids} if token_type_ids is not None else {}
            return self.inner(input_ids=input_ids, attention_mask=attention_mask, **extra).last_hidden_state

    sample = torch.ones((2, 8), dtype=torch.long)
    inputs = (sample, torch.ones_like(sample)) + ((torch.zeros_like(sample),) if takes_token_types else ())
    names = ["input_ids", "attention_mask", "token_type_ids"][: len(inputs)]
    axes = {name: {0: "batch", 1: "sequence"} for name in [*names, "last_hidden_state"]}
    raw = dest.with_name(dest.name + ".raw")
    try:
        # The TorchScript exporter is deprecated in favour of dynamo, and tracing warns about shape-dependent
        # Python branches; neither applies to this fixed-architecture, dynamic-axes export (tested against torch).
        with torch.inference_mode(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                LastHiddenState(model), inputs, str(raw), opset_version=OPSET, dynamo=False,
                input_names=names, output_names=["last_hidden_state"], dynamic_axes=axes,
            )
        model_type = info.model_type if info.model_type in _optimizer_model_types() else "bert"
        fused = optimize_model(str(raw), model_type=model_type, num_heads=info.num_heads, hidden_size=info.hidden_size)
        fused.save_model_to_file(str(dest))
    finally:
        raw.unlink(missing_ok=True)


def _optimizer_model_types() -> set[str]:
    from onnxruntime.transformers.optimizer import MODEL_TYPES

    return set(MODEL_TYPES)


def _quantize_int8(fp32: Path, dest: Path) -> None:
    """Dynamic int8 with per-channel weight scales (per-tensor measured clearly worse: cosine 0.962 vs 0.992)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        str(fp32), str(dest), per_channel=True, weight_type=QuantType.QInt8,
        # The fused graph's contrib ops carry no type information for the quantizer; tell it they are float.
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )


def _publish(final: Path, write) -> None:
    """Run `write(tmp)` to a unique temporary file beside `final`, then rename it into place atomically."""
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        write(tmp)
        os.chmod(tmp, 0o644)  # mkstemp makes it private; the cache may be shared by the user's processes
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)


def _atomic_write_bytes(final: Path, data: bytes) -> None:
    def write(tmp: Path) -> None:
        tmp.write_bytes(data)

    _publish(final, write)
