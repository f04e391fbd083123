"""A PostgreSQL store's commit, with and without psycopg's pipeline mode, alternated in one process (issue 36.4).

`PgStore.put` sends ~30 writes for one memory (its record, fingerprint, ten vector rows under their HNSW
indexes, postings, statistics, oplog, session, lineage). Sent one by one each waits for its answer; in pipeline
mode they go out together and the transaction waits once. This measures `store.put` alone (no embedding, no
service), on one embedded PostgreSQL database grown to --size memories first (bench_memory_ops.Filler: --distinct
texts through the real pipeline, then their fingerprints reused with noise), then --blocks blocks of --block puts
alternating "pipelined" and "one by one" (psycopg's Connection.pipeline replaced by a no-op), so the machine's
drift hits both alike. The machine is shared: the load average is printed.

Run:  .venv/bin/python benchmarks/bench_postgres_put.py [--size 2000] [--blocks 8] [--block 50]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import anyio
import psycopg
from _stats import write_result
from _workload import bench_settings
from bench_postgres import Postgres


async def run(args: argparse.Namespace) -> dict:
    from bench_memory_ops import Filler

    from contextgraph.app import build_app

    pg = Postgres(None)
    app = build_app(bench_settings(Path(tempfile.mkdtemp(prefix="cg-bench-pgput-")),
                                   CONTEXTGRAPH_STORE_URL=pg.fresh()))
    real = psycopg.Connection.pipeline
    per_put: dict[str, list[float]] = {"pipelined": [], "one_by_one": []}
    try:
        app.services.storage.open()
        pipeline = await app.services.perception.pipeline()
        target = args.size + args.blocks * args.block
        filler = Filler(app, pipeline, args.distinct, horizon=target, seed=args.seed)
        filler.grow_to(args.size)
        load = [os.getloadavg()[0]]
        for b in range(args.blocks):
            mode = "pipelined" if b % 2 == 0 else "one_by_one"
            psycopg.Connection.pipeline = real if mode == "pipelined" else (  # type: ignore[method-assign]
                lambda self: contextlib.nullcontext())
            before = filler.report["put_s"]
            filler.grow_to(args.size + (b + 1) * args.block)
            per_put[mode].append((filler.report["put_s"] - before) / args.block * 1000)
            print(f"  block {b} {mode:<10} {per_put[mode][-1]:6.2f} ms/put (load {os.getloadavg()[0]:.1f})",
                  flush=True)
        load.append(os.getloadavg()[0])
    finally:
        psycopg.Connection.pipeline = real  # type: ignore[method-assign]
        app.close()
        pg.close()
    summary = {mode: round(statistics.median(v), 2) for mode, v in per_put.items()}
    summary["one_by_one_over_pipelined"] = round(summary["one_by_one"] / summary["pipelined"], 2)
    print(summary)
    return {"summary": summary, "blocks_ms_per_put": per_put, "loadavg": load,
            "settings": {"size": args.size, "blocks": args.blocks, "block": args.block, "distinct": args.distinct}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=2000)
    ap.add_argument("--distinct", type=int, default=300)
    ap.add_argument("--blocks", type=int, default=8)
    ap.add_argument("--block", type=int, default=50)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--name", default="postgres_put")
    args = ap.parse_args()
    started = time.time()
    results = anyio.run(run, args)
    results["wall_s"] = round(time.time() - started, 1)
    write_result(args.name, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
