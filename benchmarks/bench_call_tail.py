"""One tool's latency tail on a filled data directory, and what the slowest calls spent it on.

Opens DIR as the server does, makes --warmup calls (the store model's fit after opening runs beside the first
few dozen), then times --calls calls through the real MCP SDK client in-process. search_graph asks for
`include_breakdown`, so each call's stage times come back with it; every call also records how long the service
spent in the pieces around retrieval (the embedding, the UTL, the results listeners) and, for a store, in its
edge rules, synced commit and index inserts, timed by wrapping those functions. The slowest calls are printed
with both, which is how the ATC outcome log's re-sort and the awaited engine save were found (benchmarks/HISTORY.md,
issue 19.4, fourth pass). `--gap-ms` pauses after each call, untimed: calls spaced as an agent's are, each
answered once the work after the previous answer has run, where back to back (the default) each call shares the
two cores with it.

    .venv/bin/python benchmarks/bench_call_tail.py --home /tmp/cg100k --tool search_graph --calls 200
    PYTHONPATH=<worktree>/src .venv/bin/python benchmarks/bench_call_tail.py ...   # another version, A/B

Store and inject calls add memories to DIR (texts far past what the fill used, so new to it).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _stats import time_method, write_result
from _workload import bench_settings, function_pairs, percentile, realistic_texts

PIECES: dict[str, list[float]] = defaultdict(list)  # label → ms of each timed call to that piece


def timed(owner: Any, name: str, label: str) -> None:
    """Wrap owner.name (sync or async) so that each call's milliseconds land in PIECES[label]."""
    time_method(owner, name, label, PIECES)


def instrument() -> None:
    from contextgraph.services.engine.delta_sc import DeltaScComputer
    from contextgraph.services.memory.auto_edges import AutoEdgeRules
    from contextgraph.services.memory.memory import MemoryService
    from contextgraph.services.memory.search import Retriever
    from contextgraph.services.runtime import operation_pulse
    from contextgraph.services.runtime.perception import Perception
    from contextgraph.storage.indexes import IndexSet
    from contextgraph.storage.lmdb_store import LmdbStore

    timed(Perception, "embed_query", "embed_query")
    timed(Perception, "fingerprints", "embedding")  # every embedding, a search's query included
    timed(Retriever, "run", "retrieval")
    timed(Retriever, "rank", "related_rank")  # inject_context's stages 3-5 over its neighbourhood
    timed(operation_pulse, "score", "pulse_utl")
    timed(DeltaScComputer, "compute", "utl_compute")
    timed(MemoryService, "_compete", "workspace_compete")
    # a store's other pieces: the automatic edges' searches, the synced commit, the index inserts
    timed(AutoEdgeRules, "similar", "edges_similar")
    timed(AutoEdgeRules, "causal", "edges_causal")
    timed(LmdbStore, "put", "commit_put")
    timed(IndexSet, "apply", "index_apply")


def arguments(tool: str, text: str) -> dict[str, Any]:
    if tool == "search_graph":
        return {"query": text, "top_k": 10, "include_breakdown": True}
    args = {"content": text, "rationale": "bench_call_tail"}
    return {**args, "related_k": 5} if tool == "inject_context" else args


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from mcp import Client

    from contextgraph.app import build_app
    from contextgraph.server import build_server

    instrument()
    app = build_app(bench_settings(args.home))
    app.services.storage.open()
    await app.services.perception.pipeline()
    listeners = app.services.memory.listeners.after_results
    for i, listener in enumerate(listeners):  # the results listeners (ATC's predictions) run on the event loop
        def listened(query: str, retrieval: Any, listener: Any = listener) -> None:
            t = time.perf_counter()
            listener(query, retrieval)
            PIECES["results_listeners"].append((time.perf_counter() - t) * 1000)
        listeners[i] = listened
    if args.tool == "search_graph":
        texts = [p.query for p in function_pairs()]
        np.random.default_rng(args.seed).shuffle(texts)
    else:
        texts = [text for text, _ in itertools.islice(realistic_texts(args.seed), 60_000, 60_000 + args.warmup
                                                      + args.calls)]
    calls = []
    async with Client(build_server(app), mode="legacy") as client:
        for i, text in enumerate(texts[:args.warmup + args.calls]):
            if i == args.warmup:
                PIECES.clear()
            before = {label: len(ms) for label, ms in PIECES.items()}
            t = time.perf_counter()
            result = await client.call_tool(args.tool, arguments(args.tool, text))
            ms = (time.perf_counter() - t) * 1000
            if args.gap_ms:  # an agent thinking between calls: the work after the previous answer has run
                await asyncio.sleep(args.gap_ms / 1000)
            if i < args.warmup:
                continue
            payload = result.structured_content or json.loads(result.content[0].text)
            stages = (payload.get("breakdown") or payload).get("stages_ms") if isinstance(payload, dict) else None
            pieces = {label: round(values[-1], 2) for label, values in PIECES.items()
                      if len(values) > before.get(label, 0)}
            calls.append({"ms": round(ms, 2), "call": i - args.warmup, "stages_ms": stages, "pieces_ms": pieces})
    app.close()
    times = [c["ms"] for c in calls]
    out = {"tool": args.tool, "home": str(args.home), "calls": len(calls), "warmup": args.warmup,
           "gap_ms": args.gap_ms,
           "median_ms": round(float(np.median(times)), 2), "p95_ms": round(percentile(times, 95), 2),
           "p99_ms": round(percentile(times, 99), 2),
           "pieces_ms": {label: {"n": len(v), "median": round(float(np.median(v)), 2),
                                 "p95": round(percentile(v, 95), 2)} for label, v in sorted(PIECES.items())},
           "slowest": sorted(calls, key=lambda c: -c["ms"])[:args.slowest]}
    stages: dict[str, list[float]] = {}  # a search's own stage split (its breakdown), call by call
    for c in calls:
        for stage, ms in (c["stages_ms"] or {}).items():
            stages.setdefault(stage, []).append(ms)
    out["stages_ms"] = {stage: {"n": len(v), "median": round(float(np.median(v)), 2),
                                "p95": round(percentile(v, 95), 2)} for stage, v in stages.items()}
    print(f"{args.tool}: median {out['median_ms']} ms, p95 {out['p95_ms']}, p99 {out['p99_ms']} (n={len(calls)})")
    for label, summary in [*out["pieces_ms"].items(), *out["stages_ms"].items()]:
        print(f"   {label:20s} n={summary['n']:4d} median {summary['median']:7.2f} p95 {summary['p95']:7.2f}")
    print("   slowest calls:")
    for c in out["slowest"]:
        print(f"   {c['ms']:8.1f} ms  call {c['call']:4d}  stages {c['stages_ms']}  pieces {c['pieces_ms']}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--home", required=True, help="a filled data directory (bench_memory_ops.py --fill-only)")
    ap.add_argument("--tool", choices=["search_graph", "store_memory", "inject_context"], default="search_graph")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=60)
    ap.add_argument("--slowest", type=int, default=10)
    ap.add_argument("--gap-ms", type=float, default=0.0,
                    help="untimed pause after each call (default 0: back to back, each call beside the work the "
                         "call before it left after its answer)")
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--name", help="write benchmarks/results/NAME.json")
    args = ap.parse_args()
    out = asyncio.run(run(args))
    if args.name:
        write_result(args.name, out)


if __name__ == "__main__":
    main()
