"""The LMDB store's full consistency walk, for tests and `contextgraph doctor`: every record has its ids, seqs,
fingerprint (all 13 spaces) and put entry; every fingerprint has a record; every edge is indexed both ways and
touches live memories."""

from __future__ import annotations

from typing import Any

import lmdb

from contextgraph.fingerprint import SPACES
from contextgraph.storage.codec import decode_fingerprint, decode_record
from contextgraph.storage.lmdb_keys import U64, read_counter, seq_key

_ALL_SPACES = frozenset(s.id for s in SPACES)


def consistency_problems(txn: lmdb.Transaction, db: dict[str, Any]) -> list[str]:
    """What is wrong in the snapshot `txn` of the tables `db` (empty when sound)."""
    problems: list[str] = []
    counter = read_counter(txn, db["meta"])
    n = {name: txn.stat(db[name])["entries"] for name in ("memories", "fingerprints", "ids", "seqs")}
    if len(set(n.values())) != 1:
        problems.append(f"table sizes differ: {n}")
    for mid, raw in txn.cursor(db=db["memories"]):
        problems += _memory_problems(txn, db, bytes(mid), decode_record(raw).seq, counter)
    cursor = txn.cursor(db=db["oplog"])
    if cursor.last() and U64.unpack(cursor.key())[0] >= counter:
        problems.append("oplog runs beyond next_seq")
    if "edges_out" in db:
        problems += _edge_problems(txn, db)
    return problems


def _memory_problems(txn: lmdb.Transaction, db: dict[str, Any], mid: bytes, seq: int, counter: int) -> list[str]:
    """One record's: its ids and seqs entries, its whole fingerprint, its put entry, its seq below the counter."""
    problems = []
    k = seq_key(seq)
    name = mid.decode()
    if txn.get(mid, db=db["ids"]) != k:
        problems.append(f"{name}: ids does not map to seq {seq}")
    if txn.get(k, db=db["seqs"]) != mid:
        problems.append(f"{name}: seqs[{seq}] does not map back")
    blob = txn.get(k, db=db["fingerprints"])
    if blob is None:
        problems.append(f"{name}: no fingerprint")
    elif set(decode_fingerprint(blob)) != _ALL_SPACES:
        problems.append(f"{name}: fingerprint is incomplete")
    if txn.get(k, db=db["oplog"]) != b"p" + k + mid:
        problems.append(f"{name}: no put entry at seq {seq}")
    if seq >= counter:
        problems.append(f"{name}: seq {seq} is beyond next_seq {counter}")
    return problems


def _edge_problems(txn: lmdb.Transaction, db: dict[str, Any]) -> list[str]:
    """Every edge indexed both ways, between memories that exist."""
    problems = []
    if txn.stat(db["edges_out"])["entries"] != txn.stat(db["edges_in"])["entries"]:
        problems.append("edges_out and edges_in differ in size")
    for key in txn.cursor(db=db["edges_out"]).iternext(values=False):
        k = bytes(key)
        for end in (k[:32], k[32:64]):
            if txn.get(end, db=db["ids"]) is None:
                problems.append(f"edge {k[:32].decode()}→{k[32:64].decode()} touches a missing memory")
        if txn.get(k[32:64] + k[:32] + k[64:], db=db["edges_in"]) is None:
            problems.append(f"edge {k[:32].decode()}→{k[32:64].decode()} is not indexed by target")
    return problems
