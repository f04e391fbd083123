"""The UTL computation alone (services.delta_sc.DeltaScComputer.compute), in-process, at growing store sizes: what
compute_delta_sc, inject_context, store_memory, search_graph (D16) and curation spend on ΔS/ΔC, without the MCP
round trip or the embedding. SPEC §11: compute_delta_sc p95 < 25 ms at 10K.

The store is filled as bench_memory_ops fills it (its Filler: --distinct real stdlib texts through the pipeline,
the rest reuse their fingerprints with noise). At each size, after the store model's background fit has finished:
  stored   a random stored memory scored leaving itself out (get_johari_classification, compute_delta_sc on a
           vertex, curation's pulse)
  new      a fingerprint not in the store (a held-out realistic text embedded once before timing: store_memory,
           search_graph's query)
each --ops calls, alternating; then --profile calls under cProfile, the top functions by own time.

Run:  .venv/bin/python benchmarks/bench_delta_sc.py [--sizes 1000,10000] [--ops 200] [--home DIR]
Timings on a shared machine are noisy (other processes compete for its two cores): compare medians of runs made
back to back.
"""

from __future__ import annotations

import argparse
import cProfile
import itertools
import json
import os
import pstats
import random
import sys
import tempfile
import time
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np
from _workload import fit_store_model, open_services, percentile, random_stored, realistic_texts
from bench_memory_ops import Filler

RESULTS = Path(__file__).resolve().parent / "results"


def summary(values: list[float]) -> dict[str, float]:
    return {"n": len(values), "median": round(percentile(values, 50), 3), "p95": round(percentile(values, 95), 3),
            "mean": round(float(np.mean(values)), 3)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--ops", type=int, default=200)
    ap.add_argument("--distinct", type=int, default=1500)
    ap.add_argument("--profile", type=int, default=40)
    ap.add_argument("--home", default=None, help="data directory (kept; a filled store is reused)")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--name", default="delta_sc")
    args = ap.parse_args()

    from contextgraph.embedders.pipeline import Draft

    home = Path(args.home) if args.home else Path(tempfile.mkdtemp(prefix="bench-delta-sc-"))
    services, pipeline = open_services(home)
    sizes = [int(s) for s in args.sizes.split(",")]
    filler = Filler(types.SimpleNamespace(services=services), pipeline, args.distinct, max(sizes), args.seed)
    probes_text = list(itertools.islice(realistic_texts(args.seed + 1000), 64))
    probes = pipeline.embed([Draft(text=t, modality=m, timestamp=time.time()) for t, m in probes_text])
    handle = services.storage
    store, indexes, computer = handle.store, handle.indexes, handle.delta_sc
    rng = random.Random(args.seed)
    history = [0.45, 0.5, 0.55, 0.5]
    out: dict = {"sizes": {}}
    for size in sizes:
        filler.grow_to(size)
        fit_store_model(services, pipeline)
        cpu: list[float] = []  # process CPU time per call: less at the mercy of the machine's other load

        def stored_one() -> float:
            seq, fp = random_stored(store, rng)
            t0, c0 = time.perf_counter(), time.process_time()
            computer.compute(store, indexes, pipeline.embedders, fp, coherence_history=history,
                             exclude=frozenset({seq}))
            cpu.append((time.process_time() - c0) * 1e3)
            return (time.perf_counter() - t0) * 1e3

        def new_one() -> float:
            fp = probes[rng.randrange(len(probes))]
            t0, c0 = time.perf_counter(), time.process_time()
            computer.compute(store, indexes, pipeline.embedders, fp, coherence_history=history)
            cpu.append((time.process_time() - c0) * 1e3)
            return (time.perf_counter() - t0) * 1e3

        for _ in range(5):
            stored_one(), new_one()
        stored, new = [], []
        cpu.clear()
        for _ in range(args.ops):
            stored.append(stored_one())
            new.append(new_one())
        row = {"stored": summary(stored), "new": summary(new), "both": summary(stored + new), "cpu": summary(cpu),
               "loadavg": list(os.getloadavg())}
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(args.profile):
            stored_one(), new_one()
        profile.disable()
        stats = pstats.Stats(profile)
        total = sum(v[2] for v in stats.stats.values())  # type: ignore[attr-defined]
        top = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:15]  # type: ignore[attr-defined]
        row["profile_own_time"] = [{"function": f"{Path(f).name}:{line}:{name}", "share": round(v[2] / total, 3)}
                                   for (f, line, name), v in top]
        out["sizes"][size] = row
        print(f"[{size}] stored median {row['stored']['median']:.2f} p95 {row['stored']['p95']:.2f} ms | new "
              f"median {row['new']['median']:.2f} p95 {row['new']['p95']:.2f} ms | both p95 {row['both']['p95']:.2f} | "
              f"CPU median {row['cpu']['median']:.2f} p95 {row['cpu']['p95']:.2f} ms | load {row['loadavg'][0]:.1f}")
        for t in row["profile_own_time"][:10]:
            print(f"      {t['share']:6.1%}  {t['function']}")
    services.close()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
