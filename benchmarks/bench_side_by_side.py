"""Two versions of the server side by side through MCP over stdio (issue 36's comparison): today's source tree
against an older one (a `git worktree add --detach DIR COMMIT` checkout), alternated, on the same machine.

Each run spawns `python -m contextgraph serve` (stdio) with PYTHONPATH on one version's src/ and a fresh data
directory, and speaks raw JSON-RPC lines to it, as a host does:
  cold start   spawn → `initialize` answered → `tools/list` answered (ms)
  store        --memories store_memory calls, one after another: documents of the held-out (test) half of the
               code corpus (benchmarks/_corpora.py: stdlib functions); the first waits for the model, so the
               median is what is compared
  search       --queries search_graph calls (top_k 10) for queries of those documents; hit@10 says whether the
               query's own document came back (a sanity check that both versions retrieve)
Versions alternate run by run (new, old, old, new, ...), so the machine's drift hits both alike. One warm-up
spawn per version first (model export or page cache). The machine is shared: the load average is recorded.

Run:  .venv/bin/python benchmarks/bench_side_by_side.py --old /tmp/wt_f6d/src [--rounds 2] [--memories 300]
          [--queries 100] [--old-env KEY=VALUE ...] [--name side_by_side]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _corpora import code_corpus, halves
from _stats import write_result
from _workload import DEFAULT_MODEL_CACHE

NEW = Path(__file__).resolve().parent.parent / "src"
INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "side-by-side", "version": "1"}}
RATIONALE = "held-out code stored for the side-by-side benchmark"
perf = time.perf_counter


class Served:
    def __init__(self, src: Path, home: Path, extra_env: dict[str, str] | None = None) -> None:
        env = {**os.environ, **(extra_env or {}), "PYTHONPATH": str(src), "CONTEXTGRAPH_HOME": str(home),
               "HF_HUB_OFFLINE": "1",
               "CONTEXTGRAPH_LOG_LEVEL": "error", "CONTEXTGRAPH_AUTO_DREAM": "0",
               "CONTEXTGRAPH_MODEL_CACHE": os.environ.get("CONTEXTGRAPH_MODEL_CACHE") or str(DEFAULT_MODEL_CACHE)}
        self.started = perf()
        self.proc = subprocess.Popen([sys.executable, "-m", "contextgraph", "serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=home)
        self.next_id = 0

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.next_id += 1
        self.proc.stdin.write((json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                                           "params": params}) + "\n").encode())
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("the server closed stdout")
            message = json.loads(line)
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]

    def notify(self, method: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps({"jsonrpc": "2.0", "method": method}) + "\n").encode())
        self.proc.stdin.flush()

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = self.request("tools/call", {"name": name, "arguments": arguments})
        if result.get("isError"):
            raise RuntimeError(f"{name}: {result['content'][0]['text'][:300]}")
        return json.loads(result["content"][0]["text"])

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def one_run(src: Path, documents: list[str], queries: list[tuple[str, int]], workdir: Path, tag: str,
            extra_env: dict[str, str] | None = None) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix=f"{tag}-", dir=workdir))
    served = Served(src, home, extra_env)
    try:
        served.request("initialize", INIT)
        initialized_ms = (perf() - served.started) * 1000
        served.notify("notifications/initialized")
        served.request("tools/list", {})
        cold_ms = (perf() - served.started) * 1000
        ids, store_ms = [], []
        for text in documents:
            t = perf()
            ids.append(served.call("store_memory", {"content": text, "rationale": RATIONALE})["id"])
            store_ms.append((perf() - t) * 1000)
        search_ms, hits = [], 0
        for query, index in queries:
            t = perf()
            found = served.call("search_graph", {"query": query, "top_k": 10})
            search_ms.append((perf() - t) * 1000)
            hits += ids[index] in {r["id"] for r in found["results"]}
    finally:
        served.close()
    return {"cold_start_ms": round(cold_ms, 1), "initialize_ms": round(initialized_ms, 1),
            "store_p50_ms": round(statistics.median(store_ms), 1),
            "store_p95_ms": round(sorted(store_ms)[int(0.95 * (len(store_ms) - 1))], 1),
            "first_store_ms": round(store_ms[0], 1),
            "search_p50_ms": round(statistics.median(search_ms), 1),
            "search_p95_ms": round(sorted(search_ms)[int(0.95 * (len(search_ms) - 1))], 1),
            "hit_at_10": round(hits / len(queries), 3), "loadavg": os.getloadavg()[0]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", required=True, help="the older version's src/ directory")
    ap.add_argument("--new", default=str(NEW), help="the newer version's src/ (default: this tree's)")
    ap.add_argument("--old-env", action="append", default=[], metavar="KEY=VALUE",
                    help="an environment variable for the old version's servers only (repeatable): with --old "
                         "this tree's src/, an A/B of one setting, e.g. CONTEXTGRAPH_CONSTITUTION=<a copy>")
    ap.add_argument("--memories", type=int, default=300)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=2, help="runs per version, alternated")
    ap.add_argument("--name", default="side_by_side")
    args = ap.parse_args()
    data = code_corpus()
    test = halves(len(data.items))["test"][: args.memories]
    documents = [data.items[i].document for i in test]
    queries = [(data.items[i].query, k) for k, i in enumerate(test[: args.queries])]
    versions = {"new": Path(args.new), "old": Path(args.old)}
    envs = {"new": {}, "old": dict(item.split("=", 1) for item in args.old_env)}
    workdir = Path(tempfile.mkdtemp(prefix="cg-side-by-side-"))
    load_before = list(os.getloadavg())
    for name, src in versions.items():  # warm-up: the model's export or page cache, once per version
        one_run(src, documents[:3], queries[:1], workdir, f"warm-{name}", envs[name])
    order = [("new", "old") if r % 2 == 0 else ("old", "new") for r in range(args.rounds)]
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in versions}
    for r, pair in enumerate(order):
        for name in pair:
            result = one_run(versions[name], documents, queries, workdir, f"{name}-{r}", envs[name])
            runs[name].append(result)
            print(f"  {name} round {r}: {json.dumps(result)}", flush=True)
    summary = {name: {key: round(statistics.median(run[key] for run in rs), 1)
                      for key in ("cold_start_ms", "store_p50_ms", "search_p50_ms", "hit_at_10")}
               for name, rs in runs.items()}
    summary["new_over_old"] = {key: round(summary["new"][key] / summary["old"][key], 2)
                               for key in ("cold_start_ms", "store_p50_ms", "search_p50_ms")}
    print(json.dumps(summary, indent=2))
    write_result(args.name, {"summary": summary, "runs": runs, "settings": {
        "memories": args.memories, "queries": args.queries, "rounds": args.rounds, "old": args.old,
        "old_env": envs["old"],
        "new": args.new, "loadavg_before": load_before, "loadavg_after": list(os.getloadavg())}})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
