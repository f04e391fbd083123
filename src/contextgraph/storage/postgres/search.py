"""storage.base.SearchIndexes on the database: candidates from pgvector's HNSW, and from a few in-process indexes.

    E1 E5 E7 E11     HNSW over vec_eNN.v (cosine `<=>`)
    E9               HNSW over bit(d) with Hamming distance (`<~>`)
    E8 E10           E1's HNSW proposes max(64, 4k) memories, re-scored by cosine on the space's own rows (as
                     LMDB's BorrowedIndex: both spaces rank like E1, so a graph of their own bought nothing)
    E2 E3 E4         the timeline of the times and positions each vector encodes (LMDB's TimelineIndex)
    E6 E13           BM25 from an in-process inverted index (LMDB's SparseIndex)

The in-process ones (E2-E4, E6, E13: storage.indexes.IndexSet over those spaces) are kept in step through the
database's oplog before every search, as LMDB's indexes are, and saved in the data directory; without a directory
to keep them in, E2-E4 are an exact scan in SQL (`<#>`, `<=>`) and BM25 is summed in SQL over sparse_postings
(idf from the live df, avgdl from sparse_stats), the same formula and tie order.

Scores are the LMDB indexes' (cosine, dot, 1 − Hamming/bits, BM25), so the retriever fuses and reranks them
client-side exactly as with LMDB (its stage timings and per-space ranks are the same code). Fusion in SQL was
measured (benchmarks/bench_postgres.py): an RRF of the nine dense spaces' HNSW lists in one statement beats
nine queries fused in numpy (fewer round trips), but the Retriever does not fuse per-space ANN lists: it scores
all 13 spaces on the union of three candidate queries, with E12's MaxSim (slower in SQL, benchmarks/README) and BM25 on
live statistics; keeping that client-side keeps both backends' rankings the same code.

Why not all in SQL: summed there, BM25 reads every posting of the query's terms (up to `sparse_max_df` of the
store each) at ~0.85 µs a row, 13 ms a search at 10K memories and 155 ms at 100K, and the UTL's neighbourhood
asks it with every term of a new memory; the in-process index adds numpy arrays (~2 ms at 100K). And every put
paid an HNSW insertion in each of the five derived spaces' graphs, which LMDB never kept.

A write by any server is searchable when it commits: the HNSW indexes are the database's, and the in-process
ones catch up with the oplog before every search (one short read when nothing is new); the database stays the
source of truth, and a saved set that is missing, damaged or of another store is rebuilt from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import LiteralString

import numpy as np
from psycopg import sql

from contextgraph.fingerprint import Fingerprint, Sparse, Vector, dense, sparse
from contextgraph.storage.base import MemoryStore
from contextgraph.storage.derived_index import BORROWED, TIMELINES, pool_size
from contextgraph.storage.indexes import IndexSet
from contextgraph.storage.postgres.schema import (
    BINARY_SPACES,
    DENSE_OPS,
    EF_SEARCH,
    SPARSE_SPACES,
    VECTOR_SPACES,
    space_table,
)
from contextgraph.storage.postgres.store import PgStore
from contextgraph.storage.postgres.vectors import as_param
from contextgraph.storage.sparse_index import K1, B, bm25_scores

INDEXED_SPACES = tuple(sorted(VECTOR_SPACES + SPARSE_SPACES))
LOCAL_SPACES = tuple(sorted((*TIMELINES, *SPARSE_SPACES)))  # kept in the process (the `local` IndexSet)


def idf(df: np.ndarray, n: int) -> np.ndarray:
    """BM25's idf (the Lucene/bm25s form, never negative), as storage.sparse_index.SparseIndex.idf."""
    return np.log1p((n - df + 0.5) / (df + 0.5))


_DENSE_SQL: dict[str, LiteralString] = {
    "cosine": "SELECT seq, 1 - (v <=> %(q)s) FROM {t} ORDER BY v <=> %(q)s LIMIT %(k)s",
    "ip": "SELECT seq, -(v <#> %(q)s) FROM {t} ORDER BY v <#> %(q)s LIMIT %(k)s",
    "hamming": "SELECT seq, 1 - (v <~> %(q)s) / %(bits)s FROM {t} ORDER BY v <~> %(q)s LIMIT %(k)s",
}
_BM25_SQL = (
    "SELECT p.seq, sum(q.w * p.tf / (p.tf + %(base)s + %(slope)s * p.dl)) AS score "
    "FROM unnest(%(terms)s::integer[], %(w)s::double precision[]) AS q(term, w) "
    "JOIN sparse_postings p ON p.space = %(space)s AND p.term = q.term "
    "GROUP BY p.seq ORDER BY score DESC, p.seq LIMIT %(k)s"
)


class PgIndexes:
    def __init__(self, store: PgStore, local_dir: Path | None = None) -> None:
        """`local_dir`: where the in-process indexes (E2-E4, E6, E13) are kept (loaded, or built from the store,
        now), the directory `save` is then given; None searches those spaces in SQL (E2-E4 by an exact scan)."""
        self.store = store
        self.store_id = store.store_id
        self.applied_seq = store.last_seq()
        self._local = IndexSet.open(local_dir, store, spaces=LOCAL_SPACES) if local_dir is not None else None

    # --- queries -----------------------------------------------------------------------------------------------
    def search(self, space: int, query: Vector, k: int, max_df: float = 1.0,
               **bm25: float) -> list[tuple[int, float]]:
        """(seq, score) best first, as storage.indexes.IndexSet.search answers."""
        if space not in INDEXED_SPACES:
            raise ValueError(f"E{space} has no index (E12 is scored per candidate from the store)")
        if k <= 0:
            return []
        if self._local is not None and space in LOCAL_SPACES:
            return self._local.search(space, query, k, max_df, **bm25)
        if space in SPARSE_SPACES:
            return self._bm25(space, sparse(query), k, max_df, **bm25)
        types = self.store.space_types()
        if space not in types:
            return []  # nothing stored yet
        if space in BORROWED:
            return self._borrowed(space, dense(query), k, types)
        dim, sql_type = types[space]
        metric = "hamming" if space in BINARY_SPACES else "ip" if space in DENSE_OPS else "cosine"
        statement = sql.SQL(_DENSE_SQL[metric]).format(t=space_table(space))
        params = {"q": as_param(space, dense(query), sql_type), "k": k, "bits": float(dim)}
        with self.store.connection() as conn, conn.transaction():
            if k > EF_SEARCH:  # HNSW returns at most ef_search rows
                conn.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(min(k, 1000))))
            rows = conn.execute(statement, params).fetchall()
        return [(int(seq), float(score)) for seq, score in rows]

    def _borrowed(self, space: int, query: np.ndarray, k: int, types: dict[int, tuple[int, str]]
                  ) -> list[tuple[int, float]]:
        """E8/E10 as LMDB's BorrowedIndex: E1's graph proposes max(64, 4k) memories (E8 and E10 rank like E1),
        their own vectors score them by cosine, ties by seq."""
        leader = BORROWED[space].leader
        pool = [seq for seq, _ in self.search(leader, query[: types[leader][0]], pool_size(k))]
        if not pool:
            return []
        statement = sql.SQL("SELECT seq, 1 - (v <=> %(q)s) FROM {} WHERE seq = ANY(%(pool)s)").format(
            space_table(space))
        with self.store.connection() as conn:
            rows = conn.execute(statement, {"q": as_param(space, query, types[space][1]), "pool": pool}).fetchall()
        seqs = np.array([int(seq) for seq, _ in rows], dtype=np.int64)
        scores = np.array([float(score) for _, score in rows])
        best = np.lexsort((seqs, -scores))[:k]
        return list(zip(seqs[best].tolist(), scores[best].tolist()))

    def _stats(self, conn, space: int, terms: list[int]) -> tuple[int, float, np.ndarray]:
        """(live documents, avgdl, df of each term) of a sparse space, read in one snapshot."""
        row = conn.execute("SELECT docs, total_len FROM sparse_stats WHERE space = %s", (space,)).fetchone()
        n, total = (int(row[0]), float(row[1])) if row else (0, 0.0)
        counts = dict(conn.execute("SELECT term, count(*) FROM sparse_postings WHERE space = %s AND term = ANY(%s) "
                                   "GROUP BY term", (space, terms)).fetchall()) if terms and n else {}
        df = np.array([counts.get(t, 0) for t in terms], dtype=np.float64)
        return n, (total / n if n else 0.0), df

    def _bm25(self, space: int, query: Sparse, k: int, max_df: float, k1: float = K1,
              b: float = B) -> list[tuple[int, float]]:
        terms = np.unique(np.asarray(query.indices, dtype=np.int64))
        with self.store.connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            n, avgdl, df = self._stats(conn, space, terms.tolist())
            if not n or not len(terms):
                return []
            weights = idf(df, n)
            if max_df < 1.0:
                keep = df <= max_df * n
                if keep.any():  # unless that would skip every term
                    terms, weights = terms[keep], weights[keep]
            base, slope = k1 * (1.0 - b), (k1 * b / avgdl) if avgdl > 0 else 0.0
            rows = conn.execute(_BM25_SQL, {"terms": terms.tolist(), "w": (weights * (k1 + 1)).tolist(),
                                            "base": base, "slope": slope, "space": space, "k": k}).fetchall()
        return [(int(seq), float(score)) for seq, score in rows]

    def score_sparse(self, space: int, query: Sparse, docs: Sequence[Sparse], k1: float = K1,
                     b: float = B) -> np.ndarray:
        """float64 [len(docs)] BM25 scores of given documents with this space's live statistics (df, avgdl)."""
        if space not in SPARSE_SPACES:
            raise ValueError(f"E{space} is not a sparse space")
        if self._local is not None:
            return self._local.score_sparse(space, query, docs, k1=k1, b=b)
        terms = np.unique(np.asarray(query.indices, dtype=np.int64))
        if not len(terms) or not len(docs):
            return np.zeros(len(docs))
        n, avgdl, df = self._stats_now(space, terms.tolist())
        return bm25_scores(terms, idf(df, n), docs, avgdl, k1, b)

    def sparse_idf(self, space: int, terms: np.ndarray) -> np.ndarray:
        """float64 BM25 idf of each term with this space's live statistics, as score_sparse weighs it."""
        if space not in SPARSE_SPACES:
            raise ValueError(f"E{space} is not a sparse space")
        if self._local is not None:
            return self._local.sparse_idf(space, terms)
        terms = np.asarray(terms, dtype=np.int64)
        if not len(terms):
            return np.zeros(0)
        unique, back = np.unique(terms, return_inverse=True)
        n, _, df = self._stats_now(space, unique.tolist())
        return idf(df, n)[back]

    def _stats_now(self, space: int, terms: list[int]) -> tuple[int, float, np.ndarray]:
        """_stats in a read-only snapshot of its own (score_sparse, sparse_idf)."""
        with self.store.connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            return self._stats(conn, space, terms)

    def sizes(self) -> dict[int, int]:
        """Entries per indexed space (spaces with no table yet are absent, as an IndexSet's unmade indexes)."""
        types = self.store.space_types()
        out: dict[int, int] = {}
        with self.store.connection() as conn:
            for space in sorted(types):
                row = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(space_table(space))).fetchone()
                out[space] = int(row[0]) if row else 0
            for space, docs in conn.execute("SELECT space, docs FROM sparse_stats").fetchall():
                out[int(space)] = int(docs)
        return dict(sorted(out.items()))

    # --- the in-process indexes' upkeep (the database's own are written with each transaction) ---------------
    def apply(self, seq: int, fingerprint: Fingerprint) -> None:
        """The writer's put, in the in-process indexes ahead of their catch-up (the put's transaction wrote the
        rest)."""
        if self._local is not None:
            self._local.apply(seq, fingerprint)

    def remove(self, seq: int) -> None:
        if self._local is not None:
            self._local.remove(seq)

    def catch_up(self, store: MemoryStore | None = None) -> int:
        """Bring the in-process indexes up to the log's head and advance `applied_seq` there (the database's own
        need nothing: every committed write is already searchable)."""
        if self._local is not None:
            self._local.catch_up(self.store)
        head = self.store.last_seq()
        done, self.applied_seq = max(head - self.applied_seq, 0), max(head, self.applied_seq)
        return done

    def save(self, directory: Path | str) -> None:
        """Save the in-process indexes (the rest is the database's)."""
        if self._local is not None:
            self._local.save(directory)
