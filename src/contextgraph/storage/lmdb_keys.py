"""Key layout shared by the LMDB store and its graph transactions: 8-byte big-endian seqs (so LMDB's byte order
is numeric order), session keys, and the one seq counter that puts and deletes share."""

from __future__ import annotations

import hashlib
import struct

import lmdb

from contextgraph.errors import StorageError

U64 = struct.Struct(">Q")


def seq_key(seq: int) -> bytes:
    return U64.pack(seq)


def session_key(session: str) -> bytes:
    raw = session.encode()
    # LMDB keys stop at 511 bytes; a client may name its session anything
    return b"session:" + (raw if len(raw) <= 256 else hashlib.sha256(raw).digest())


def present(value: bytes | memoryview | None, what: str) -> bytes | memoryview:
    """A value the store's own invariants say exists (a memory's record behind its seq, the seq counter); its
    absence means the store is damaged, which `contextgraph doctor` then reports."""
    if value is None:
        raise StorageError(f"the store is inconsistent: {what} is missing (contextgraph doctor checks it)")
    return value


def read_counter(txn: lmdb.Transaction, meta: lmdb._Database) -> int:
    """The seq the next put or delete will take."""
    return U64.unpack(present(txn.get(b"next_seq", db=meta), "the seq counter"))[0]


def next_seq(txn: lmdb.Transaction, meta: lmdb._Database) -> int:
    """Take the next seq from the counter in `meta` (inside the caller's write transaction)."""
    seq = read_counter(txn, meta)
    txn.put(b"next_seq", seq_key(seq + 1), db=meta)
    return seq


# An oplog value: op byte + the memory's seq + its id. A rewrite ("r") carries, between seq and id, a u16 mask of
# the spaces it replaced (bit i − 1 for Ei), so a reader re-indexes only those.
_OPS = {b"p"[0]: "put", b"d"[0]: "delete", b"r"[0]: "rewrite"}
_MASK = struct.Struct(">H")


def encode_rewrite(memory_seq: int, spaces: list[int], memory_id: str) -> bytes:
    return b"r" + seq_key(memory_seq) + _MASK.pack(sum(1 << (s - 1) for s in spaces)) + memory_id.encode()


def decode_oplog(value: bytes) -> tuple[str, int, str, tuple[int, ...]]:
    """(op, memory seq, memory id, spaces rewritten) of one oplog value."""
    op, memory_seq = _OPS[value[0]], U64.unpack_from(value, 1)[0]
    if op != "rewrite":
        return op, memory_seq, value[9:].decode(), ()
    mask = _MASK.unpack_from(value, 9)[0]
    return op, memory_seq, value[11:].decode(), tuple(s for s in range(1, 17) if mask >> (s - 1) & 1)
