"""The PostgreSQL store's consistency walk (tests and `contextgraph doctor`), the same promises as LMDB's: every
memory has its fingerprint (all 13 spaces), its put entry and its searchable rows; nothing searchable outlives
its memory; every edge touches live memories; the counter is ahead of the log; the sparse statistics match the
postings."""

from __future__ import annotations

import psycopg
from psycopg import sql

from contextgraph.fingerprint import SPACES
from contextgraph.storage.codec import decode_fingerprint
from contextgraph.storage.postgres.schema import SPARSE_SPACES, known_spaces, space_table

_ALL_SPACES = frozenset(s.id for s in SPACES)


def _rows(cur: psycopg.Cursor, query: sql.Composable | str) -> list[tuple]:
    return cur.execute(query).fetchall()  # type: ignore[arg-type]  # module-constant SQL


def consistency_problems(cur: psycopg.Cursor) -> list[str]:
    problems: list[str] = []
    (counter,) = _rows(cur, "SELECT next_seq FROM store")[0]
    for (mid,) in _rows(cur, "SELECT m.id FROM memories m LEFT JOIN fingerprints f ON f.seq = m.seq "
                             "WHERE f.seq IS NULL"):
        problems.append(f"{mid}: no fingerprint")
    for (seq,) in _rows(cur, "SELECT f.seq FROM fingerprints f LEFT JOIN memories m ON m.seq = f.seq "
                             "WHERE m.seq IS NULL"):
        problems.append(f"fingerprint {seq} has no memory")
    for (mid,) in _rows(cur, "SELECT m.id FROM memories m LEFT JOIN oplog o ON o.seq = m.seq AND o.op = 'put' "
                             "AND o.memory_id = m.id WHERE o.seq IS NULL"):
        problems.append(f"{mid}: no put entry at its seq")
    for mid, seq in _rows(cur, "SELECT id, seq FROM memories WHERE seq >= (SELECT next_seq FROM store)"):
        problems.append(f"{mid}: seq {seq} is beyond next_seq {counter}")
    if _rows(cur, "SELECT 1 FROM oplog WHERE seq >= (SELECT next_seq FROM store) LIMIT 1"):
        problems.append("oplog runs beyond next_seq")
    for mid, blob in _rows(cur, "SELECT m.id, f.blob FROM memories m JOIN fingerprints f ON f.seq = m.seq"):
        if set(decode_fingerprint(bytes(blob))) != _ALL_SPACES:
            problems.append(f"{mid}: fingerprint is incomplete")
    for space in sorted(known_spaces(cur.connection)):
        table = space_table(space)
        (orphans,) = _rows(cur, sql.SQL("SELECT count(*) FROM {} v LEFT JOIN memories m ON m.seq = v.seq "
                                        "WHERE m.seq IS NULL").format(table))[0]
        (absent,) = _rows(cur, sql.SQL("SELECT count(*) FROM memories m LEFT JOIN {} v ON v.seq = m.seq "
                                       "WHERE v.seq IS NULL").format(table))[0]
        if orphans:
            problems.append(f"E{space}: {orphans} vector rows of memories that do not exist")
        if absent:
            problems.append(f"E{space}: {absent} memories without a vector row")
    (orphans,) = _rows(cur, "SELECT count(*) FROM sparse_postings p LEFT JOIN memories m ON m.seq = p.seq "
                            "WHERE m.seq IS NULL")[0]
    if orphans:
        problems.append(f"{orphans} sparse postings of memories that do not exist")
    stats = {int(s): (int(n), float(t)) for s, n, t in _rows(cur, "SELECT space, docs, total_len FROM sparse_stats")}
    (live,) = _rows(cur, "SELECT count(*) FROM memories")[0]
    for space in SPARSE_SPACES:
        docs, _total = stats.get(space, (0, 0.0))
        if docs != live:
            problems.append(f"E{space}: the statistics count {docs} documents, the store holds {live}")
    for source, target in _rows(cur, "SELECT e.source, e.target FROM edges e WHERE NOT EXISTS (SELECT 1 FROM "
                                     "memories m WHERE m.id = e.source) OR NOT EXISTS (SELECT 1 FROM memories m "
                                     "WHERE m.id = e.target)"):
        problems.append(f"edge {source}→{target} touches a missing memory")
    return problems
