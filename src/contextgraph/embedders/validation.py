"""ARCH-05: a fingerprint is complete — all 13 spaces — and each vector has its space's configured kind and
dimension (docs/decisions.md#d10: the configured dimension, never a padded spec number). Used by the pipeline on every
fingerprint it makes, and usable by the store on every fingerprint it is handed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from contextgraph.errors import DimensionMismatch, InvalidFingerprint
from contextgraph.fingerprint import SPACES, Fingerprint, Sparse


def check_fingerprint(fingerprint: Fingerprint, manifest: Sequence[Mapping]) -> None:
    """Raise InvalidFingerprint (missing or extra spaces, wrong type, non-finite values, bad sparse indices) or
    DimensionMismatch (a vector of the wrong shape) unless `fingerprint` matches `manifest` ({space, kind, dim})."""
    expected = {int(entry["space"]) for entry in manifest}
    present = set(fingerprint)
    if present != expected:
        raise InvalidFingerprint(
            f"a fingerprint needs all {len(expected)} spaces; missing {sorted(expected - present)}, "
            f"unexpected {sorted(present - expected)}",
            missing=sorted(expected - present), unexpected=sorted(present - expected),
        )
    for entry in manifest:
        check_vector(int(entry["space"]), entry["kind"], int(entry["dim"]), fingerprint[int(entry["space"])])


def check_vector(space: int, kind: str, dim: int, vector: object) -> None:
    label = f"E{space} ({SPACES[space - 1].name})"
    if kind == "sparse":
        if not isinstance(vector, Sparse):
            raise InvalidFingerprint(f"{label} must be a sparse vector, got {type(vector).__name__}", space=space)
        indices, values = vector.indices, vector.values
        if indices.dtype != np.int32 or values.dtype != np.float32:
            raise InvalidFingerprint(f"{label} needs int32 indices and float32 values", space=space)
        if len(indices) and (indices[0] < 0 or indices[-1] >= dim or np.any(np.diff(indices) <= 0)):
            raise DimensionMismatch(
                f"{label} indices must be strictly increasing in [0, {dim})", space=space, expected=dim
            )
        _check_finite(label, space, values)
        return
    if not isinstance(vector, np.ndarray):
        raise InvalidFingerprint(f"{label} must be a numpy array, got {type(vector).__name__}", space=space)
    if kind == "dense":
        shape, dtype = (dim,), np.float32
    elif kind == "binary":
        shape, dtype = (dim // 8,), np.uint8
    elif kind == "multivector":
        shape, dtype = (vector.shape[0] if vector.ndim == 2 and vector.shape[0] > 0 else -1, dim), np.float32
    else:
        raise InvalidFingerprint(f"{label} has unknown kind {kind!r}", space=space)
    if vector.shape != shape:
        raise DimensionMismatch(
            f"{label} vector has shape {list(vector.shape)}, the configured {kind} embedder gives {list(shape)}",
            space=space, expected=list(shape), got=list(vector.shape),
        )
    if vector.dtype != dtype:
        raise InvalidFingerprint(f"{label} must be {np.dtype(dtype).name}, got {vector.dtype}", space=space)
    if dtype == np.float32:
        _check_finite(label, space, vector)


def _check_finite(label: str, space: int, values: np.ndarray) -> None:
    if not np.isfinite(values).all():
        raise InvalidFingerprint(f"{label} contains NaN or infinity", space=space)
