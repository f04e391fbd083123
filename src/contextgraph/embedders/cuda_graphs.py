"""One text's forward through a BERT encoder on a CUDA device, replayed from captured CUDA graphs.

transformers' forward of a six-layer model over one ~100-token text spends most of its ~4 ms on an H100
launching ~100 kernels from Python (benchmarks/HISTORY.md, the GPU batch path); the device's own work is a
fraction of that. A CUDA graph records the launches once per padded length and replays them in one call.
transformers' forward cannot be captured as it is (its mask preparation asks the device whether any position is
padding: a host sync, which capture forbids), so the encoder is written out here over the loaded model's own
weights: embeddings, then per layer self-attention (`scaled_dot_product_attention` with an additive padding
mask) and the feed-forward block, each followed by LayerNorm, as BERT does. `bert_forward` is that function run
eagerly: the reference a test compares with transformers on the CPU, and what each graph records.

Only BERT-family encoders (model_type "bert", absolute positions, exact GELU) take this path, and only one text
at a time up to the largest width: batches and longer texts run transformers' forward as before."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

log = logging.getLogger(__name__)

# Padded lengths a single text is captured at: a text runs at the smallest that holds it. Each width is one
# graph per model (a few MB of the device's memory); at most 2x the positions of an unpadded forward.
WIDTHS = (16, 32, 64, 128, 256)


@dataclass(frozen=True, slots=True)
class BertWeights:
    word: torch.Tensor
    position: torch.Tensor
    token_type: torch.Tensor
    norm: tuple[torch.Tensor, torch.Tensor]
    layers: tuple[dict[str, torch.Tensor], ...]
    heads: int
    eps: float


_LAYER_PARAMS = {  # our name -> the parameter's name under encoder.layer.{i}. in transformers' BertModel
    "q_w": "attention.self.query.weight", "q_b": "attention.self.query.bias",
    "k_w": "attention.self.key.weight", "k_b": "attention.self.key.bias",
    "v_w": "attention.self.value.weight", "v_b": "attention.self.value.bias",
    "o_w": "attention.output.dense.weight", "o_b": "attention.output.dense.bias",
    "ln1_w": "attention.output.LayerNorm.weight", "ln1_b": "attention.output.LayerNorm.bias",
    "in_w": "intermediate.dense.weight", "in_b": "intermediate.dense.bias",
    "out_w": "output.dense.weight", "out_b": "output.dense.bias",
    "ln2_w": "output.LayerNorm.weight", "ln2_b": "output.LayerNorm.bias",
}


def bert_weights(model: Any) -> BertWeights | None:
    """The encoder's weights as tensors (shared with `model`, no copy), or None when `model` is not a BERT
    encoder this module reproduces exactly."""
    config = model.config
    if (getattr(config, "model_type", None) != "bert" or getattr(config, "hidden_act", None) != "gelu"
            or getattr(config, "position_embedding_type", "absolute") != "absolute"):
        return None
    params = dict(model.named_parameters())
    try:
        layers = tuple(
            {ours: params[f"encoder.layer.{i}.{theirs}"] for ours, theirs in _LAYER_PARAMS.items()}
            for i in range(config.num_hidden_layers))
        return BertWeights(
            word=params["embeddings.word_embeddings.weight"],
            position=params["embeddings.position_embeddings.weight"],
            token_type=params["embeddings.token_type_embeddings.weight"],
            norm=(params["embeddings.LayerNorm.weight"], params["embeddings.LayerNorm.bias"]),
            layers=layers, heads=int(config.num_attention_heads), eps=float(config.layer_norm_eps))
    except KeyError:  # a BERT variant with other parameter names
        return None


def bert_forward(w: BertWeights, ids: torch.Tensor, mask: torch.Tensor, types: torch.Tensor) -> torch.Tensor:
    """The last hidden states [B, T, H] of int64 inputs [B, T]: transformers' BertModel forward, in plain ops
    that launch the same kernels every call (nothing here reads a value back to the host)."""
    batch, width = ids.shape
    hidden = w.word.shape[1]
    x = F.embedding(ids, w.word) + w.position[:width] + F.embedding(types, w.token_type)
    x = F.layer_norm(x, (hidden,), *w.norm, eps=w.eps)
    dtype = x.dtype
    # additive: 0 where a key is a token, the dtype's most negative value where it is padding (every query row
    # keeps at least its own [CLS], so no row is all padding and softmax stays finite)
    bias = (1.0 - mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min
    head_dim = hidden // w.heads

    def split(t: torch.Tensor) -> torch.Tensor:
        return t.view(batch, width, w.heads, head_dim).transpose(1, 2)

    for p in w.layers:
        attended = F.scaled_dot_product_attention(
            split(F.linear(x, p["q_w"], p["q_b"])), split(F.linear(x, p["k_w"], p["k_b"])),
            split(F.linear(x, p["v_w"], p["v_b"])), attn_mask=bias)
        attended = attended.transpose(1, 2).reshape(batch, width, hidden)
        x = F.layer_norm(F.linear(attended, p["o_w"], p["o_b"]) + x, (hidden,), p["ln1_w"], p["ln1_b"], eps=w.eps)
        inner = F.gelu(F.linear(x, p["in_w"], p["in_b"]))
        x = F.layer_norm(F.linear(inner, p["out_w"], p["out_b"]) + x, (hidden,), p["ln2_w"], p["ln2_b"], eps=w.eps)
    return x


def padded_width(length: int, widths: tuple[int, ...] = WIDTHS) -> int | None:
    """The smallest captured width that holds `length` tokens, None when none does."""
    return next((width for width in widths if width >= length), None)


def padded_inputs(ids: np.ndarray, mask: np.ndarray, types: np.ndarray, width: int) -> np.ndarray:
    """One text's three [1, T] inputs as one [3, 1, width] array, zero past T (padding: id 0, mask 0)."""
    out = np.zeros((3, 1, width), dtype=np.int64)
    length = ids.shape[1]
    out[0, :, :length], out[1, :, :length], out[2, :, :length] = ids, mask, types
    return out


@dataclass(frozen=True, slots=True)
class _Graph:
    graph: Any  # torch.cuda.CUDAGraph
    inputs: torch.Tensor  # [3, 1, width] int64 on the device, what the graph reads
    states: torch.Tensor  # [1, width, H] on the device, what the graph writes


class GraphedEncoder:
    """Single-text forwards of one BERT encoder replayed from a CUDA graph per padded width, each captured on
    its first use. Callers serialise calls (TorchBackbone's forward lock): a replay writes the graph's buffers."""

    def __init__(self, weights: BertWeights, device: torch.device, widths: tuple[int, ...] = WIDTHS) -> None:
        self._weights = weights
        self._device = device
        self._widths = tuple(w for w in widths if w <= weights.position.shape[0])
        self._graphs: dict[int, _Graph] = {}
        self._pool = torch.cuda.graph_pool_handle()  # one memory pool for all widths: they never run at once
        self.failed: str | None = None  # why capture failed, after which every call runs eagerly elsewhere

    def states(self, ids: np.ndarray, mask: np.ndarray, types: np.ndarray) -> np.ndarray | None:
        """The [1, T, H] float32 states of one text, or None when this text is not for a graph (a batch, a text
        longer than the widest graph, or capture failed): the caller runs its own forward then."""
        if self.failed is not None or ids.shape[0] != 1:
            return None
        length = ids.shape[1]
        width = padded_width(length, self._widths)
        if width is None:
            return None
        graph = self._graphs.get(width)
        if graph is None:
            graph = self._capture(width)
            if graph is None:
                return None
        graph.inputs.copy_(torch.from_numpy(padded_inputs(ids, mask, types, width)))
        graph.graph.replay()
        states = graph.states[:, :length]
        if states.dtype == torch.bfloat16:  # no numpy dtype: come back as float16, the same width
            states = states.to(torch.float16)
        return states.cpu().numpy().astype(np.float32, copy=False)  # .cpu() waits for the replay

    def _capture(self, width: int) -> _Graph | None:
        try:
            with torch.cuda.device(self._device):
                inputs = torch.zeros((3, 1, width), dtype=torch.int64, device=self._device)
                inputs[1, 0, 0] = 1  # one real token, so the warm-up's softmax rows are finite
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side), torch.inference_mode():
                    for _ in range(2):  # warm-up off the capture: kernels chosen, workspaces allocated
                        bert_forward(self._weights, inputs[0], inputs[1], inputs[2])
                torch.cuda.current_stream().wait_stream(side)
                graph = torch.cuda.CUDAGraph()
                # thread_local: only this thread is barred from unsafe CUDA calls while it captures; in "global"
                # mode another request's device work at that moment (E9 of a batch) would fail instead
                with torch.inference_mode(), torch.cuda.graph(graph, pool=self._pool,
                                                              capture_error_mode="thread_local"):
                    states = bert_forward(self._weights, inputs[0], inputs[1], inputs[2])
        except RuntimeError as exc:  # a driver or kernel that cannot be captured: eager from now on
            self.failed = f"{type(exc).__name__}: {exc}"
            log.warning("CUDA graph capture failed at width %d; single texts run eagerly: %s", width, exc)
            return None
        self._graphs[width] = _Graph(graph, inputs, states)
        return self._graphs[width]
