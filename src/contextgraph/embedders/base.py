"""The Embedder protocol and the inputs every embedder receives.

All texts of a batch go through the shared transformer once (`Backbone.encode`); each embedder then derives its
vector from the text, the token ids and the contextual token states of that pass, or from the memory's time and
position, so no extra text is run through the model (docs/spaces.md#one-forward-pass: extra passes cost ~5x)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar, runtime_checkable

import numpy as np

from contextgraph.fingerprint import Kind, Sparse


@dataclass(frozen=True, slots=True)
class Encoded:
    """One text's pass through the shared transformer."""

    text: str
    token_ids: np.ndarray  # int32 [T], including [CLS] ... [SEP]
    offsets: np.ndarray  # int32 [T, 2], character span of each token in `text`; (0, 0) for special tokens
    special: np.ndarray  # bool [T], True for [CLS]/[SEP]
    states: np.ndarray  # float32 [T, H], last hidden state
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class MemoryInput:
    """Everything an embedder may use for one memory (or one query)."""

    encoded: Encoded
    modality: str = "text"
    timestamp: float = 0.0  # unix seconds
    session_position: int = 0  # order within its session, from 0
    global_position: int = 0  # order within the store, from 0
    # E8: (edge weight in [0, 1], the neighbour's E1 vector) for the memory's graph neighbours.
    neighbours: tuple[tuple[float, np.ndarray], ...] = field(default_factory=tuple)

    @property
    def text(self) -> str:
        return self.encoded.text


# The kind of vector one embedder makes and compares (a dense array, a Sparse, packed bits, a token matrix).
# Each space's embedder takes and returns its own kind only, so the protocol is generic over it: a collection
# of embedders of different spaces is Sequence[Embedder[Any]].
V = TypeVar("V", np.ndarray, Sparse)


@runtime_checkable
class Embedder(Protocol[V]):
    space: int  # 1..13
    name: str  # SPACES[space - 1].name
    dim: int
    kind: Kind
    method: str  # the model or method actually in use, for get_graph_manifest

    def embed_batch(self, items: Sequence[MemoryInput]) -> list[V]:
        """One vector per item, of this embedder's kind and dim; deterministic for equal inputs."""
        ...

    def similarity(self, query: V, docs: Sequence[V]) -> np.ndarray:
        """float32 [len(docs)] scores of query against each doc in this space's own measure (higher = closer)."""
        ...


class Backbone(Protocol):
    """The shared transformer: tokenizer + model, in whichever runtime serves it."""

    model_name: str
    hidden_size: int
    runtime: str  # e.g. "onnxruntime-fp32", "onnxruntime-int8", "torch-cuda"
    max_tokens: int

    def encode(self, texts: Sequence[str]) -> list[Encoded]:
        """Tokenise and run all texts in batched forward passes; token states per text, no padding rows."""
        ...
