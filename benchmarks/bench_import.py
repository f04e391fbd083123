"""Bulk import against the same memories stored one by one through MCP (issue 19.6).

The same N realistic memories (stdlib docstring paragraphs and function sources, `_workload.realistic_texts`)
go into fresh data directories two ways, in the same process, each on an App built the way the server builds
one (the ONNX graph from the model cache, BLAS held to the constitution's thread count):

  mcp       an in-process MCP SDK client session calls store_memory once per memory (the protocol, the
            dispatcher with its validation and pulse, the service: one forward pass and one commit each)
  import    `shell.bulk.import_file` on a JSON Lines file of the same memories (validation per line, one
            forward pass, one UTL/edge scoring pass and one transaction per batch)

The two alternate for --rounds rounds (mcp, import, import, mcp, ...), each on its own fresh directory, so that
drift in the machine's load hits both alike; the report gives memories/s per round, the medians, and the ratio
import/mcp of the medians. With --batch-sizes several import batch sizes are measured in every round.

The machine is shared (other engineers' tests and benchmarks run on the same 2 cores): absolute times are noisy;
the ratio within a round is the steadier number.

Run:  .venv/bin/python benchmarks/bench_import.py [--n 300] [--rounds 2] [--batch-sizes 32]
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _stats import write_result
from _workload import bench_settings, realistic_texts

RATIONALE = "benchmark corpus: a stdlib docstring or function"


async def store_through_mcp(app: Any, items: list[tuple[str, str]]) -> float:
    from mcp import Client

    from contextgraph.server import build_server

    async with Client(build_server(app), mode="legacy") as client:
        await client.call_tool("get_graph_manifest", {})  # the session is up before the clock starts
        await app.services.perception.pipeline()  # and the model loaded (import_file waits for it the same way)
        started = time.perf_counter()
        for text, modality in items:
            result = await client.call_tool("store_memory", {"content": text, "rationale": RATIONALE,
                                                             "modality": modality})
            if result.is_error:
                raise RuntimeError(f"store_memory failed: {result.content}")
        return time.perf_counter() - started


async def import_lines(app: Any, path: Path, batch_size: int) -> float:
    from contextgraph.shell.bulk import import_file

    await app.services.storage.ready()
    await app.services.perception.pipeline()
    started = time.perf_counter()
    report = await import_file(app, path, batch_size=batch_size)
    elapsed = time.perf_counter() - started
    if report.refused:
        raise RuntimeError(f"lines refused: {report.refused[:3]}")
    return elapsed


def one_run(kind: str, items: list[tuple[str, str]], corpus: Path, batch_size: int) -> dict[str, Any]:
    import anyio

    from contextgraph.app import build_app

    home = Path(tempfile.mkdtemp(prefix=f"cg-bench-import-{kind}-"))
    app = build_app(bench_settings(home))
    try:
        if kind == "mcp":
            seconds = anyio.run(store_through_mcp, app, items)
        else:
            seconds = anyio.run(import_lines, app, corpus, batch_size)
        count = app.services.storage.store.count()
        edges = app.services.storage.store.graph_read(lambda g: g.edge_count())
    finally:
        app.close()
        shutil.rmtree(home, ignore_errors=True)
    if count != len(items):
        raise RuntimeError(f"{kind}: {count} memories stored, expected {len(items)}")
    return {"kind": kind, "batch_size": batch_size if kind == "import" else 1, "seconds": round(seconds, 3),
            "memories_per_second": round(len(items) / seconds, 2),
            "ms_per_memory": round(1e3 * seconds / len(items), 2), "edges": edges}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=300, help="memories per run (default 300)")
    ap.add_argument("--rounds", type=int, default=2, help="alternating rounds (default 2)")
    ap.add_argument("--batch-sizes", default="32", help="comma-separated import batch sizes (default 32)")
    ap.add_argument("--name", default="import", help="result file name (benchmarks/results/<name>.json)")
    args = ap.parse_args()
    batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
    items = list(itertools.islice(realistic_texts(), 2000, 2000 + args.n))
    workdir = Path(tempfile.mkdtemp(prefix="cg-bench-import-corpus-"))
    corpus = workdir / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"content": t, "rationale": RATIONALE, "modality": m}) + "\n"
                              for t, m in items), encoding="utf-8")
    print(f"{len(items)} memories, {sum(len(t) for t, _ in items) / len(items):.0f} characters on average; "
          f"rounds: {args.rounds}; import batch sizes: {batch_sizes}")
    runs: list[dict[str, Any]] = []
    for round_ in range(args.rounds):
        order = [("mcp", 1)] + [("import", b) for b in batch_sizes]
        if round_ % 2:
            order.reverse()
        for kind, batch in order:
            r = one_run(kind, items, corpus, batch)
            r["round"] = round_ + 1
            runs.append(r)
            print(f"  round {round_ + 1} {kind:<6} batch {r['batch_size']:>3}: {r['seconds']:8.2f} s  "
                  f"{r['memories_per_second']:7.2f} memories/s  {r['ms_per_memory']:7.2f} ms/memory  "
                  f"{r['edges']} edges", flush=True)
    shutil.rmtree(workdir, ignore_errors=True)
    summary: dict[str, Any] = {}
    mcp = statistics.median(r["seconds"] for r in runs if r["kind"] == "mcp")
    for batch in batch_sizes:
        imp = statistics.median(r["seconds"] for r in runs if r["kind"] == "import" and r["batch_size"] == batch)
        per_round = [next(r for r in runs if r["round"] == k and r["kind"] == "import" and r["batch_size"] == batch)
                     ["seconds"] / next(r for r in runs if r["round"] == k and r["kind"] == "mcp")["seconds"]
                     for k in range(1, args.rounds + 1)]
        summary[f"batch_{batch}"] = {"import_s_median": imp, "mcp_s_median": mcp, "import_over_mcp": imp / mcp,
                                     "speedup": mcp / imp, "per_round_import_over_mcp": per_round}
        print(f"batch {batch}: import {imp:.2f} s vs MCP one by one {mcp:.2f} s (medians): {mcp / imp:.2f}x as "
              f"fast; per round import/mcp = {', '.join(f'{x:.2f}' for x in per_round)}")
    write_result(args.name, {"n": len(items), "rounds": args.rounds, "runs": runs, "summary": summary})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
