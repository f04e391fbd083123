"""Bytes for what the store keeps: a MemoryRecord as versioned compact JSON, a Fingerprint as a versioned binary
blob. Both formats are self-describing so that a newer writer and an older reader can share one data directory.

Record:       b"\\x01" + compact UTF-8 JSON of the record's fields. Keys this version does not know (written by a
              newer one) land in `extra`; `extra`'s keys are written back at the top level, so a record that
              passes through an older process keeps them where the newer one expects them.

Fingerprint:  header  "CGFP" u8 version, u8 n_spaces, u16 0                              (8 bytes)
              then per space an entry header
                      u8 space id, u8 kind code, u16 0, u32 a, u32 b, u32 payload bytes   (16 bytes)
              and its payload, zero-padded to a multiple of 8 so every array starts 8-byte aligned:
                      dense        float32[a]                         (b = 0)
                      sparse       int32[a] indices, float32[a] values (b = 0)
                      binary       uint8[a]                           (b = 0)
                      multivector  float16[a, b]                      (decoded to float32)
              The payload length in each entry lets a reader skip a space without knowing its kind, which is
              what makes selective decoding (only the requested spaces) a pointer walk.
"""

from __future__ import annotations

import dataclasses
import json
import struct
from collections.abc import Collection, Sequence

import numpy as np

from contextgraph.errors import InvalidFingerprint, StorageError
from contextgraph.fingerprint import SPACE_BY_ID, Fingerprint, Sparse
from contextgraph.storage.base import MemoryRecord
from contextgraph.storage.fingerprint_columns import Column, FingerprintColumns

RECORD_VERSION = 1
FINGERPRINT_VERSION = 1

# --- records -------------------------------------------------------------------------------------------------

_FIELDS = tuple(f.name for f in dataclasses.fields(MemoryRecord) if f.name != "extra")
_TUPLE_FIELDS = frozenset(
    f.name for f in dataclasses.fields(MemoryRecord) if str(f.type).startswith("tuple")
)
_RECORD_HEADER = bytes([RECORD_VERSION])


def encode_record(record: MemoryRecord) -> bytes:
    doc = {name: getattr(record, name) for name in _FIELDS}
    clash = doc.keys() & record.extra.keys()
    if clash:
        # Flattening would silently overwrite a real field; a caller meaning to set it should set the field.
        raise StorageError(f"record extra uses reserved field names: {sorted(clash)}", fields=sorted(clash))
    doc.update(record.extra)
    return _RECORD_HEADER + json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()


def decode_record(blob: bytes | memoryview) -> MemoryRecord:
    if not blob or blob[0] != RECORD_VERSION:
        raise StorageError(f"unknown record format version {blob[0] if blob else None}")
    doc = json.loads(bytes(blob[1:]))
    known = {}
    for name in _FIELDS:
        if name in doc:
            value = doc.pop(name)
            known[name] = tuple(value) if name in _TUPLE_FIELDS else value
    return MemoryRecord(**known, extra=doc)


# --- fingerprints --------------------------------------------------------------------------------------------

KIND_CODES = {"dense": 1, "sparse": 2, "binary": 3, "multivector": 4}
_KIND_NAMES = {v: k for k, v in KIND_CODES.items()}
_HEADER = struct.Struct("<4sBBH")
_ENTRY = struct.Struct("<BBHIII")
_MAGIC = b"CGFP"
_PAD = bytes(8)
_F16_TO_F32 = np.arange(1 << 16, dtype=np.uint16).view(np.float16).astype(np.float32)


def _pad(n: int) -> int:
    return -n % 8


def _arrays(space: int, vector: object) -> tuple[int, int, list[np.ndarray]]:
    """(a, b, arrays to write) for one space, after checking the vector has its space's kind and shape."""
    s = SPACE_BY_ID.get(space)
    if s is None:
        raise InvalidFingerprint(f"unknown space E{space}", space=space)
    if s.kind == "sparse":
        if not isinstance(vector, Sparse):
            raise InvalidFingerprint(f"E{space} must be a Sparse vector", space=space)
        idx = np.ascontiguousarray(vector.indices, dtype=np.int32)
        val = np.ascontiguousarray(vector.values, dtype=np.float32)
        return len(idx), 0, [idx, val]
    if not isinstance(vector, np.ndarray):
        raise InvalidFingerprint(f"E{space} must be a numpy array", space=space)
    if s.kind == "multivector":
        if vector.ndim != 2:
            raise InvalidFingerprint(f"E{space} must be 2-d [tokens, dim], got shape {vector.shape}", space=space)
        # float16 halves the largest value in the store (~21 KB per memory at f16)
        return vector.shape[0], vector.shape[1], [np.ascontiguousarray(vector, dtype=np.float16)]
    if vector.ndim != 1:
        raise InvalidFingerprint(f"E{space} must be 1-d, got shape {vector.shape}", space=space)
    dtype = np.uint8 if s.kind == "binary" else np.float32
    if s.kind == "binary" and vector.dtype != np.uint8:
        raise InvalidFingerprint(f"E{space} must be packed uint8 bits, got {vector.dtype}", space=space)
    return vector.shape[0], 0, [np.ascontiguousarray(vector, dtype=dtype)]


def encode_fingerprint(fingerprint: Fingerprint) -> bytes:
    parts = [_HEADER.pack(_MAGIC, FINGERPRINT_VERSION, len(fingerprint), 0)]
    for space in sorted(fingerprint):
        a, b, arrays = _arrays(space, fingerprint[space])
        payload = b"".join(arr.tobytes() for arr in arrays) if len(arrays) > 1 else arrays[0].tobytes()
        kind = KIND_CODES[SPACE_BY_ID[space].kind]
        parts.append(_ENTRY.pack(space, kind, 0, a, b, len(payload)))
        parts.append(payload)
        parts.append(_PAD[: _pad(len(payload))])
    return b"".join(parts)


def decode_fingerprint(
    blob: bytes | memoryview, spaces: Collection[int] | None = None, *, copy: bool = False
) -> Fingerprint:
    """The fingerprint in `blob`, or only its `spaces`. Arrays are read-only views into `blob` unless `copy`
    (needed when `blob` is an LMDB buffer that dies with its transaction); E12 is always a fresh float32 array."""
    n = _entry_count(blob)
    wanted = None if spaces is None else set(spaces)
    out: Fingerprint = {}
    pos = _HEADER.size
    for _ in range(n):
        space, kind, _, a, b, nbytes = _ENTRY.unpack_from(blob, pos)
        pos += _ENTRY.size
        if wanted is None or space in wanted:
            out[space] = _decode_one(_KIND_NAMES.get(kind), blob, pos, a, b, copy)
        pos += nbytes + _pad(nbytes)
    return out


def _entry_count(blob: bytes | memoryview) -> int:
    """How many spaces a stored fingerprint holds, after checking its header is one this version reads."""
    magic, version, n, _ = _HEADER.unpack_from(blob, 0)
    if magic != _MAGIC or version != FINGERPRINT_VERSION:
        raise StorageError(f"unknown fingerprint format {magic!r} v{version}")
    return n


def _decode_one(kind: str | None, blob, pos: int, a: int, b: int, copy: bool):
    if kind == "dense":
        v = np.frombuffer(blob, np.float32, a, pos)
    elif kind == "binary":
        v = np.frombuffer(blob, np.uint8, a, pos)
    elif kind == "sparse":
        idx = np.frombuffer(blob, np.int32, a, pos)
        val = np.frombuffer(blob, np.float32, a, pos + 4 * a)
        return Sparse(idx.copy(), val.copy()) if copy else Sparse(idx, val)
    elif kind == "multivector":
        # a table lookup over the 2^16 half-precision patterns is ~1.7x faster than .astype(float32), and E12
        # is the largest thing decoded per search candidate
        return np.take(_F16_TO_F32, np.frombuffer(blob, np.uint16, a * b, pos)).reshape(a, b)
    else:
        raise StorageError(f"unknown vector kind code in fingerprint: {kind}")
    return v.copy() if copy else v


def decode_columns(seqs: Sequence[int], blobs: Sequence[bytes | memoryview | None],
                   spaces: Collection[int]) -> FingerprintColumns:
    """The `spaces` of many stored fingerprints as one column per space (FingerprintColumns); a None blob (not
    found) is left out. Only the entry headers are walked per memory; each dense or binary space is then one
    join of its payloads and one frombuffer, where decode_fingerprint makes a dozen arrays and a dict per memory
    (what stage 3 paid for every candidate). E12 is converted per memory: one float16 lookup over all the
    candidates' tokens at once was measured slower (it leaves the cache). The result owns its memory: `blobs`
    may be buffers of a transaction that ends right after."""
    wanted = frozenset(spaces)
    kept: list[int] = []
    # per space: (blob, payload offset, a, b, kind code) of each kept memory
    places: dict[int, list[tuple[bytes | memoryview, int, int, int, int]]] = {space: [] for space in wanted}
    unpack_entry, entry_size = _ENTRY.unpack_from, _ENTRY.size
    for seq, blob in zip(seqs, blobs):
        if blob is None:
            continue
        pos, found, size = _HEADER.size, 0, len(blob)
        for _ in range(_entry_count(blob)):
            space, kind, _, a, b, nbytes = unpack_entry(blob, pos)
            pos += entry_size
            if space in wanted:
                places[space].append((blob, pos, a, b, kind))
                found += 1
            pos += nbytes + (-nbytes % 8)
        if pos > size:  # a payload runs past its blob: refuse rather than misread
            raise StorageError(f"the fingerprint of seq {seq} is torn", seq=seq)
        if found != len(wanted):
            raise StorageError(f"the fingerprint of seq {seq} lacks some of E{sorted(wanted)}", seq=seq)
        kept.append(seq)
    return FingerprintColumns(kept, {space: _column(space, entries) for space, entries in sorted(places.items())})


def _column(space: int, entries: list[tuple[bytes | memoryview, int, int, int, int]]) -> Column:
    if not entries:
        return []
    kind = _KIND_NAMES.get(entries[0][4])  # one kind per space: encode_fingerprint writes SPACE_BY_ID's
    if kind in ("dense", "binary"):
        width = entries[0][2]
        if any(a != width for _, _, a, _, _ in entries):  # mixed dimensions (mid-reindex): one array each
            return [_decode_one(kind, blob, pos, a, b, True) for blob, pos, a, b, _ in entries]
        size = 4 * width if kind == "dense" else width
        joined = b"".join([memoryview(blob)[pos:pos + size] for blob, pos, _, _, _ in entries])
        return np.frombuffer(joined, np.float32 if kind == "dense" else np.uint8).reshape(len(entries), width)
    if kind == "sparse":
        # per memory its indices then its values: one join, then views into it
        joined = b"".join([memoryview(blob)[pos:pos + 8 * a] for blob, pos, a, _, _ in entries])
        indices, values = np.frombuffer(joined, np.int32), np.frombuffer(joined, np.float32)
        column, at = [], 0
        for _, _, a, _, _ in entries:
            column.append(Sparse(indices[at:at + a], values[at + a:at + 2 * a]))
            at += 2 * a
        return column
    if kind == "multivector":  # a fresh float32 array each (the lookup copies)
        return [_decode_one(kind, blob, pos, a, b, False) for blob, pos, a, b, _ in entries]
    raise StorageError(f"unknown vector kind code in fingerprint: {kind}")


# --- E11 relation triples ------------------------------------------------------------------------------------
# [u32 header length][JSON header: [[head, relation, tail], ...] and dim][float16 matrix: h₀, t₀, h₁, t₁, …]
_U32 = struct.Struct("<I")


def encode_triples(triples: Collection) -> bytes:
    """Triples with .head/.relation/.tail/.head_vector/.tail_vector (embedders.e11_entity.Triple)."""
    triples = list(triples)
    dim = int(triples[0].head_vector.size) if triples else 0
    header = json.dumps({"dim": dim, "terms": [[t.head, t.relation, t.tail] for t in triples]},
                        separators=(",", ":"), ensure_ascii=False).encode()
    matrix = np.stack([v for t in triples for v in (t.head_vector, t.tail_vector)]).astype(np.float16) \
        if triples else np.zeros((0, 0), dtype=np.float16)
    return _U32.pack(len(header)) + header + matrix.tobytes()


def decode_triples(blob: bytes | memoryview) -> list[tuple[str, str, str, np.ndarray, np.ndarray]]:
    """(head, relation, tail, h float32, t float32) for each stored triple."""
    (n,) = _U32.unpack_from(blob, 0)
    header = json.loads(bytes(blob[4:4 + n]))
    terms, dim = header["terms"], int(header["dim"])
    if not terms:
        return []
    matrix = np.frombuffer(bytes(blob[4 + n:]), dtype=np.float16).astype(np.float32).reshape(2 * len(terms), dim)
    return [(h, r, t, matrix[2 * i], matrix[2 * i + 1]) for i, (h, r, t) in enumerate(terms)]
