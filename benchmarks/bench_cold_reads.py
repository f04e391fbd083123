"""What a search's candidate reads cost when the store is larger than the page cache: the LMDB map with the
kernel's read-around (LMDB's default) against without it (`readahead=False`, what LmdbStore opens with).

Each setting runs in its own process on the store in HOME, read-only: --queries rounds of `fingerprint_columns`
over --candidates random live seqs in stage 3's dense and sparse spaces plus `get_by_seq` of the same seqs (what
stage 3 and fetch_records read), then a scan of --scan memories in seq order (a reindex's read). Reported: the
median and p95 of a round, and the bytes the process read from the disk (/proc/self/io) per round and for the
scan. Run as root, the page cache is dropped before each setting, so both start cold; otherwise the second
setting finds what the first read, and the comparison says little.

Run:  .venv/bin/python benchmarks/bench_cold_reads.py /tmp/cg1m [--queries 30] [--candidates 120] [--scan 20000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _stats import summarize, write_result

SPACES = [1, 5, 6, 7, 9, 11, 13]


def _read_bytes() -> int:
    with open("/proc/self/io") as f:
        return int(dict(line.split(": ") for line in f.read().splitlines())["read_bytes"])


def measure(home: Path, readahead: bool, queries: int, candidates: int, scan: int, seed: int) -> dict:
    import lmdb

    from contextgraph.storage import lmdb_store

    opened = lmdb.open
    lmdb_store.lmdb.open = lambda *a, **k: opened(*a, **{**k, "readahead": readahead})  # the one setting compared
    store = lmdb_store.LmdbStore(home / "store", readonly=True)
    rng, last = random.Random(seed), store.last_seq()
    took, start = [], _read_bytes()
    for _ in range(queries):
        seqs = sorted(rng.sample(range(1, last + 1), candidates))
        t0 = time.perf_counter()
        store.fingerprint_columns(seqs, SPACES)
        store.get_by_seq(seqs)
        took.append((time.perf_counter() - t0) * 1000)
    per_round = (_read_bytes() - start) / queries
    start, t0 = _read_bytes(), time.perf_counter()
    for n, _ in enumerate(store.scan([1]), 1):
        if n == scan:
            break
    return {"readahead": readahead, "round_ms": summarize(took), "read_bytes_per_round": per_round,
            "scan_s": time.perf_counter() - t0, "scan_read_bytes": _read_bytes() - start}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("home", type=Path)
    ap.add_argument("--queries", type=int, default=30)
    ap.add_argument("--candidates", type=int, default=120)
    ap.add_argument("--scan", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--name", default="cold_reads")
    ap.add_argument("--one", choices=["on", "off"], help=argparse.SUPPRESS)  # a child process: one setting
    args = ap.parse_args()
    if args.one:
        print(json.dumps(measure(args.home, args.one == "on", args.queries, args.candidates, args.scan, args.seed)))
        return 0
    rows = []
    for setting in ("on", "off"):
        dropped = os.geteuid() == 0
        if dropped:
            os.sync()
            Path("/proc/sys/vm/drop_caches").write_text("1\n")
        out = subprocess.run([sys.executable, __file__, str(args.home), "--one", setting, "--queries",
                              str(args.queries), "--candidates", str(args.candidates), "--scan", str(args.scan),
                              "--seed", str(args.seed)], check=True, capture_output=True, text=True).stdout
        row = {**json.loads(out.splitlines()[-1]), "page_cache_dropped": dropped}
        rows.append(row)
        print(f"read-around {setting:3}: round median {row['round_ms']['median']:.1f} ms, p95 "
              f"{row['round_ms']['p95']:.1f}, {row['read_bytes_per_round'] / 1e6:.1f} MB read a round; scan of "
              f"{args.scan} in {row['scan_s']:.1f} s, {row['scan_read_bytes'] / 1e6:.0f} MB read")
    settings = {key: str(value) if isinstance(value, Path) else value for key, value in vars(args).items()}
    write_result(args.name, {"spaces": SPACES, "settings": settings, "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
