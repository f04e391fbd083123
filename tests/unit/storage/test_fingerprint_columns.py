"""decode_columns (many stored fingerprints → one column per space) against the per-memory decoder it replaces in
retrieval's stage 3, and FingerprintColumns' own operations against plain lists of fingerprints."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_storage_codec import fingerprints

from contextgraph.errors import StorageError
from contextgraph.fingerprint import SPACES, Sparse
from contextgraph.storage.codec import decode_columns, decode_fingerprint, encode_fingerprint
from contextgraph.storage.fingerprint_columns import FingerprintColumns

ALL = [s.id for s in SPACES]


def _same(a, b) -> bool:
    if isinstance(a, Sparse):
        return (isinstance(b, Sparse) and np.array_equal(a.indices, b.indices) and np.array_equal(a.values, b.values)
                and a.indices.dtype == b.indices.dtype and a.values.dtype == b.values.dtype)
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b)


def full(rng: np.random.Generator, dims: dict[int, int] | None = None) -> dict:
    """A complete fingerprint shaped like the pipeline's (fixed width per dense space, ragged E12 and sparse)."""
    dims = dims or {}
    fp = {}
    for s in SPACES:
        if s.kind == "dense":
            fp[s.id] = rng.standard_normal(dims.get(s.id, 24)).astype(np.float32)
        elif s.kind == "sparse":
            n = int(rng.integers(0, 12))
            fp[s.id] = Sparse(np.sort(rng.choice(5000, n, replace=False)).astype(np.int32),
                              rng.random(n).astype(np.float32))
        elif s.kind == "binary":
            fp[s.id] = rng.integers(0, 256, 16).astype(np.uint8)
        else:
            fp[s.id] = rng.standard_normal((int(rng.integers(1, 6)), 8)).astype(np.float32)
    return fp


@settings(max_examples=60, deadline=None)
@given(st.lists(fingerprints(), min_size=0, max_size=6), st.sets(st.integers(1, 13), min_size=1),
       st.lists(st.booleans(), min_size=6, max_size=6))
def test_columns_equal_the_per_memory_decode(fps, wanted, missing):
    """Any fingerprints the codec writes (ragged dense widths included), any spaces, some blobs not found: each
    row of each column is what decode_fingerprint gives for that memory, and a memory lacking a space asked for
    is refused rather than misread."""
    blobs = [None if gone else encode_fingerprint(fp) for fp, gone in zip(fps, missing)]
    seqs = list(range(10, 10 + len(fps)))
    present = [(seq, fp) for seq, fp, blob in zip(seqs, fps, blobs) if blob is not None]
    if any(not wanted <= fp.keys() for _, fp in present):
        with pytest.raises(StorageError):
            decode_columns(seqs, blobs, wanted)
        return
    columns = decode_columns(seqs, blobs, wanted)
    assert columns.seqs == [seq for seq, _ in present]
    assert set(columns.columns) == wanted
    for row, (_, fp) in enumerate(present):
        reference = decode_fingerprint(encode_fingerprint(fp), wanted, copy=True)
        for space in wanted:
            assert _same(columns[space][row], reference[space]), (space, row)


def test_dense_and_binary_spaces_are_one_matrix_each():
    rng = np.random.default_rng(3)
    fps = [full(rng) for _ in range(7)]
    columns = decode_columns(range(7), [encode_fingerprint(fp) for fp in fps], ALL)
    for s in SPACES:
        if s.kind in ("dense", "binary"):
            matrix = columns[s.id]
            assert isinstance(matrix, np.ndarray) and matrix.shape == (7, len(fps[0][s.id]))
            assert np.array_equal(matrix, np.stack([fp[s.id] for fp in fps]))
    # the same columns as from decoded fingerprints (inject_context's path)
    reference = FingerprintColumns.from_fingerprints(range(7), [decode_fingerprint(encode_fingerprint(fp))
                                                                for fp in fps], ALL)
    for space in ALL:
        for a, b in zip(columns[space], reference[space]):
            assert _same(a, b), space


def test_the_columns_outlive_the_buffers_they_were_read_from():
    rng = np.random.default_rng(4)
    fps = [full(rng) for _ in range(3)]
    buffers = [bytearray(encode_fingerprint(fp)) for fp in fps]
    columns = decode_columns(range(3), [memoryview(b) for b in buffers], ALL)
    for b in buffers:  # an LMDB buffer is reused once its transaction ends
        b[:] = bytes(len(b))
    for row, fp in enumerate(fps):
        assert np.array_equal(columns[1][row], fp[1]) and _same(columns[6][row], fp[6])


def test_torn_or_foreign_blobs_are_refused():
    blob = encode_fingerprint(full(np.random.default_rng(5)))
    with pytest.raises(StorageError):
        decode_columns([1], [blob[:-4]], [1])  # not a multiple of 8: torn
    with pytest.raises(StorageError):
        decode_columns([1], [b"XXXX" + blob[4:]], [1])


def test_nothing_found_gives_empty_columns():
    columns = decode_columns([1, 2], [None, None], [1, 12])
    assert columns.seqs == [] and len(columns) == 0 and columns.columns == {1: [], 12: []}


def test_take_rows_and_from_fingerprints():
    rng = np.random.default_rng(6)
    fps = [full(rng) for _ in range(5)]
    columns = FingerprintColumns.from_fingerprints([5, 6, 7, 8, 9], [*fps[:2], None, *fps[3:]])
    assert columns.seqs == [5, 6, 8, 9]
    picked = columns.take([3, 0])
    assert picked.seqs == [9, 5]
    assert all(_same(picked.fingerprint(0)[space], fps[4][space]) for space in ALL)
    rows = picked.rows()
    assert len(rows) == 2 and _same(rows[1][1], fps[0][1]) and _same(rows[-1][13], fps[0][13])
    assert [_same(r[2], fp[2]) for r, fp in zip(rows, (fps[4], fps[0]))] == [True, True]
    with pytest.raises(IndexError):
        rows[2]
    # mixed widths in a dense space (a store mid-reindex) stay a list, as the per-memory path had them
    mixed = FingerprintColumns.from_fingerprints([1, 2], [full(rng), full(rng, {1: 30})])
    assert isinstance(mixed[1], list) and isinstance(mixed[2], np.ndarray)
