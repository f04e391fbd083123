"""Round trips of the record and fingerprint codecs, forward compatibility, selective decoding."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from contextgraph.errors import InvalidFingerprint, StorageError
from contextgraph.fingerprint import SPACES, Sparse
from contextgraph.storage.base import MemoryRecord
from contextgraph.storage.codec import (
    RECORD_VERSION,
    decode_fingerprint,
    decode_record,
    encode_fingerprint,
    encode_record,
)

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
text = st.text(max_size=40)
json_scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | finite | text
json_values = st.recursive(json_scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(text, c, max_size=3),
                           max_leaves=8)
reserved = {"id", "content", "rationale", "modality", "session", "created_at", "importance", "tags", "links",
            "redactions", "session_position", "updated_at", "access_count", "last_accessed", "seq", "extra"}

records = st.builds(
    MemoryRecord,
    id=st.text("0123456789abcdef", min_size=32, max_size=32),
    content=text, rationale=text, modality=st.sampled_from(["text", "code"]), session=text, created_at=finite,
    importance=finite, tags=st.lists(text, max_size=3).map(tuple), links=st.lists(text, max_size=3).map(tuple),
    redactions=st.lists(text, max_size=2).map(tuple), session_position=st.integers(0, 2**40),
    updated_at=finite, access_count=st.integers(0, 2**31), last_accessed=finite, seq=st.integers(0, 2**62),
    extra=st.dictionaries(text.filter(lambda k: k not in reserved), json_values, max_size=3),
)


@given(records)
def test_record_round_trip(record):
    blob = encode_record(record)
    assert blob[0] == RECORD_VERSION
    assert decode_record(blob) == record


def test_unknown_keys_land_in_extra_and_go_back_to_the_top_level():
    newer = {"id": "a" * 32, "content": "c", "rationale": "r", "modality": "text", "session": "s",
             "created_at": 1.0, "lineage": ["x"], "salience": 0.3}
    blob = bytes([RECORD_VERSION]) + json.dumps(newer).encode()
    record = decode_record(blob)
    assert record.extra == {"lineage": ["x"], "salience": 0.3}
    again = json.loads(encode_record(record)[1:])
    assert again["lineage"] == ["x"] and again["salience"] == 0.3 and "extra" not in again


def test_extra_may_not_shadow_a_field():
    with pytest.raises(StorageError):
        encode_record(MemoryRecord("a" * 32, "c", "r", "text", "s", 1.0, extra={"seq": 5}))


def test_unknown_record_version_is_refused():
    with pytest.raises(StorageError):
        decode_record(b"\x09{}")


# --- fingerprints ----------------------------------------------------------------------------------------------

f32 = st.floats(-1e6, 1e6, width=32)


def dense(n):
    return hnp.arrays(np.float32, st.integers(1, n), elements=f32)


@st.composite
def sparses(draw, dim=32768):
    idx = draw(st.lists(st.integers(0, dim - 1), unique=True, max_size=50))
    idx = np.array(sorted(idx), dtype=np.int32)
    vals = draw(hnp.arrays(np.float32, len(idx), elements=f32))
    return Sparse(idx, vals)


@st.composite
def fingerprints(draw):
    fp = {}
    for space in SPACES:
        if space.kind == "dense":
            fp[space.id] = draw(dense(40))
        elif space.kind == "sparse":
            fp[space.id] = draw(sparses())
        elif space.kind == "binary":
            fp[space.id] = draw(hnp.arrays(np.uint8, st.integers(0, 33)))
        else:
            rows = draw(st.integers(0, 6))
            fp[space.id] = draw(hnp.arrays(np.float32, (rows, 8), elements=st.floats(-60000, 60000, width=32)))
    # any subset of the spaces encodes (the store, not the codec, insists on all 13)
    keep = draw(st.sets(st.sampled_from(sorted(fp)), min_size=1))
    return {s: fp[s] for s in keep}


def _same(a, b, space):
    if isinstance(a, Sparse):
        return np.array_equal(a.indices, b.indices) and np.array_equal(a.values, b.values)
    if space == 12:
        a = a.astype(np.float16).astype(np.float32)
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b)


@settings(max_examples=60, deadline=None)
@given(fingerprints(), st.sets(st.integers(1, 13)) | st.none(), st.booleans())
def test_fingerprint_round_trip_and_selection(fp, wanted, copy):
    blob = encode_fingerprint(fp)
    out = decode_fingerprint(blob, wanted, copy=copy)
    expected = set(fp) if wanted is None else set(fp) & wanted
    assert set(out) == expected
    for space in expected:
        assert _same(fp[space], out[space], space), space
        vec = out[space]
        arrays = (vec.indices, vec.values) if isinstance(vec, Sparse) else (vec,)
        for arr in arrays:
            assert arr.flags.aligned


def test_kinds_and_dtypes_on_decode():
    rng = np.random.default_rng(1)
    fp = {1: rng.standard_normal(384).astype(np.float64),  # cast to float32 on encode
          6: Sparse(np.array([3, 9], np.int64), np.array([0.5, 1.5])),
          9: rng.integers(0, 256, 128, dtype=np.uint8),
          12: rng.standard_normal((5, 128)).astype(np.float32)}
    out = decode_fingerprint(encode_fingerprint(fp))
    assert out[1].dtype == np.float32 and out[1].shape == (384,)
    assert out[6].indices.dtype == np.int32 and out[6].values.dtype == np.float32
    assert out[9].dtype == np.uint8 and out[12].dtype == np.float32 and out[12].shape == (5, 128)
    assert not out[1].flags.writeable  # views into the blob unless copy=True
    assert decode_fingerprint(encode_fingerprint(fp), copy=True)[1].flags.writeable


@pytest.mark.parametrize("space, vector", [
    (1, Sparse(np.array([1], np.int32), np.array([1.0], np.float32))),  # sparse where dense belongs
    (6, np.zeros(4, np.float32)),  # dense where sparse belongs
    (9, np.zeros(16, np.float32)),  # binary must be packed uint8
    (12, np.zeros(128, np.float32)),  # multivector must be 2-d
    (1, np.zeros((2, 2), np.float32)),
    (14, np.zeros(3, np.float32)),  # no such space
])
def test_wrong_kind_is_refused(space, vector):
    with pytest.raises(InvalidFingerprint):
        encode_fingerprint({space: vector})


def test_corrupt_header_is_refused():
    with pytest.raises(StorageError):
        decode_fingerprint(b"XXXX\x01\x00\x00\x00")
