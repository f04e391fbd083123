"""A memory's searchable rows inside a write transaction: one row per vector space (vector/halfvec/bit, under
the space's HNSW index) and the postings of its sparse spaces (term frequency and document length, for BM25),
with the sparse spaces' live statistics kept in step. Written with the memory's put or restore, removed with
its delete, in the same transaction (ARCH-01: all 13 spaces or none)."""

from __future__ import annotations

import numpy as np
import psycopg
from pgvector import Bit, HalfVector
from psycopg import sql

from contextgraph.fingerprint import Fingerprint, dense, sparse
from contextgraph.storage.postgres.schema import BINARY_SPACES, SPARSE_SPACES, VECTOR_SPACES, space_table


def as_param(space: int, vector: np.ndarray, sql_type: str) -> object:
    """The pgvector value of one space's vector for its column's type (a numpy array dumps as `vector`)."""
    if space in BINARY_SPACES:
        return Bit(np.ascontiguousarray(vector, dtype=np.uint8).tobytes())
    if sql_type.startswith("halfvec"):
        return HalfVector(np.asarray(vector, dtype=np.float32))
    return np.asarray(vector, dtype=np.float32)


def insert_rows(cur: psycopg.Cursor, seq: int, fingerprint: Fingerprint, types: dict[int, tuple[int, str]]) -> None:
    for space in VECTOR_SPACES:
        cur.execute(sql.SQL("INSERT INTO {} (seq, v) VALUES (%s, %s)").format(space_table(space)),
                    (seq, as_param(space, dense(fingerprint[space]), types[space][1])))
    for space in SPARSE_SPACES:
        vec = sparse(fingerprint[space])
        tf = np.asarray(vec.values, dtype=np.float64)
        dl = float(tf.sum())
        if len(vec):
            cur.execute("INSERT INTO sparse_postings (space, term, seq, tf, dl) "
                        "SELECT %s, t, %s, f, %s FROM unnest(%s::integer[], %s::real[]) AS u(t, f)",
                        (space, seq, dl, vec.indices.astype(np.int64).tolist(), vec.values.tolist()))
        cur.execute("INSERT INTO sparse_stats (space, docs, total_len) VALUES (%s, 1, %s) ON CONFLICT (space) "
                    "DO UPDATE SET docs = sparse_stats.docs + 1, total_len = sparse_stats.total_len + %s",
                    (space, dl, dl))


def delete_rows(cur: psycopg.Cursor, seq: int, fingerprint: Fingerprint) -> None:
    """Remove what insert_rows wrote for `seq` (the fingerprint gives the sparse lengths to subtract)."""
    for space in VECTOR_SPACES:
        cur.execute(sql.SQL("DELETE FROM {} WHERE seq = %s").format(space_table(space)), (seq,))
    cur.execute("DELETE FROM sparse_postings WHERE seq = %s", (seq,))
    for space in SPARSE_SPACES:
        dl = float(np.asarray(sparse(fingerprint[space]).values, dtype=np.float64).sum())
        cur.execute("UPDATE sparse_stats SET docs = docs - 1, total_len = greatest(total_len - %s, 0) "
                    "WHERE space = %s", (dl, space))
