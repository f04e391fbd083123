"""Item 5 groundwork (issue 19.5): can a space's nearest neighbours be found without its own HNSW graph?

For --queries stored memories of a filled store (`bench_memory_ops.py --fill-only --home DIR`), each space's exact
top-10 by its own measure (brute force over every stored vector, the memory itself left out) against the top-10 of
a candidate pool found another way and re-ranked by that same measure:

    E10  E1's top-K: E10 is E1 with the modality's one-hot appended at weight 0.5, so its order is E1's plus a
         same-modality bonus
    E8   E1's top-K for the memory's E8 vector: E8 is E1 mixed with the neighbours' E1 (one message-passing round)
    E2   the K nearest in time: E2's kernel is a mean of exp(−|Δt|/τ), falling in |Δt|
    E4   the K nearest in store order (global position): one of E4's two positional kernels
    E3   the K nearest in time of day: one of E3's three periodic kernels (day, week, year)

Recall@10 per space and K. A recall of 1.0 at small K means the space's HNSW graph could go (item 5: RSS) with
its searches answered from E1's graph or from sorted timestamps/positions. The pool here comes from exact E1
scores; an HNSW pool adds E1's own ANN recall (≈ 0.99 at ef 64).

Then the shipped indexes (storage.derived_index, after the groundwork above): the store's IndexSet answers each
derived space's top-10 for the same queries (its pool of max(64, 4k) re-scored on the stored vectors), compared
with the exact top-10; and each search's latency (the set is opened, or rebuilt, from DIR/indexes first).

Run:  .venv/bin/python benchmarks/bench_derived_spaces.py --home DIR [--queries 300]
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _stats import write_result

DAY_S = 86_400.0
SPACES = (1, 2, 3, 4, 8, 10)


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--home", required=True, help="a filled data directory (its store/ is read, not changed)")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--name", default="derived_spaces")
    args = ap.parse_args()

    from contextgraph.storage.lmdb_store import LmdbStore
    from contextgraph.storage.maintenance import STORE_DIR

    with LmdbStore(Path(args.home) / STORE_DIR) as store:
        rows = list(store.scan(spaces=SPACES))
    records = [r for r, _ in rows]
    unit = {s: _unit(np.stack([np.asarray(fp[s], np.float32) for _, fp in rows])) for s in SPACES}
    raw2 = np.stack([np.asarray(fp[2], np.float32) for _, fp in rows])  # E2 compares by dot product
    times = np.array([r.created_at for r in records])
    order = np.array([r.seq for r in records], dtype=np.float64)
    n = len(records)

    def scores(space: int, q: int) -> np.ndarray:
        return raw2 @ raw2[q] if space == 2 else unit[space] @ unit[space][q]

    def top10(space: int, q: int, pool: np.ndarray | None = None) -> set[int]:
        s = scores(space, q).astype(np.float64)
        s[q] = -np.inf
        if pool is not None:
            keep = np.full(n, -np.inf)
            keep[pool] = 0.0
            s += keep
        return set(np.argsort(-s, kind="stable")[:10].tolist())

    def nearest(distance: np.ndarray, k: int) -> np.ndarray:
        return np.argsort(distance, kind="stable")[: k + 1]

    def time_of_day(q: int) -> np.ndarray:
        d = np.abs(times - times[q]) % DAY_S
        return np.minimum(d, DAY_S - d)

    pools: dict[str, tuple[int, Callable[[int, int], np.ndarray]]] = {
        "E10 from E1's top-K": (10, lambda q, k: nearest(-(unit[1] @ unit[1][q]), k)),
        "E8 from E1's top-K for the E8 vector": (8, lambda q, k: nearest(-(unit[1] @ unit[8][q]), k)),
        "E2 from the K nearest in time": (2, lambda q, k: nearest(np.abs(times - times[q]), k)),
        "E4 from the K nearest in store order": (4, lambda q, k: nearest(np.abs(order - order[q]), k)),
        "E3 from the K nearest in time of day": (3, lambda q, k: nearest(time_of_day(q), k)),
    }
    queries = random.Random(args.seed).sample(range(n), min(args.queries, n))
    span_days = (times.max() - times.min()) / DAY_S
    print(f"{n} memories over {span_days:.1f} days, {len({r.session for r in records})} sessions; "
          f"{len(queries)} queries")
    results: dict[str, dict[str, float]] = {}
    for label, (space, pool) in pools.items():
        results[label] = {}
        for k in (20, 50, 100, 200):
            hits = [len(top10(space, q) & top10(space, q, pool(q, k))) / 10 for q in queries]
            results[label][str(k)] = round(float(np.mean(hits)), 4)
        print(f"   {label:40s} recall@10 at K = 20 / 50 / 100 / 200: "
              + " / ".join(f"{v:.3f}" for v in results[label].values()))
    shipped = _shipped(Path(args.home), records, queries, top10)
    write_result(args.name, {"memories": n, "span_days": round(span_days, 2), "queries": len(queries),
                             "recall_at_10": results, "shipped_indexes": shipped})
    return 0


def _shipped(home: Path, records: list, queries: list[int],
             top10: Callable[[int, int], set[int]]) -> dict[str, dict[str, float]]:
    """Recall@10 and latency of the IndexSet's derived spaces against the exact top-10."""
    import time

    from contextgraph.storage.indexes import IndexSet
    from contextgraph.storage.lmdb_store import LmdbStore
    from contextgraph.storage.maintenance import INDEX_DIR, STORE_DIR

    row_of = {r.seq: i for i, r in enumerate(records)}
    out: dict[str, dict[str, float]] = {}
    with LmdbStore(home / STORE_DIR) as store:
        indexes = IndexSet.open(home / INDEX_DIR, store)
        fps = store.fingerprints([records[q].seq for q in queries])
        for space in (2, 3, 4, 8, 10):
            hits, took = [], []
            for q, fp in zip(queries, fps):
                assert fp is not None
                t0 = time.perf_counter()
                found = indexes.search(space, fp[space], 11)
                took.append(time.perf_counter() - t0)
                got = {row_of[seq] for seq, _ in found if seq != records[q].seq}
                hits.append(len(got & top10(space, q)) / 10)
            out[f"E{space}"] = {"recall_at_10": round(float(np.mean(hits)), 4),
                                "search_ms_median": round(1000 * float(np.median(took)), 2),
                                "search_ms_p95": round(1000 * float(np.percentile(took, 95)), 2)}
            print(f"   shipped E{space:<2} recall@10 {out[f'E{space}']['recall_at_10']:.3f}, search "
                  f"{out[f'E{space}']['search_ms_median']:.2f} ms median, {out[f'E{space}']['search_ms_p95']:.2f} p95")
    return out


if __name__ == "__main__":
    raise SystemExit(main())
