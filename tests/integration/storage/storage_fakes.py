"""Seeded random fingerprints of the right kinds and realistic sizes, and records to go with them; importable
by the tests and by the child processes they spawn (which put this directory on sys.path)."""

from __future__ import annotations

import uuid

import numpy as np

from contextgraph.embedders.e02_temporal_recent import TemporalRecentEmbedder
from contextgraph.embedders.e03_temporal_periodic import TemporalPeriodicEmbedder
from contextgraph.embedders.e04_temporal_positional import TemporalPositionalEmbedder
from contextgraph.fingerprint import Sparse
from contextgraph.storage.base import MemoryRecord

# The defaults of SPEC §6 (E7 and E10 carry a few extra dimensions: a histogram, a modality one-hot).
DENSE_DIMS = {1: 384, 2: 512, 3: 512, 4: 512, 5: 768, 7: 400, 8: 384, 10: 390, 11: 384}
SPARSE_DIMS = {6: 32768, 13: 30522}
E9_BYTES = 128
E12_DIM = 128


def sparse(rng: np.random.Generator, dim: int, nnz: int) -> Sparse:
    idx = np.sort(rng.choice(dim, size=nnz, replace=False)).astype(np.int32)
    return Sparse(idx, np.log1p(rng.integers(1, 4, size=nnz)).astype(np.float32))


def fingerprint(rng: np.random.Generator, tokens: int = 40, e6_nnz: int = 200, e13_nnz: int = 60) -> dict:
    """Random where the space is free; where the storage relies on how a space is made, made that way: E2-E4
    from a random time and positions (the timeline index reads them back), E8 and E10 near E1 (E1's graph
    proposes their candidates; E10 with the text one-hot, the modality record() gives)."""
    fp = {space: rng.standard_normal(dim).astype(np.float32) for space, dim in DENSE_DIMS.items()}
    when = 1_700_000_000.0 + rng.uniform(0.0, 3e7)
    fp[2] = TemporalRecentEmbedder().embed_times(np.array([when]))[0]
    fp[3] = TemporalPeriodicEmbedder().embed_time(when)
    fp[4] = TemporalPositionalEmbedder().embed_positions(rng.integers(0, 500, 1), rng.integers(0, 100_000, 1))[0]
    fp[8] = (fp[1] + 0.3 * rng.standard_normal(DENSE_DIMS[8])).astype(np.float32)
    modality = np.zeros(DENSE_DIMS[10] - DENSE_DIMS[1], dtype=np.float32)
    modality[0] = 0.5 * np.linalg.norm(fp[1])  # "text", as record() says
    fp[10] = np.concatenate([fp[1], modality])
    fp[6] = sparse(rng, SPARSE_DIMS[6], e6_nnz)
    fp[13] = sparse(rng, SPARSE_DIMS[13], e13_nnz)
    fp[9] = rng.integers(0, 256, size=E9_BYTES, dtype=np.uint8)
    fp[12] = rng.standard_normal((tokens, E12_DIM)).astype(np.float32)
    return fp


def record(session: str = "s1", content: str = "a memory", **kw) -> MemoryRecord:
    return MemoryRecord(id=uuid.uuid4().hex, content=content, rationale="because a test needs it",
                        modality="text", session=session, created_at=1_700_000_000.0, **kw)


def same_vector(a, b) -> bool:
    if isinstance(a, Sparse):
        return np.array_equal(a.indices, b.indices) and np.array_equal(a.values, b.values)
    return a.shape == b.shape and np.array_equal(a, b)


def same_fingerprint(a: dict, b: dict, multivector_f16: bool = True) -> bool:
    if a.keys() != b.keys():
        return False
    for space in a:
        x, y = a[space], b[space]
        if space == 12 and multivector_f16:
            x = x.astype(np.float16).astype(np.float32)
        if not same_vector(x, y):
            return False
    return True
