"""The teleological fingerprint: one vector per embedding space E1..E13 (docs/spaces.md). Shared by the embedders
that make it, the store that keeps it and the retrieval that reads it; depends on numpy only.

Vector shapes by kind:
    dense        float32 [dim]
    sparse       Sparse(indices int32 [n] strictly increasing, values float32 [n]), indices < dim
    binary       uint8 [dim // 8]  (bits packed big-endian, numpy.packbits)
    multivector  float32 [n_tokens, dim]  (E12's token vectors; stored as float16)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Union

import numpy as np

Kind = Literal["dense", "sparse", "binary", "multivector"]
MODALITIES = ("text", "code", "image", "audio", "structured", "mixed")


@dataclass(frozen=True, slots=True)
class Space:
    id: int  # 1..13
    name: str
    kind: Kind


# The 13 spaces, in order. Dimensions are not here: they follow the configured model or method (docs/decisions.md#d10).
SPACES: tuple[Space, ...] = (
    Space(1, "semantic", "dense"),
    Space(2, "temporal_recent", "dense"),
    Space(3, "temporal_periodic", "dense"),
    Space(4, "temporal_positional", "dense"),
    Space(5, "causal", "dense"),
    Space(6, "sparse", "sparse"),
    Space(7, "code", "dense"),
    Space(8, "graph", "dense"),
    Space(9, "hdc", "binary"),
    Space(10, "multimodal", "dense"),
    Space(11, "entity", "dense"),
    Space(12, "late_interaction", "multivector"),
    Space(13, "splade", "sparse"),
)
SPACE_BY_ID = {s.id: s for s in SPACES}


@dataclass(frozen=True, slots=True)
class Sparse:
    indices: np.ndarray  # int32, strictly increasing
    values: np.ndarray  # float32, same length

    def __post_init__(self) -> None:
        if self.indices.shape != self.values.shape or self.indices.ndim != 1:
            raise ValueError("sparse indices and values must be 1-d and of equal length")

    def __len__(self) -> int:
        return int(self.indices.shape[0])


Vector = Union[np.ndarray, Sparse]  # noqa: UP007  (a runtime alias: X | Y of a class and a numpy type is not one)
# space id (1..13) → vector. A complete fingerprint has all 13 (ARCH-05: all or nothing).
Fingerprint = dict[int, Vector]


def sparse(v: Vector) -> Sparse:
    """A sparse space's vector (E6, E13) as what it is; anything else is a programming error."""
    if not isinstance(v, Sparse):
        raise TypeError(f"expected a sparse vector, got {type(v).__name__}")
    return v


def dense(v: Vector) -> np.ndarray:
    """A dense, binary or multivector space's array; a Sparse here is a programming error."""
    if isinstance(v, Sparse):
        raise TypeError("expected an array, got a sparse vector")
    return v
