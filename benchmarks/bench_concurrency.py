"""Concurrent clients against one real server (issue 19, item 3): throughput and latency of search_graph (and a
mixed variant with store_memory) for 1, 2, 4, 8 clients, with the server serial (before) and concurrent (after).

What runs:
  * A store of --memories realistic memories (benchmarks/_workload: stdlib docstrings and functions) is filled
    once (fill_store: the real pipeline in batches, store.put, one catch-up per batch) into a template data
    directory, kept under /tmp between runs (--home to choose it).
  * Two servers, each a `contextgraph serve --transport tcp` subprocess on its own copy of that directory:
    "serial" with `concurrency.parallel: false` (one embedding or retrieval at a time, no batching: the server
    of before, through a copy of constitution.yaml named by CONTEXTGRAPH_CONSTITUTION) and "parallel" with the
    shipped constitution (micro-batched embedding, retrieval in parallel threads). Automatic dreams off.
  * Clients are raw newline-delimited JSON-RPC over TCP (initialize, then tools/call one after another), all on
    one asyncio loop in this process: the lightest client there is, so the server's share of the two cores is
    as large as it can be. Each of C clients makes --calls calls back to back; queries are first sentences of
    stdlib docstrings (natural language), a different one per call. Throughput = all calls / wall time of the
    round; latency per call as the client sees it (connect and initialize not included).
  * For each client count the two servers are measured back to back (serial, then parallel), --rounds times,
    so slow drift of the machine's load hits both alike. The mixed variant (--mixed) makes every 4th call of
    each client a store_memory of a new text.

The machine is shared with other engineers' builds and tests: timings are noisy; compare modes within one run.
Load averages are recorded before and after.

Run:  .venv/bin/python benchmarks/bench_concurrency.py [--memories 3000] [--calls 24] [--clients 1,2,4,8]
          [--rounds 2] [--mixed] [--name concurrency]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _stats import format_summary, summarize, write_result
from _workload import DEFAULT_MODEL_CACHE, bench_settings, fill_store, realistic_texts, sample_pairs

REPO = Path(__file__).resolve().parent.parent
# Server variants: concurrency settings replaced in a copy of constitution.yaml ("switch_ms": the interpreter's
# GIL switch interval, set before the server starts; not a constitution setting).
MODES: dict[str, dict[str, str]] = {
    "serial": {"parallel": "false"},  # the server of before: one embedding or retrieval at a time
    "parallel": {},  # as shipped
    "reads1": {"read_threads": "1"},
    "reads2": {"read_threads": "2"},
    "reads8": {"read_threads": "8"},
    "collect2": {"embed_collect_ms": "2"},
    "switch1": {"switch_ms": "1"},
    "workers2": {"workers": "2"},  # `serve --workers 2`: a front process and two worker processes
}
perf = time.perf_counter


def fill_template(home: Path, memories: int, seed: int) -> dict[str, Any]:
    """The template store: `memories` distinct realistic texts dated a minute apart, ending now."""
    marker = home / "bench-concurrency.json"
    if marker.exists() and json.loads(marker.read_text())["memories"] == memories:
        return json.loads(marker.read_text())
    shutil.rmtree(home, ignore_errors=True)
    from contextgraph.app import build_app
    from contextgraph.embedders.pipeline import build_pipeline

    settings = bench_settings(home)
    app = build_app(settings)
    try:
        pipeline = build_pipeline(settings)
        items = list(itertools.islice(realistic_texts(seed), memories))
        started = perf()
        report = fill_store(app.services.storage, pipeline, items, start_time=time.time() - memories * 60,
                            progress=lambda done, total: print(f"\r  filling {done}/{total}", end="", flush=True))
        print()
        info = {"memories": memories, "fill_s": round(perf() - started, 1), "embed_s": round(report.embed_s, 1)}
    finally:
        app.close()
    marker.write_text(json.dumps(info))
    return info


def cpu_profile(template: Path, workdir: Path, queries: list[str], n: int) -> dict[str, Any]:
    """Where a search's CPU goes, in this process on a copy of the template: the transformer forward (tokenizer and
    ONNX Runtime, which release the GIL), the 13 embedders, and retrieval + its UTL pulse (Python and small
    numpy calls, which hold it). CPU time, not wall time, so the other load on the machine changes it little.
    What concurrency can gain on 2 cores is bounded by the part that holds the GIL (module docstring)."""
    from contextgraph.app import build_app
    from contextgraph.embedders.e05_causal import query_direction
    from contextgraph.services.runtime import operation_pulse

    home = workdir / "home-profile"
    shutil.copytree(template, home)
    app = build_app(bench_settings(home))
    memory, perception, storage = app.services.memory, app.services.perception, app.services.storage
    parts: dict[str, list[float]] = {"forward": [], "embedders": [], "retrieval": [], "pulse": []}

    async def run() -> None:
        await memory.search(queries[0], top_k=10, min_similarity=0.0, modality=None, breakdown=False)
        pipeline = await perception.pipeline()
        for query in queries[1:n + 1]:
            c0 = time.process_time()
            pipeline.backbone.encode([query])
            c1 = time.process_time()
            (fingerprint,) = pipeline.embed([perception.draft(query, "text", None)])
            c2 = time.process_time()
            found = memory.retriever(pipeline).run(fingerprint, 10, causal_direction=query_direction(query),
                                                    query_text=query).found
            c3 = time.process_time()
            seqs = [f.record.seq for f in found]
            answer = {s: fp for s, fp in zip(seqs, storage.store.fingerprints(seqs)) if fp is not None}
            operation_pulse.score(storage, pipeline.embedders, fingerprint, pool=answer)
            c4 = time.process_time()
            parts["forward"].append((c1 - c0) * 1000)
            parts["embedders"].append(max(0.0, (c2 - c1) - (c1 - c0)) * 1000)  # embed minus its forward
            parts["retrieval"].append((c3 - c2) * 1000)
            parts["pulse"].append((c4 - c3) * 1000)

    try:
        asyncio.run(run())
    finally:
        app.close()
    medians = {k: round(float(summarize(v)["median"]), 2) for k, v in parts.items()}
    return {"n": n, "cpu_ms_median": medians}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`contextgraph serve --transport tcp` on a copy of the template, serial or parallel."""

    def __init__(self, mode: str, template: Path, workdir: Path, log_level: str) -> None:
        self.mode = mode
        self.home = workdir / f"home-{mode}"
        shutil.copytree(template, self.home)
        constitution = (REPO / "constitution.yaml").read_text()
        changes = dict(MODES[mode])
        switch_ms = changes.pop("switch_ms", None)
        workers = changes.pop("workers", "1")
        for key, value in changes.items():
            constitution, n = re.subn(rf"^(  {key}:) *\S+", rf"\g<1> {value}", constitution, count=1, flags=re.M)
            assert n == 1, f"constitution.yaml: concurrency.{key} not found"
        (workdir / f"constitution-{mode}.yaml").write_text(constitution)
        start = "from contextgraph.cli import main; raise SystemExit(main())"
        if switch_ms:
            start = f"import sys; sys.setswitchinterval({float(switch_ms) / 1000}); " + start
        self.port = free_port()
        env = {**os.environ, "CONTEXTGRAPH_HOME": str(self.home), "CONTEXTGRAPH_LOG_LEVEL": log_level,
               "CONTEXTGRAPH_MODEL_CACHE": os.environ.get("CONTEXTGRAPH_MODEL_CACHE") or str(DEFAULT_MODEL_CACHE),
               "CONTEXTGRAPH_CONSTITUTION": str(workdir / f"constitution-{mode}.yaml"),
               "CONTEXTGRAPH_AUTO_DREAM": "0", "HF_HUB_OFFLINE": "1"}
        self.stderr = open(workdir / f"server-{mode}.log", "wb")  # closed in stop()
        command = ["serve", "--transport", "tcp", "--port", str(self.port), "--workers", workers]
        self.proc = subprocess.Popen([sys.executable, "-c", start, *command], env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=self.stderr, cwd=REPO)

    async def wait_ready(self, limit_s: float = 120.0) -> None:
        deadline = perf() + limit_s
        while perf() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.mode} server exited with {self.proc.returncode}; see {self.stderr.name}")
            try:
                client = await Client.open(self.port)
                await client.close()
                return
            except OSError:
                await asyncio.sleep(0.2)
        raise TimeoutError(f"{self.mode} server did not listen within {limit_s} s")

    def cpu_s(self) -> float:
        """User + system CPU seconds of the server process so far (all threads), and of its worker processes
        (`--workers N`) while they live."""
        pids = [self.proc.pid]
        with contextlib.suppress(OSError):
            pids += [int(p) for p in Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text().split()]
        total = 0
        for pid in pids:
            with contextlib.suppress(OSError):
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])
        return total / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.stderr.close()


class Client:
    """Newline-delimited JSON-RPC over TCP: initialize, then one call at a time."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer, self.next_id = reader, writer, 1

    @classmethod
    async def open(cls, port: int) -> Client:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 24)
        client = cls(reader, writer)
        await client.request("initialize", {"protocolVersion": "2024-11-05", "capabilities": {},
                                            "clientInfo": {"name": "bench_concurrency", "version": "1"}})
        await client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return client

    async def send(self, message: dict[str, Any]) -> None:
        self.writer.write((json.dumps(message) + "\n").encode())
        await self.writer.drain()

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        wanted = self.next_id
        await self.send({"jsonrpc": "2.0", "id": wanted, "method": method, "params": params})
        while True:
            line = await self.reader.readline()
            if not line:
                raise ConnectionError("server closed the connection")
            message = json.loads(line)
            if message.get("id") != wanted:
                continue  # a notification (progress, list_changed, log)
            if "error" in message:
                raise RuntimeError(f"{method}: {message['error']}")
            return message["result"]

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await self.request("tools/call", {"name": name, "arguments": arguments})
        if result.get("isError"):
            raise RuntimeError(f"{name} failed: {result.get('content')}")
        return result

    async def close(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except OSError:
            pass


async def run_round(server: Server, clients: int, calls: int, queries: list[str], mixed: bool, tag: str
                    ) -> dict[str, Any]:
    """`clients` connections, each making `calls` calls back to back; latencies by tool, the wall time, and the
    server's CPU time per call (all its threads: what a call costs, whatever share of the cores it got)."""
    connections = [await Client.open(server.port) for _ in range(clients)]
    latencies: dict[str, list[float]] = {"search_graph": [], "store_memory": []}
    start = asyncio.Event()

    async def one(i: int, client: Client) -> None:
        await start.wait()
        for j in range(calls):
            query = queries[(i * calls + j) % len(queries)]
            if mixed and j % 4 == 3:
                name, args = "store_memory", {"content": f"{tag} client {i} call {j}: {query}",
                                              "rationale": "bench_concurrency mixed load"}
            else:
                name, args = "search_graph", {"query": query, "top_k": 10}
            t0 = perf()
            await client.call(name, args)
            latencies[name].append((perf() - t0) * 1000)

    tasks = [asyncio.create_task(one(i, c)) for i, c in enumerate(connections)]
    cpu0, t0 = server.cpu_s(), perf()
    start.set()
    await asyncio.gather(*tasks)
    wall, cpu = perf() - t0, server.cpu_s() - cpu0
    for c in connections:
        await c.close()
    total = clients * calls
    return {"clients": clients, "calls": total, "wall_s": round(wall, 3), "ops_per_s": round(total / wall, 2),
            "server_cpu_s": round(cpu, 3), "latency_ms": {k: summarize(v) for k, v in latencies.items() if v},
            "raw": latencies}


def merge(rounds: list[dict[str, Any]], raw: dict[str, list[float]]) -> dict[str, Any]:
    calls = sum(r["calls"] for r in rounds)
    wall = sum(r["wall_s"] for r in rounds)
    cpu = sum(r["server_cpu_s"] for r in rounds)
    return {"clients": rounds[0]["clients"], "calls": calls, "wall_s": round(wall, 3),
            "ops_per_s": round(calls / wall, 2), "ops_per_s_by_round": [r["ops_per_s"] for r in rounds],
            "server_cpu_ms_per_call": round(cpu / calls * 1000, 2),
            "server_cores_busy": round(cpu / wall, 2),  # mean cores the server used while measured
            "latency_ms": {k: summarize(v) for k, v in raw.items() if v}}


async def measure(servers: dict[str, Server], args: argparse.Namespace, queries: list[str], mixed: bool
                  ) -> dict[str, Any]:
    out: dict[str, Any] = {mode: {} for mode in servers}
    for clients in args.clients:
        kept: dict[str, list[dict[str, Any]]] = {mode: [] for mode in servers}
        raw: dict[str, dict[str, list[float]]] = {mode: {"search_graph": [], "store_memory": []} for mode in servers}
        for r in range(args.rounds):
            for mode, server in servers.items():
                result = await run_round(server, clients, args.calls, queries[r * 977 % len(queries):] + queries,
                                         mixed, f"{mode}-r{r}-c{clients}")
                kept[mode].append(result)
                for name, lat in result.pop("raw").items():
                    raw[mode][name] += lat
        for mode in servers:
            merged = merge(kept[mode], raw[mode])  # percentiles over every round's calls
            out[mode][str(clients)] = merged
            lat = merged["latency_ms"].get("search_graph")
            line = (f"  {mode:<8} {clients} client(s): {merged['ops_per_s']:7.2f} ops/s, server CPU "
                    f"{merged['server_cpu_ms_per_call']:6.1f} ms/call on {merged['server_cores_busy']:.2f} cores")
            if lat:
                line += "  " + format_summary("search_graph", lat, "ms")
            store = merged["latency_ms"].get("store_memory")
            if store:
                line += f"\n{'':>30}" + format_summary("store_memory", store, "ms")
            print(line, flush=True)
    return out


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="cg-bench-concurrency-"))
    template = Path(args.home) if args.home else Path(tempfile.gettempdir()) / f"cg-concurrency-{args.memories}"
    fill = fill_template(template, args.memories, args.seed)
    pairs, _ = sample_pairs(400, args.seed)
    queries = [p.query for p in pairs]
    results: dict[str, Any] = {"fill": fill, "workdir": str(workdir)}
    if args.profile:
        # its own event loop, on a thread: this one is running
        profile = await asyncio.to_thread(cpu_profile, template, workdir, queries, args.profile)
        results["cpu_profile"] = profile
        print(f"in-process CPU per search (median ms over {args.profile}): {profile['cpu_ms_median']}", flush=True)
    servers = {mode: Server(mode, template, workdir, args.log_level) for mode in args.modes}
    try:
        for server in servers.values():
            await server.wait_ready()
        # warm-up: the model load, the store model's first fit, the ONNX session's first shapes
        for server in servers.values():
            await run_round(server, 2, 6, queries, False, "warm")
        print(f"search_graph only ({args.calls} calls per client, {args.rounds} round(s) per mode):", flush=True)
        results["search"] = await measure(servers, args, queries, mixed=False)
        if args.mixed:
            print("mixed (every 4th call of each client a store_memory):", flush=True)
            results["mixed"] = await measure(servers, args, queries, mixed=True)
    finally:
        for server in servers.values():
            server.stop()
    return results


def summary(results: dict[str, Any]) -> dict[str, Any]:
    """The issue's figures: throughput at the most clients over one client, each mode over serial at the most
    clients, and the single client's search latency per mode."""
    out: dict[str, Any] = {}
    for variant in ("search", "mixed"):
        if variant not in results:
            continue
        by_mode = results[variant]
        counts = sorted(int(c) for c in next(iter(by_mode.values())))
        lo, hi = str(counts[0]), str(counts[-1])
        part: dict[str, Any] = {}
        for mode, by_count in by_mode.items():
            single = by_count[lo]["latency_ms"]["search_graph"]
            part[mode] = {f"ops_per_s_{lo}_client": by_count[lo]["ops_per_s"],
                          f"ops_per_s_{hi}_clients": by_count[hi]["ops_per_s"],
                          f"speedup_{hi}_clients_over_{lo}":
                              round(by_count[hi]["ops_per_s"] / by_count[lo]["ops_per_s"], 2),
                          f"search_p95_ms_{hi}_clients": round(by_count[hi]["latency_ms"]["search_graph"]["p95"], 1),
                          "single_client_search_ms": {"median": round(single["median"], 2),
                                                      "p95": round(single["p95"], 2)}}
            if "serial" in by_mode and mode != "serial":
                part[mode][f"over_serial_at_{hi}_clients"] = round(
                    by_count[hi]["ops_per_s"] / by_mode["serial"][hi]["ops_per_s"], 2)
        out[variant] = part
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--memories", type=int, default=3000)
    ap.add_argument("--calls", type=int, default=24, help="calls per client per round")
    ap.add_argument("--clients", default="1,2,4,8", type=lambda s: [int(x) for x in s.split(",")])
    ap.add_argument("--rounds", type=int, default=2, help="rounds per client count and mode (interleaved)")
    ap.add_argument("--mixed", action="store_true", help="also the mixed variant (every 4th call a store)")
    ap.add_argument("--modes", default="serial,parallel", type=lambda s: s.split(","),
                    help=f"server variants, measured in turn per client count (of: {', '.join(MODES)})")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="first, N searches in-process with their CPU time split by part (cpu_profile)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--home", help="template data directory (kept; default /tmp/cg-concurrency-<memories>)")
    ap.add_argument("--log-level", default="error", choices=("debug", "info", "warn", "error"))
    ap.add_argument("--name", default="concurrency", help="result file name (benchmarks/results/<name>.json)")
    args = ap.parse_args()
    load_before = list(os.getloadavg())
    results = asyncio.run(main_async(args))
    for home in Path(results["workdir"]).glob("home-*"):  # copies of the template; the server logs stay
        shutil.rmtree(home, ignore_errors=True)
    results["summary"] = summary(results)
    results["settings"] = {"memories": args.memories, "calls_per_client_per_round": args.calls,
                           "clients": args.clients, "rounds": args.rounds, "transport": "tcp (raw JSON-RPC lines)",
                           "loadavg_before": load_before, "loadavg_after": list(os.getloadavg()),
                           "note": "shared 2-core machine, other engineers' work running: noisy; compare modes "
                                   "within one run (they alternate per client count)"}
    print(json.dumps(results["summary"], indent=2))
    write_result(args.name, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
