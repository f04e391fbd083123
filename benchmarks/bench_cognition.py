"""The cognitive engine's tools at scale, through the real MCP SDK client in-process (`mcp.Client(build_server(app),
mode="legacy")`), plus the pulse in-process: latency at growing store sizes against the SPEC budgets.

One data directory grows through the sizes given (default 1,000 and 10,000), filled as bench_memory_ops.py
fills it (its `Filler`: the first --distinct memories are distinct stdlib texts fingerprinted by the real
pipeline, the rest reuse a distinct memory's fingerprint with noise; see that script's docstring and
_workload.fill_store). At each size, in order, each tool warmed up with --warmup calls first, then --ops timed
calls (wall time around `client.call_tool`, MCP round trip and payload included). After each fill, os.sync()
writes the fill's dirty pages back first, so the timed calls' synced commits do not wait on them:

  inject_context          related_k 5, a new realistic text each call (stores a memory; computes the full UTL:
                          13 per-space neighbourhoods, ΔS/ΔC, Johari; then the related retrieval and the
                          workspace competition). The payload's `utl.compute_ms` is summarised next to the wall
                          time: how much of the call is the UTL computation.
  pulse                   `app.services.cognition.pulse()` in-process, µs: (a) right after each inject_context call
                          above
                          (the middleware's own pulse has just advanced the network: ~0 lazy steps), (b) back to
                          back, 1000 calls, (c) after --idle-s of idle (≥ 0.2 s: the network integrates its cap of
                          `pulse_max_steps` = 20 steps of dt 0.01 s), --idle-samples calls
  compute_delta_sc        on random stored vertex ids, the two variants alternating call by call: (a) `new_content`
                          (a realistic text, embedded inside the
                          call: embed + 2 × ΔS/ΔC), (b) `new_fingerprint` = the vertex's own stored fingerprint
                          as JSON (`vertex_update.fingerprint_to_json(store.fingerprints([seq])[0])`, unperturbed;
                          prepared before the timing): the computation without the embedding, but with the JSON
                          fingerprint's transfer and parsing. Then --diag-ops calls of (b) with
                          include_diagnostics for the split (neighbours / spaces) of each of the 2 computations.
  status tools            utl_status, get_memetic_status, get_consciousness_state, get_kuramoto_sync,
                          get_workspace_status, get_ego_state, get_johari_classification (random memory ids),
                          epistemic_action (force true), trigger_workspace_broadcast (random ids, force true,
                          after one search_graph so a context exists), adjust_coupling (new_K uniform in [0, 10];
                          K is set back to the constitution's default afterwards)

Budgets (SPEC): pulse < 1 ms; compute_delta_sc p95 < 25 ms; every status tool p95 < 25 ms; inject_context p95
< 40 ms. Each result has n, median (p50), p95, p99, mean, min, max, the budget and whether the p95 meets it.

Options: --profile-inject N adds, after each size, N in-process MemoryService.inject calls (related_k 5) with
timers around the parts (embed, UTL, edges, put, index insert, related retrieval, workspace, engine save).
--blas-threads N sets numpy's OpenBLAS threads (on 2 busy cores a 2-thread BLAS call can stall).

Run:  .venv/bin/python benchmarks/bench_cognition.py [--sizes 1000,10000] [--ops 200] [--distinct 4000]
      .venv/bin/python benchmarks/bench_cognition.py --home DIR --keep-store ...   # reuse a filled store later
"""

from __future__ import annotations

import argparse
import gc
import itertools
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import anyio
from _stats import format_summary, summarize, time_method, write_result
from _workload import bench_settings, blas_threads, function_pairs, realistic_texts
from bench_memory_ops import Filler

perf = time.perf_counter
MACHINE = "2-core x86_64 Linux VM, no GPU"
BUDGET_STATUS_MS = 25.0
BUDGET_DELTA_SC_MS = 25.0
BUDGET_INJECT_MS = 40.0
BUDGET_PULSE_US = 1000.0
STATUS_TOOLS = ("utl_status", "get_memetic_status", "get_consciousness_state", "get_kuramoto_sync",
                "get_workspace_status", "get_ego_state", "get_johari_classification", "epistemic_action",
                "trigger_workspace_broadcast", "adjust_coupling")


def stats(values: list[float], budget: float | None) -> dict[str, Any]:
    s = summarize(values)
    s["mean"] = statistics.fmean(values) if values else float("nan")
    s["budget_p95"] = budget
    s["budget_met"] = None if budget is None else bool(s["p95"] < budget)
    return s


async def measure_size(app: Any, client: Any, texts: Any, queries: Any, args: argparse.Namespace,
                       rng: random.Random) -> dict[str, Any]:
    from contextgraph.services.feedback.vertex_update import fingerprint_to_json

    out: dict[str, Any] = {"loadavg_before": os.getloadavg()}
    store = app.services.storage.store
    cognition = app.services.cognition
    rationale = "benchmark: a realistic memory injected through the MCP client"

    async def timed(name: str, arguments: dict) -> tuple[float, Any]:
        t0 = perf()
        result = await client.call_tool(name, arguments)
        ms = (perf() - t0) * 1e3
        if result.is_error:
            raise AssertionError(f"{name} failed: {result.content}")
        return ms, result

    def random_seqs(n: int) -> list[tuple[int, str]]:
        last = store.last_seq()
        got: list[tuple[int, str]] = []
        while len(got) < n:
            seqs = [rng.randint(1, last) for _ in range(n - len(got))]
            got += [(r.seq, r.id) for r in store.get_by_seq(seqs) if r is not None]
        return got

    def show(label: str, s: dict[str, Any], unit: str = "ms") -> None:
        print("   " + format_summary(label, s, unit, s.get("budget_p95"), p99=True) + f"  mean {s['mean']:.3g}")

    # -- inject_context, with the pulse right after each call -------------------------------------------------
    for _ in range(args.warmup):
        text, modality = next(texts)
        await timed("inject_context", {"content": text, "rationale": rationale, "modality": modality,
                                       "related_k": 5})
    gc.collect()
    wall, utl_ms, share, pulse_after, inner = [], [], [], [], []
    for _ in range(args.ops):
        text, modality = next(texts)
        ms, result = await timed("inject_context", {"content": text, "rationale": rationale, "modality": modality,
                                                    "related_k": 5})
        t0 = perf()
        cognition.pulse()
        pulse_after.append((perf() - t0) * 1e6)
        wall.append(ms)
        inner.append(result.structured_content.get("timings_ms", {}))
        c = result.structured_content["utl"]["compute_ms"]
        utl_ms.append(c)
        share.append(c / ms)
    out["inject_context"] = stats(wall, BUDGET_INJECT_MS)
    out["inject_context"]["utl_compute_ms"] = stats(utl_ms, None)
    out["inject_context"]["utl_share_of_call"] = summarize(share)
    out["inject_context"]["server_timings_ms"] = {k: summarize([t[k] for t in inner if k in t])
                                                  for k in ("embed", "commit")}
    show("inject_context (related_k 5)", out["inject_context"])
    u = out["inject_context"]["utl_compute_ms"]
    print(f"      utl.compute_ms median {u['median']:.2f} p95 {u['p95']:.2f} p99 {u['p99']:.2f} ms; share of the "
          f"call median {summarize(share)['median']:.0%}")
    st = out["inject_context"]["server_timings_ms"]
    print(f"      server timings: embed median {st['embed']['median']:.1f} ms (p95 {st['embed']['p95']:.1f}), "
          f"commit (synced put + index insert) median {st['commit']['median']:.1f} ms (p95 {st['commit']['p95']:.1f})")

    # -- the pulse -------------------------------------------------------------------------------------------
    pulse: dict[str, Any] = {"after_operation_us": stats(pulse_after, BUDGET_PULSE_US)}
    for _ in range(100):
        cognition.pulse()
    b2b = []
    for _ in range(1000):
        t0 = perf()
        cognition.pulse()
        b2b.append((perf() - t0) * 1e6)
    pulse["back_to_back_us"] = stats(b2b, BUDGET_PULSE_US)
    idle = []
    for _ in range(args.idle_samples):
        await anyio.sleep(args.idle_s)
        t0 = perf()
        cognition.pulse()
        idle.append((perf() - t0) * 1e6)
    pulse["after_idle_us"] = stats(idle, BUDGET_PULSE_US)
    pulse["idle_s"] = args.idle_s
    out["pulse"] = pulse
    show("pulse(), right after inject_context", pulse["after_operation_us"], "µs")
    show("pulse(), back to back", pulse["back_to_back_us"], "µs")
    show(f"pulse(), after {args.idle_s:g} s idle (20 lazy steps)", pulse["after_idle_us"], "µs")

    # -- compute_delta_sc: the two variants alternate call by call, so load drift hits both alike -------------
    import json

    picks = random_seqs(2 * (args.ops + args.warmup) + args.diag_ops)
    fps = store.fingerprints([s for s, _ in picks])
    prepared = [(vid, fingerprint_to_json(fp)) for (_, vid), fp in zip(picks, fps)]
    json_bytes = [len(json.dumps(fp)) for _, fp in prepared[:20]]
    by_content, by_fp = [], []
    for i in range(args.warmup + args.ops):
        vid_c = prepared[2 * i][0]
        vid_f, fp = prepared[2 * i + 1]
        text, _m = next(texts)
        if i == args.warmup:
            gc.collect()
        ms_c = (await timed("compute_delta_sc", {"vertex_id": vid_c, "new_content": text}))[0]
        ms_f = (await timed("compute_delta_sc", {"vertex_id": vid_f, "new_fingerprint": fp}))[0]
        if i >= args.warmup:
            by_content.append(ms_c)
            by_fp.append(ms_f)
    out["compute_delta_sc_new_content"] = stats(by_content, BUDGET_DELTA_SC_MS)
    out["compute_delta_sc_new_fingerprint"] = stats(by_fp, BUDGET_DELTA_SC_MS)
    out["compute_delta_sc_new_fingerprint"]["fingerprint_json_bytes_median"] = statistics.median(json_bytes)
    show("compute_delta_sc, new_content (embeds)", out["compute_delta_sc_new_content"])
    show("compute_delta_sc, new_fingerprint (JSON)", out["compute_delta_sc_new_fingerprint"])
    prepared = prepared[2 * (args.warmup + args.ops):]
    parts: dict[str, list[float]] = {}
    for vid, fp in prepared:
        ms, result = await timed("compute_delta_sc", {"vertex_id": vid, "new_fingerprint": fp,
                                                      "include_diagnostics": True})
        t = result.structured_content["diagnostics"]["timings_ms"]
        parts.setdefault("call_wall", []).append(ms)
        parts.setdefault("handler_total", []).append(t["total"])
        for which in ("new", "old"):
            for k, v in t[which].items():
                parts.setdefault(f"{which}.{k}", []).append(v)
    out["compute_delta_sc_diagnostics_ms"] = {k: summarize(v) for k, v in parts.items()}
    if parts:
        print(f"      with include_diagnostics (n={len(parts['call_wall'])}), medians ms: " + ", ".join(
            f"{k} {statistics.median(v):.2f}" for k, v in parts.items()))
        print(f"      fingerprint JSON ~{statistics.median(json_bytes) / 1024:.0f} KiB per call")

    # -- status tools ----------------------------------------------------------------------------------------
    await timed("search_graph", {"query": next(queries), "top_k": 10})  # a context for the broadcast
    for tool in STATUS_TOOLS:
        def arguments() -> dict[str, Any]:
            if tool in ("get_johari_classification", "trigger_workspace_broadcast"):
                a: dict[str, Any] = {"memory_id": random_seqs(1)[0][1]}
                if tool == "trigger_workspace_broadcast":
                    a["force"] = True
                return a
            if tool == "epistemic_action":
                return {"force": True}
            if tool == "adjust_coupling":
                return {"new_K": round(rng.uniform(0.0, 10.0), 4)}
            return {}

        for _ in range(args.warmup):
            await timed(tool, arguments())
        gc.collect()
        calls = [arguments() for _ in range(args.ops)]
        samples = [(await timed(tool, a))[0] for a in calls]
        out[tool] = stats(samples, BUDGET_STATUS_MS)
        show(tool, out[tool])
    default_k = float(app.constitution["gwt"]["kuramoto"]["coupling"]["default"])
    await timed("adjust_coupling", {"new_K": default_k})
    out["loadavg_after"] = os.getloadavg()
    return out


async def profile_inject(app: Any, texts: Any, n: int) -> dict[str, Any]:
    """In-process `MemoryService.inject` (related_k 5, no MCP), n calls after 5 unmeasured ones, with timers
    wrapped around the parts it calls (in whichever thread they run; removed afterwards). Adds n + 5 memories."""
    from contextgraph.embedders.pipeline import FingerprintPipeline as Pipeline
    from contextgraph.services.engine.delta_sc import DeltaScComputer
    from contextgraph.services.engine.workspace import WorkspaceService
    from contextgraph.services.memory.memory import MemoryService, NewMemory
    from contextgraph.services.memory.memory import search as search_mod
    from contextgraph.storage.indexes import IndexSet
    from contextgraph.storage.lmdb_store import LmdbStore

    acc: dict[str, list[float]] = {}
    restores: list[Callable[[], None]] = []

    def wrap(owner: Any, name: str, label: str) -> None:
        if hasattr(owner, name):
            restores.append(time_method(owner, name, label, acc))

    wrap(Pipeline, "embed_with_triples", "embed (pipeline.embed_with_triples)")
    wrap(MemoryService, "_novelty", "UTL (_novelty: 13 neighbourhoods, ΔS/ΔC)")
    wrap(DeltaScComputer, "compute", "  of which DeltaScComputer.compute")
    wrap(DeltaScComputer, "model", "  of which DeltaScComputer.model (store model; refits in the background)")
    wrap(MemoryService, "_similar", "semantic edges (_similar)")
    wrap(MemoryService, "_causal", "causal edges (_causal)")
    wrap(LmdbStore, "put", "store.put (synced, writer thread)")
    wrap(IndexSet, "apply", "indexes.apply (worker thread)")
    wrap(search_mod.Retriever, "run", "related retrieval (Retriever.run)")
    wrap(WorkspaceService, "observe", "workspace competition (observe)")
    wrap(MemoryService, "save_engine", "save_engine (engine state to LMDB)")
    total: list[float] = []
    rationale = "benchmark: inject breakdown"
    try:
        for i in range(n + 5):
            text, modality = next(texts)
            t0 = perf()
            await app.services.memory.inject(NewMemory(text, rationale, modality=modality), related_k=5)
            if i >= 5:
                total.append((perf() - t0) * 1e3)
            else:
                acc.clear()
    finally:
        for restore in reversed(restores):
            restore()
    out = {"inject_ms": summarize(total), "parts_ms": {k: summarize(v) | {"sum_per_inject": sum(v) / max(n, 1)}
                                                       for k, v in acc.items()}}
    print("   " + format_summary("inject (in-process, no MCP)", out["inject_ms"], "ms", p99=True))
    for k, v in out["parts_ms"].items():
        print(f"      {k:<44} median {v['median']:7.2f} ms  p95 {v['p95']:7.2f}  per inject {v['sum_per_inject']:7.2f}"
              f"  (n={v['n']})")
    return out


async def run(args: argparse.Namespace, sizes: list[int]) -> dict[str, Any]:
    from mcp import Client

    from contextgraph.app import build_app
    from contextgraph.server import build_server

    home = Path(args.home) if args.home else Path(tempfile.mkdtemp(prefix="cg-bench-cognition-"))
    results: dict[str, Any] = {"home": str(home), "sizes": {}}
    app = build_app(bench_settings(home, int8=not args.fp32))
    t0 = perf()
    app.services.storage.open()
    print(f"opened the store in {perf() - t0:.2f} s ({app.services.storage.store.count():,} memories); "
          f"machine: {MACHINE} (os.cpu_count() = {os.cpu_count()})")
    pipeline = await app.services.perception.pipeline()
    queries = [p.query for p in function_pairs()]
    random.Random(args.seed).shuffle(queries)
    query_iter = itertools.cycle(queries)
    filler = Filler(app, pipeline, args.distinct, horizon=max(sizes), seed=args.seed)
    texts = itertools.islice(realistic_texts(args.seed + 1), 40_000, None)
    rng = random.Random(args.seed)
    async with Client(build_server(app), mode="legacy") as client:
        for size in sizes:
            print(f"== {size:,} memories")
            before = app.services.storage.store.count()
            t0 = perf()
            filler.grow_to(size)
            fill_s = perf() - t0
            t0 = perf()
            os.sync()  # the fill's dirty pages are written back now, not during the timed calls' synced commits
            sync_s = perf() - t0
            rep = filler.report
            print(f"   filled {app.services.storage.store.count() - before:,} in {fill_s:.0f} s ({rep['distinct']:,} "
                  f"distinct, {rep['reused']:,} reused so far); os.sync() {sync_s:.1f} s")
            count = app.services.storage.store.count()
            ops = await measure_size(app, client, texts, query_iter, args, rng)
            results["sizes"][str(size)] = {"count_at_measure": count, "fill_s": round(fill_s, 1),
                                           "sync_s": round(sync_s, 2), "fill_totals_so_far": dict(rep), **ops}
            if args.profile_inject:
                print("   -- inject profile (in-process, no MCP)")
                results["sizes"][str(size)]["inject_profile"] = await profile_inject(app, texts, args.profile_inject)
    app.close()
    if not args.home and not args.keep:
        shutil.rmtree(home, ignore_errors=True)
    return results


def print_table(results: dict[str, Any]) -> None:
    rows = ["inject_context", "compute_delta_sc_new_content", "compute_delta_sc_new_fingerprint", *STATUS_TOOLS]
    sizes = list(results["sizes"])
    print(f"\nSummary ({MACHINE}); ms, p50 / p95 / p99 (budget on p95)")
    print(f"{'tool':<36}" + "".join(f"{s + ' memories':>32}" for s in sizes) + "   budget")
    for row in rows:
        cells, budget = [], None
        for s in sizes:
            r = results["sizes"][s][row]
            budget = r["budget_p95"]
            cells.append(f"{r['median']:.2f} / {r['p95']:.2f} / {r['p99']:.2f} {'ok' if r['budget_met'] else 'OVER'}")
        print(f"{row:<36}" + "".join(f"{c:>32}" for c in cells) + f"   < {budget:g}")
    for key in ("after_operation_us", "back_to_back_us", "after_idle_us"):
        cells = []
        for s in sizes:
            r = results["sizes"][s]["pulse"][key]
            verdict = "ok" if r["budget_met"] else "OVER"
            cells.append(f"{r['median']:.1f} / {r['p95']:.1f} / {r['p99']:.1f} µs {verdict}")
        print(f"{'pulse ' + key[:-3]:<36}" + "".join(f"{c:>32}" for c in cells) + "   < 1000 µs")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000", help="comma-separated store sizes, ascending")
    ap.add_argument("--ops", type=int, default=200, help="timed calls per tool per size")
    ap.add_argument("--warmup", type=int, default=5, help="untimed calls per tool first")
    ap.add_argument("--diag-ops", type=int, default=20, help="compute_delta_sc calls with include_diagnostics")
    ap.add_argument("--idle-s", type=float, default=1.0, help="idle before each idle-pulse sample")
    ap.add_argument("--idle-samples", type=int, default=30, help="idle-pulse samples per size")
    ap.add_argument("--distinct", type=int, default=4000, help="distinct texts embedded while filling (the rest "
                                                               "reuse their fingerprints, as bench_memory_ops)")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--fp32", action="store_true",
                    help="serve the fp32 graph (CONTEXTGRAPH_INT8=0; the default was fp32 before 2026-11-27)")
    ap.add_argument("--profile-inject", type=int, default=0, metavar="N",
                    help="after each size, N in-process injects with timers around their parts (adds N + 5 memories)")
    ap.add_argument("--blas-threads", type=int, default=None,
                    help="set numpy's OpenBLAS thread count (default: numpy's default, one per core)")
    ap.add_argument("--home", default=None, help="data directory to use (kept; a filled store is reused)")
    ap.add_argument("--keep", action="store_true", help="keep the temp data directory")
    ap.add_argument("--quick", action="store_true", help="sizes 300, 30 ops, 3 warm-up calls (smoke run)")
    ap.add_argument("--name", default="cognition", help="result file name (benchmarks/results/<name>.json)")
    args = ap.parse_args()
    if args.quick:
        args.sizes, args.ops, args.warmup, args.diag_ops, args.idle_samples = "300", 30, 3, 5, 5
    sizes = sorted(int(s) for s in args.sizes.split(","))
    if args.blas_threads is not None:
        blas_threads(args.blas_threads)
    started = perf()
    results = anyio.run(run, args, sizes)
    results.update({
        "settings": {"ops": args.ops, "warmup": args.warmup, "diag_ops": args.diag_ops, "idle_s": args.idle_s,
                     "idle_samples": args.idle_samples, "distinct": args.distinct, "int8": not args.fp32,
                     "openblas_threads": blas_threads(), "CONTEXTGRAPH_LOG_LEVEL": "error"},
        "machine_note": MACHINE,
        "budgets": {"pulse_us": BUDGET_PULSE_US, "compute_delta_sc_p95_ms": BUDGET_DELTA_SC_MS,
                    "status_tools_p95_ms": BUDGET_STATUS_MS, "inject_context_p95_ms": BUDGET_INJECT_MS},
        "wall_s": round(perf() - started, 1),
    })
    print_table(results)
    write_result(args.name, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
