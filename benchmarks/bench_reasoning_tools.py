"""Latency of issue 18's ten tools through the real MCP SDK client in-process, on a store of --size memories.

The store is filled with realistic stdlib texts (docstring paragraphs and function sources, _workload.fill_store:
embedded by the real pipeline, put and indexed in batches), then a causal chain is stored through store_memory
as text only (A leads to B, B leads to C, a denial and a cycle-closing memory), so omni_infer has edges and E5
links to follow. Each case: --warmup calls, then --ops timed calls (wall time around client.call_tool, MCP round
trip and payload included). Budgets (SPEC §11): status/query tools p95 < 25 ms, navigation < 50 ms; the causal
and diagnostic tools that embed a query or walk a neighbourhood are compared with the navigation budget.

Timings are wall clock on a 2-core machine shared with other engineers' test runs: noisy, read them as such.

Run:  .venv/bin/python benchmarks/bench_reasoning_tools.py [--size 2000] [--ops 30] [--home DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _stats import format_summary, summarize, write_result
from _workload import bench_settings, fill_store, realistic_texts
from mcp import Client

from contextgraph.app import build_app
from contextgraph.server import build_server

WHY = "benchmark: a causal chain for omni_infer"
CHAIN = ["Heavy rain leads to flooded streets in the old town.",
         "Flooded streets lead to traffic jams on the ring road.",
         "Traffic jams on the ring road cause late deliveries to the bakery.",
         "Flooded streets do not cause power outages in the old town."]


async def run(size: int, ops: int, warmup: int, home: Path | None) -> dict:
    home = home or Path(tempfile.mkdtemp(prefix="bench-reasoning-"))
    app = build_app(bench_settings(home))
    pipeline = await app.services.perception.pipeline()
    app.services.storage.open()
    have = app.services.storage.store.count()
    if have < size:  # --home keeps a filled store for the next run
        started = time.perf_counter()
        items = list(itertools.islice(realistic_texts(), size))[have:]
        report = fill_store(app.services.storage, pipeline, items, start_time=time.time() - size * 60)
        print(f"filled {report.memories} memories in {time.perf_counter() - started:.0f} s ({home})")
    results: dict = {"size": size, "ops": ops}
    async with Client(build_server(app), mode="legacy") as client:
        async def call(name, args):
            out = await client.call_tool(name, args)
            assert not out.is_error, (name, out.structured_content)
            return out.structured_content

        ids = [(await call("store_memory", {"content": t, "rationale": WHY}))["id"] for t in CHAIN]
        a, _b, c, _denial = ids
        recall_ids = [ids[1], ids[2]]
        cases = {
            "omni_infer forward": ("omni_infer", {"source": a, "target": c, "direction": "forward"}, 50),
            "omni_infer backward": ("omni_infer", {"source": c, "target": a, "direction": "backward"}, 50),
            "omni_infer abduction": ("omni_infer", {"source": c, "direction": "abduction"}, 50),
            "omni_infer bridge": ("omni_infer", {"source": a, "direction": "bridge"}, 50),
            "query_causal": ("query_causal", {"query": "Why are deliveries to the bakery late?"}, 50),
            "check_adversarial injection": ("check_adversarial", {"content": CHAIN[0],
                                                                  "checks": ["prompt_injection"]}, 25),
            "check_adversarial all four": ("check_adversarial", {"content": CHAIN[0], "checks": [
                "prompt_injection", "embedding_outlier", "content_misalign", "circular_logic"]}, 50),
            "homeostatic_status": ("homeostatic_status", {}, 25),
            "test_recall_accuracy": ("test_recall_accuracy", {"query": "traffic jams on the ring road",
                                                              "expected_node_ids": recall_ids, "top_k": 10}, 50),
            "debug_compare_retrieval": ("debug_compare_retrieval", {"query": "why are deliveries late",
                                                                    "spaces": ["E1", "E5", "E7", "E13"]}, 50),
            "reflect_on_memory": ("reflect_on_memory", {"goal": "find out why the bakery deliveries are late"}, 25),
            "generate_search_plan": ("generate_search_plan", {"goal": "why does parse_config fail on Windows"}, 50),
            "critique_context 10": ("critique_context", {"context_window": 10, "check_types": [
                "conflicts", "duplicates", "outdated", "low_confidence"]}, 50),
            "critique_context 50": ("critique_context", {"context_window": 50, "check_types": [
                "conflicts", "duplicates", "outdated", "low_confidence"]}, 50),
            "reload_manifest": ("reload_manifest", {}, 25),
        }
        for label, (tool, args, budget) in cases.items():
            for _ in range(warmup):
                await call(tool, args)
            times = []
            for _ in range(ops):
                t0 = time.perf_counter()
                await call(tool, args)
                times.append((time.perf_counter() - t0) * 1000)
            stats = summarize(times)
            results[label] = {**stats, "budget_ms": budget, "meets": stats["p95"] < budget}
            last = await call(tool, args)
            if "explored" in last:  # how much of the graph the causal walk read
                results[label]["explored"] = last["explored"]
                print(f"    explored: {last['explored']}")
            print(format_summary(label, stats, "ms", budget))
    app.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=2000)
    parser.add_argument("--ops", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--home", type=Path, default=None, help="data directory to fill once and reuse")
    args = parser.parse_args()
    results = asyncio.run(run(args.size, args.ops, args.warmup, args.home))
    write_result("reasoning_tools", results)
    print("(wall clock on a shared 2-core machine: noisy)")


if __name__ == "__main__":
    main()
