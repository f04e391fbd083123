"""Key layout shared by the LMDB store and its graph transactions: 8-byte big-endian seqs (so LMDB's byte order
is numeric order), session keys, and the one seq counter that puts and deletes share."""

from __future__ import annotations

import hashlib
import struct

import lmdb

U64 = struct.Struct(">Q")


def seq_key(seq: int) -> bytes:
    return U64.pack(seq)


def session_key(session: str) -> bytes:
    raw = session.encode()
    # LMDB keys stop at 511 bytes; a client may name its session anything
    return b"session:" + (raw if len(raw) <= 256 else hashlib.sha256(raw).digest())


def next_seq(txn: lmdb.Transaction, meta: lmdb._Database) -> int:
    """Take the next seq from the counter in `meta` (inside the caller's write transaction)."""
    seq = U64.unpack(txn.get(b"next_seq", db=meta))[0]
    txn.put(b"next_seq", seq_key(seq + 1), db=meta)
    return seq
