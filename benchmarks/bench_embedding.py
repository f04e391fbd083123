"""The 13-embedding fingerprint of a memory: one forward pass of the shared transformer plus the 13 embedders.

  1. one memory, ~15 tokens and ~100 tokens (and a ~250-token code memory): `pipeline.embed([draft])`, each call
     timed on its own, plus the per-stage split the pipeline records (`pipeline.last_timings`: tokenise +
     forward, each embedder E1..E13, validation)                                   SPEC budget: all 13 < 35 ms
  2. a batch of 64 realistic memories (stdlib docstring paragraphs and function sources) in one call: ms per
     batch and per memory, with the same per-stage split
  3. every call above alternates with the same call with numpy's OpenBLAS held to one thread (set at run time
     through OpenBLAS's own set_num_threads, as threadpoolctl does). numpy's default is one BLAS thread per core;
     ONNX Runtime has its
     own two threads, and the small matrix products of the embedders and of retrieval pay for BLAS threads
     waking (and, under load, for contending with ORT's threads). This measures what that costs.

The fp32 graph always; with --int8 also the int8 per-channel graph (CONTEXTGRAPH_INT8=1), in the same process.
The ONNX graphs come from CONTEXTGRAPH_MODEL_CACHE, else benchmarks/results/model-cache (exported on first use).

With --hogs N, N busy-looping processes compete for the cores during every measurement (a host under load).

Run:  .venv/bin/python benchmarks/bench_embedding.py [--runs 100] [--int8] [--hogs 1] [--quick]
"""

from __future__ import annotations

import argparse
import gc
import itertools
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _stats import format_summary, summarize, write_result
from _workload import bench_settings, blas_threads, cpu_hogs, realistic_texts

BUDGET_ALL13_MS = 35.0

TEXTS = {
    "short (~15 tokens)": ("text", "Close the underlying file and release the lock held by the writer thread."),
    "medium (~100 tokens)": (
        "text",
        ("The deploy on Tuesday failed because the migration locked the orders table for eleven minutes. We now run "
         "schema migrations in a separate step before the rollout, with a lock timeout of five seconds, and the "
         "health check waits for the new pods to report ready before traffic moves. If a migration needs a long "
         "lock, split it: add the nullable column first, backfill in batches of ten thousand rows, then add the "
         "constraint. Alice owns the runbook."),
    ),
    "code (~250 tokens)": (
        "code",
        '''def retry(fn, attempts=5, base_delay=0.2, max_delay=5.0, retry_on=(TimeoutError, ConnectionError)):
    """Call fn until it succeeds, sleeping with jittered exponential backoff between attempts."""
    delay = base_delay
    last_error = None
    for attempt in range(1, attempts + 1):
        try:
            return fn()
        except retry_on as exc:
            last_error = exc
            if attempt == attempts:
                break
            sleep_for = min(max_delay, delay) * (0.5 + random.random())
            log.warning("attempt %d/%d failed: %s; retrying in %.2fs", attempt, attempts, exc, sleep_for)
            time.sleep(sleep_for)
            delay *= 2
    raise RetryError(f"gave up after {attempts} attempts") from last_error
''',
    ),
}


def stage_summary(timings: list[Any]) -> dict[str, Any]:
    """Median/p95 of each stage over a list of pipeline.last_timings."""
    out: dict[str, Any] = {"encode_ms": summarize([t.encode_ms for t in timings])}
    for space in sorted(timings[0].embedder_ms):
        out[f"E{space}_ms"] = summarize([t.embedder_ms[space] for t in timings])
    out["embedders_total_ms"] = summarize([sum(t.embedder_ms.values()) for t in timings])
    # the embedders' share of the pipeline, call by call: steadier than either time on a loaded machine
    out["embedders_share"] = summarize([sum(t.embedder_ms.values()) / t.total_ms for t in timings])
    out["validate_ms"] = summarize([t.validate_ms for t in timings])
    out["total_ms"] = summarize([t.total_ms for t in timings])
    return out


def print_stages(stages: dict[str, Any], indent: str = "      ") -> None:
    parts = [f"{k[:-3]} {v['median']:.2f}" for k, v in stages.items() if k.endswith("_ms") and k != "total_ms"]
    parts.append(f"embedders' share {stages['embedders_share']['median']:.1%}")
    line, lines = "", []
    for part in parts:
        if len(line) + len(part) > 100:
            lines.append(line)
            line = ""
        line += ("" if not line else " | ") + part
    lines.append(line)
    print(indent + "stage medians (ms): " + ("\n" + indent + "  ").join(lines))


def run_single(pipeline: Any, text: str, modality: str, runs: int, warmup: int,
               blas: list[tuple[str, int | None]]) -> dict[str, dict[str, Any]]:
    """Each call timed on its own; with several OpenBLAS settings, they alternate call by call, so drift in the
    machine's load hits every setting alike."""
    from contextgraph.embedders.pipeline import Draft

    draft = Draft(text=text, modality=modality, timestamp=time.time())
    for _ in range(warmup):
        pipeline.embed([draft])
    wall: dict[str, list[float]] = {label: [] for label, _ in blas}
    stages: dict[str, list[Any]] = {label: [] for label, _ in blas}
    gc.collect()
    for _ in range(runs):
        for label, threads in blas:
            blas_threads(threads)
            t0 = time.perf_counter()
            pipeline.embed([draft])
            wall[label].append((time.perf_counter() - t0) * 1e3)
            stages[label].append(pipeline.last_timings)
    return {label: {"wall_ms": summarize(wall[label]), "stages": stage_summary(stages[label])} for label, _ in blas}


def run_batch(pipeline: Any, items: list[tuple[str, str]], runs: int,
              blas: list[tuple[str, int | None]]) -> dict[str, dict[str, Any]]:
    from contextgraph.embedders.pipeline import Draft

    drafts = [Draft(text=t, modality=m, timestamp=time.time() + i) for i, (t, m) in enumerate(items)]
    pipeline.embed(drafts)  # warm-up
    wall: dict[str, list[float]] = {label: [] for label, _ in blas}
    stages: dict[str, list[Any]] = {label: [] for label, _ in blas}
    gc.collect()
    for _ in range(runs):
        for label, threads in blas:
            blas_threads(threads)
            t0 = time.perf_counter()
            pipeline.embed(drafts)
            wall[label].append((time.perf_counter() - t0) * 1e3)
            stages[label].append(pipeline.last_timings)
    return {label: {"items": len(items), "wall_ms": summarize(wall[label]),
                    "per_memory_ms": summarize([w / len(items) for w in wall[label]]),
                    "stages": stage_summary(stages[label])} for label, _ in blas}


def bench_graph(label: str, int8: bool, args: argparse.Namespace, batch_items: list[tuple[str, str]]) -> dict:
    from contextgraph.embedders.pipeline import build_pipeline

    home = tempfile.mkdtemp(prefix="cg-bench-embed-")
    t0 = time.perf_counter()
    pipeline = build_pipeline(bench_settings(home, int8=int8))
    load_s = time.perf_counter() - t0
    tok = pipeline.backbone._tokenizer  # only to report token counts
    out: dict[str, Any] = {"runtime": pipeline.backbone.runtime, "load_s": round(load_s, 3),
                           "graph": str(pipeline.backbone.graph_path.name), "single": {}, "batch": {}}
    print(f"== {label}: {pipeline.backbone.runtime} (pipeline built in {load_s:.2f} s)")
    default_threads = blas_threads()
    blas = [("default", default_threads)]
    if default_threads is not None and default_threads != 1 and not args.no_blas_compare:
        blas.append(("openblas_1_thread", 1))
    print(f"   OpenBLAS threads: {' vs '.join(f'{b} ({n})' for b, n in blas)}, alternating call by call")
    for name, (modality, text) in TEXTS.items():
        tokens = len(tok.encode(text).ids)
        by_blas = run_single(pipeline, text, modality, args.runs, args.warmup, blas)
        for blas_label, r in by_blas.items():
            r["tokens"] = tokens
            out["single"].setdefault(blas_label, {})[name] = r
            print("   " + format_summary(f"one memory, {name}: {tokens} tok [{blas_label}]", r["wall_ms"], "ms",
                                        BUDGET_ALL13_MS))
            print_stages(r["stages"])
    by_blas = run_batch(pipeline, batch_items, args.batch_runs, blas)
    for blas_label, b in by_blas.items():
        out["batch"][blas_label] = b
        print("   " + format_summary(f"batch of {len(batch_items)} (whole call) [{blas_label}]", b["wall_ms"], "ms"))
        print("   " + format_summary(f"batch of {len(batch_items)}, per memory [{blas_label}]", b["per_memory_ms"],
                                    "ms"))
        print_stages(b["stages"])
    blas_threads(default_threads)
    out["openblas_default_threads"] = default_threads
    shutil.rmtree(home, ignore_errors=True)  # nothing is stored there: the graph comes from the model cache
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=100, help="timed calls per single-memory case (≥ 50)")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--batch-runs", type=int, default=10, help="timed calls of the 64-memory batch")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--int8", action="store_true", help="also measure the int8 per-channel graph")
    ap.add_argument("--no-blas-compare", action="store_true", help="skip the OpenBLAS-one-thread repeat")
    ap.add_argument("--hogs", type=int, default=0,
                    help="run N busy-looping processes during the measurements (CPU contention; default 0)")
    ap.add_argument("--quick", action="store_true", help="20 runs, 3 batch runs (smoke run)")
    ap.add_argument("--name", default="embedding", help="result file name (benchmarks/results/<name>.json)")
    args = ap.parse_args()
    if args.quick:
        args.runs, args.batch_runs, args.warmup = 20, 3, 2

    # 64 realistic memories: the stream's first items alternate docstring paragraphs and function sources;
    # take them from a little way in so the batch is not all from one module.
    batch_items = list(itertools.islice(realistic_texts(), 1000, 1000 + args.batch_size))
    results: dict[str, Any] = {"budget_all13_ms": BUDGET_ALL13_MS, "runs": args.runs, "warmup": args.warmup,
                               "batch_runs": args.batch_runs, "texts": {k: v[1] for k, v in TEXTS.items()},
                               "graphs": {}}
    results["cpu_hogs"] = args.hogs
    if args.hogs:
        print(f"(measuring with {args.hogs} busy-looping process(es) competing for the 2 cores)")
    with cpu_hogs(args.hogs):
        results["graphs"]["fp32"] = bench_graph("fp32 graph", False, args, batch_items)
        if args.int8:
            results["graphs"]["int8"] = bench_graph("int8 graph (CONTEXTGRAPH_INT8=1)", True, args, batch_items)
    write_result(args.name, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
