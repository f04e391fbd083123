"""The memory tools at scale, through the real MCP SDK client in-process (`mcp.Client(build_server(app),
mode="legacy")`): `store_memory`, `inject_context` and `search_graph` latency at growing store sizes, with the
per-stage split of search (`include_breakdown`) and the memory and disk each stored memory costs.

One data directory grows through the sizes given (default 1,000 and 10,000; `--sizes 1000,10000,100000` for
the 100K run). Before each size is measured the store is filled up to it directly (below); then, in order:

  store_memory    --ops calls, each a new realistic text (stdlib docstring paragraph or function source),
                  with a rationale; each call timed through the client (embed + commit + index insert + MCP)
  inject_context  --ops calls, related_k 5 (store + UTL novelty + a retrieval of the 5 most related)
  search_graph    --ops calls, top_k 10, queries = first sentences of stdlib docstrings (natural language),
                  include_breakdown false; then --breakdown-ops more with include_breakdown true, whose
                  `stages_ms` (embed_query, s1..s5, fetch_records) and `candidates` are summarised
The stores and injects of a size add to the store (2 × --ops memories), so the next size's fill tops it up.

Filling (what was done, and why it is representative; see _workload.fill_store):
  * The first --distinct memories (default 20,000) are distinct realistic texts, fingerprinted by the real
    pipeline in batches, dated one minute apart ending now, stored with store.put and indexed with one
    indexes.catch_up() per 256 (the oplog path), so stored bytes and index contents are what store_memory makes.
  * Past --distinct, embedding every text would take ~25-40 min of CPU at 100K (~20 ms each in batches). Each
    further memory i reuses the fingerprint of distinct memory (i mod D) read back from the store, with its
    own record, seq, time and positions: E2/E3/E4 are recomputed from its own timestamp and positions, and every
    other dense space (E1, E5, E7, E8, E10, E11) gets Gaussian noise of norm ≈ 0.2 (cosine ≈ 0.98 to the
    source), then is rescaled to the source's norm, so the HNSW graphs see no exact duplicates. Sparse (E6,
    E13), binary (E9) and E12 token vectors are copied. Its content is the source's text.
  * Why the latency is still representative: a search's cost is (a) the E1 HNSW query, logarithmic in the
    graph size and insensitive to near-duplicate clusters at ef 64, (b) the sparse pre-filter, proportional to
    the postings of the query's terms, which grow with the count exactly as a corpus with this vocabulary
    would (a larger, more varied corpus spreads them over more terms, so if anything this is pessimistic), and
    (c) the fusion and rerank over the candidate union (≤ 300), whose cost is per candidate, not per stored
    memory. `candidates` is reported per size, so (c)'s workload can be compared across sizes. Retrieval
    *quality* is not measured here (bench_retrieval_quality.py does that on distinct texts).

--profile-search N adds, after each size: N in-process Retriever.run calls (numpy's OpenBLAS at its default and
at one thread, and with stage 3's former per-memory read instead of the column read, alternating call by
call), stage 1 per sparse space with and without the query's high-df terms, S3 split into reading the
candidates' fingerprints and scoring them, a cProfile of Retriever.run, and N/2 in-process inject calls with
timers around their parts (embed, related retrieval, index insert, UTL, put, edges).
--retrieval KEY=VALUE... replaces the constitution's retrieval settings for the run (to time a proposal).
--batched-puts fills with one write transaction per batch (see _workload.fill_store): for 300K-1M stores.

Memory and disk: RSS (VmRSS, split into RssAnon — the indexes and Python objects — and RssFile — LMDB pages
mapped in) before and after each fill and after the timed calls; the LMDB data file (apparent and allocated
bytes) per stored memory; at the end, the saved index directory (close() saves it) per memory and how long the
close took.

Run:  .venv/bin/python benchmarks/bench_memory_ops.py [--sizes 1000,10000] [--ops 300] [--distinct 20000]
      .venv/bin/python benchmarks/bench_memory_ops.py --sizes 1000,10000,100000     # ~30-40 min on 2 cores
"""

from __future__ import annotations

import argparse
import gc
import itertools
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self

sys.path.insert(0, str(Path(__file__).resolve().parent))
import anyio
import numpy as np
from _stats import format_summary, summarize, time_method, write_result
from _workload import (
    BATCH,
    bench_settings,
    blas_threads,
    cpu_hogs,
    dir_bytes,
    fill_store,
    function_pairs,
    realistic_texts,
)

BUDGETS_MS = {"search_graph": 30.0, "inject_context": 40.0, "store_memory": 100.0}  # store: curation class
BUDGET_P99_MS = 60.0
NOISE_NORM = 0.2
perf = time.perf_counter


def rss() -> dict[str, float]:
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key = line.split(":")[0]
            if key in ("VmRSS", "RssAnon", "RssFile"):
                out[key] = int(line.split()[1]) / 1024
    return out


class Filler:
    """Grows the store to a target size: distinct texts first, then reused fingerprints (module docstring)."""

    def __init__(self, app: Any, pipeline: Any, distinct: int, horizon: int, seed: int,
                 batched_puts: bool = False) -> None:
        self.app, self.pipeline, self.distinct = app, pipeline, distinct
        self.batched_puts = batched_puts
        self.texts = realistic_texts(seed)
        self.made = 0  # fill memories so far
        self.sources: list[tuple[int, str, str]] = []  # (seq, text, modality) of the distinct ones
        self.rng = np.random.default_rng(seed)
        self.now = time.time()
        self.horizon = horizon  # fill memory i is dated now - (horizon - i) minutes
        self.by_space = {e.space: e for e in pipeline.embedders}
        self.report = {"embed_s": 0.0, "put_s": 0.0, "index_s": 0.0, "wall_s": 0.0, "distinct": 0, "reused": 0}

    def grow_to(self, target: int) -> None:
        storage = self.app.services.storage
        store = storage.store
        need = target - store.count()
        if need <= 0:
            return
        fresh = max(0, min(need, self.distinct - len(self.sources)))
        t0 = perf()
        if fresh:
            items = list(itertools.islice(self.texts, fresh))
            first_seq = store.last_seq() + 1
            r = fill_store(storage, self.pipeline, items, start_time=self._start(), progress=self._progress(fresh),
                           batched_puts=self.batched_puts)
            seqs = [rec.seq for rec in self._records_since(first_seq)]
            self.sources += [(s, t, m) for s, (t, m) in zip(seqs, items)]
            self.made += fresh
            self.report["distinct"] += fresh
            for k in ("embed_s", "put_s", "index_s"):
                self.report[k] += getattr(r, k)
        rest = need - fresh
        if rest > 0:
            items_src = [self.sources[(self.made + i) % len(self.sources)] for i in range(rest)]
            items = [(t, m) for _, t, m in items_src]
            src_seqs = [s for s, _, _ in items_src]

            def reuse(lo: int, drafts: list[Any]) -> list[dict]:
                return self._reuse(src_seqs[lo : lo + len(drafts)], drafts)

            r = fill_store(storage, self.pipeline, items, start_time=self._start(), fingerprints=reuse,
                           progress=self._progress(rest), batched_puts=self.batched_puts)
            self.made += rest
            self.report["reused"] += rest
            for k in ("embed_s", "put_s", "index_s"):
                self.report[k] += getattr(r, k)
        self.report["wall_s"] += perf() - t0
        print(file=sys.stderr)

    def _start(self) -> float:
        return self.now - (self.horizon - self.made) * 60.0

    def _records_since(self, first_seq: int) -> list[Any]:
        store = self.app.services.storage.store
        return [r for r in store.get_by_seq(range(first_seq, store.last_seq() + 1)) if r is not None]

    def _reuse(self, src_seqs: list[int], drafts: list[Any]) -> list[dict]:
        store = self.app.services.storage.store
        fps = store.fingerprints(src_seqs)
        ts = np.array([d.timestamp for d in drafts])
        e2 = self.by_space[2].embed_times(ts)
        e3 = [self.by_space[3].embed_time(t) for t in ts]
        e4 = self.by_space[4].embed_positions(np.array([d.session_position for d in drafts], dtype=np.float64),
                                              np.array([d.global_position for d in drafts], dtype=np.float64))
        out = []
        for i, fp in enumerate(fps):
            new = dict(fp)
            new[2], new[3], new[4] = e2[i], e3[i], e4[i]
            for space in (1, 5, 7, 8, 10, 11):
                v = np.asarray(fp[space], dtype=np.float32)
                noise = self.rng.standard_normal(v.shape).astype(np.float32) * (NOISE_NORM / np.sqrt(v.size))
                w = v + noise * float(np.linalg.norm(v))
                new[space] = (w * (np.linalg.norm(v) / max(np.linalg.norm(w), 1e-12))).astype(np.float32)
            out.append(new)
        return out

    @staticmethod
    def _progress(total: int):
        started = perf()

        def show(done: int, _total: int) -> None:
            rate = done / max(perf() - started, 1e-9)
            left = (total - done) / max(rate, 1e-9)
            sys.stderr.write(f"\r   fill {done}/{total}  ({rate:.0f}/s, {left:.0f} s left) ")
            sys.stderr.flush()

        return show


class GcPauses:
    """Collector pauses (count and total ms per generation) while active: a big heap makes gen-2 collections
    long, and they land inside whichever call allocates at the time."""

    def __init__(self) -> None:
        self.started: float | None = None
        self.pauses: dict[int, list[float]] = {0: [], 1: [], 2: []}

    def _cb(self, phase: str, info: dict) -> None:
        if phase == "start":
            self.started = perf()
        elif self.started is not None:
            self.pauses[info["generation"]].append((perf() - self.started) * 1e3)
            self.started = None

    def __enter__(self) -> Self:
        gc.callbacks.append(self._cb)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._cb)

    def summary(self) -> dict[str, Any]:
        return {f"gen{g}": {"count": len(v), "total_ms": round(sum(v), 1), "max_ms": round(max(v, default=0.0), 1)}
                for g, v in self.pauses.items()}


def lmdb_stats(app: Any) -> dict[str, Any]:
    store = app.services.storage.store
    path = Path(app.services.storage.home) / "store" / "data.mdb"
    st = path.stat()
    n = store.count()
    return {"count": n, "data_mdb_apparent_bytes": st.st_size, "data_mdb_allocated_bytes": st.st_blocks * 512,
            "allocated_bytes_per_memory": round(st.st_blocks * 512 / max(n, 1), 1)}


async def measure_size(app: Any, client: Any, queries: list[str], texts: Any, args: argparse.Namespace) -> dict:
    out: dict[str, Any] = {}

    async def timed(name: str, arguments: dict) -> tuple[float, Any]:
        t0 = perf()
        result = await client.call_tool(name, arguments)
        ms = (perf() - t0) * 1e3
        if result.is_error:
            raise AssertionError(f"{name} failed: {result.content}")
        return ms, result

    rationale = "benchmark: a realistic memory stored through the MCP client"
    out["loadavg_before"] = os.getloadavg()
    for tool, extra in (("store_memory", {}), ("inject_context", {"related_k": 5})):
        for _ in range(args.warmup):
            text, modality = next(texts)
            await timed(tool, {"content": text, "rationale": rationale, "modality": modality, **extra})
        gc.collect()
        samples, inner = [], []
        with GcPauses() as pauses:
            for _ in range(args.ops):
                text, modality = next(texts)
                ms, result = await timed(tool, {"content": text, "rationale": rationale, "modality": modality,
                                                **extra})
                samples.append(ms)
                inner.append(result.structured_content.get("timings_ms", {}))
        s = summarize(samples)
        s["gc_pauses"] = pauses.summary()
        s["server_timings_ms"] = {k: summarize([t[k] for t in inner if k in t]) for k in ("embed", "commit")}
        out[tool] = s
        print("   " + format_summary(tool, s, "ms", BUDGETS_MS[tool], p99=True))
        print(f"      inside: embed median {s['server_timings_ms']['embed']['median']:.1f} ms, commit+index "
              f"median {s['server_timings_ms']['commit']['median']:.1f} ms (p95 "
              f"{s['server_timings_ms']['commit']['p95']:.1f})")

    qs = itertools.cycle(queries)
    for _ in range(args.warmup):
        await timed("search_graph", {"query": next(qs), "top_k": 10})
    gc.collect()
    with GcPauses() as pauses:
        samples = [(await timed("search_graph", {"query": next(qs), "top_k": 10}))[0] for _ in range(args.ops)]
    s = summarize(samples)
    s["gc_pauses"] = pauses.summary()
    out["search_graph"] = s
    print("   " + format_summary("search_graph (top_k 10)", s, "ms", BUDGETS_MS["search_graph"], p99=True))

    stages: dict[str, list[float]] = {}
    candidates, wall = [], []
    for _ in range(args.breakdown_ops):
        ms, result = await timed("search_graph", {"query": next(qs), "top_k": 10, "include_breakdown": True})
        wall.append(ms)
        payload = result.structured_content
        for k, v in payload["stages_ms"].items():
            stages.setdefault(k, []).append(v)
        candidates.append(payload["candidates"])
    sb = {k: summarize(v) for k, v in stages.items()}
    stage_sum = [sum(vals) for vals in zip(*stages.values())]
    out["search_breakdown"] = {"wall_ms": summarize(wall), "stages_ms": sb, "sum_of_stages_ms": summarize(stage_sum),
                               "candidates": summarize(candidates)}
    print("   " + format_summary("search_graph, include_breakdown", summarize(wall), "ms"))
    print("      stage medians (p95), ms: "
          + ", ".join(f"{k} {v['median']:.2f} ({v['p95']:.2f})" for k, v in sb.items()))
    overhead = float(np.median(np.array(wall) - np.array(stage_sum)))
    print(f"      candidates median {summarize(candidates)['median']:.0f}; call − Σstages (MCP + thread hop + "
          f"catch-up + payload) median {overhead:.2f} ms")
    out["search_breakdown"]["unstaged_overhead_ms_median"] = overhead
    out["loadavg_after"] = os.getloadavg()
    gcs = {t: out[t]["gc_pauses"]["gen2"] for t in ("store_memory", "inject_context", "search_graph")}
    print("      gen-2 GC pauses during the timed calls: " + ", ".join(
        f"{t} {g['count']}× (max {g['max_ms']} ms)" for t, g in gcs.items())
        + f"; load average {out['loadavg_before'][0]:.2f} → {out['loadavg_after'][0]:.2f}")
    return out


def override_retrieval(app: Any, pairs: list[str]) -> dict[str, Any]:
    """Replace the app's RetrievalSettings (from constitution.yaml) for this run: KEY=VALUE with KEY a field of
    RetrievalSettings (rrf_k, sparse_candidates, dense_candidates, rerank_head, rerank_weight) or wN for space N's
    RRF weight. Sets MemoryService's private `_retrieval_settings`: a benchmark-only hook, to time a proposal."""
    import dataclasses

    s = app.services.memory.retrieval_settings
    weights = dict(s.space_weights)
    changes: dict[str, Any] = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        if key.startswith("w") and key[1:].isdigit():
            weights[int(key[1:])] = float(value)
        elif key in ("sparse_candidates", "dense_candidates", "rerank_head"):
            changes[key] = int(value)
        elif key in ("rrf_k", "rerank_weight"):
            changes[key] = float(value)
        else:
            raise SystemExit(f"--retrieval: unknown setting {key!r}")
    app.services.memory.retrieval_settings = dataclasses.replace(s, space_weights=weights, **changes)
    new = app.services.memory.retrieval_settings
    return dataclasses.asdict(new) | {"space_weights": dict(new.space_weights)}


def lmdb_count(home: Path) -> int:
    from contextgraph.storage.lmdb_store import LmdbStore

    with LmdbStore(home / "store") as store:
        return store.count()


def profile_search(app: Any, pipeline: Any, queries: list[str], n: int) -> dict[str, Any]:
    """In-process, no MCP: where a search's time goes at this size.
      (a) Retriever.run (stages 1-5 as search_graph runs them, query fingerprints precomputed), numpy's OpenBLAS
          at its default thread count and at one thread, interleaved query by query so drift hits both alike;
      (b) stage 1 per sparse space, and the same searches with the query's high-df terms (in more than a quarter
          of the documents) left out: their postings are scanned in full but, with idf near 0, barely move the
          ranking (top-100 overlap reported);
      (c) cProfile of Retriever.run over the same queries: the top functions by own time;
      (d) how many objects the collector tracks (a gen-2 collection walks all of them)."""
    import cProfile
    import pstats

    from contextgraph.embedders.e05_causal import query_direction
    from contextgraph.fingerprint import Sparse
    from contextgraph.services.memory.search import Retriever

    store, indexes = app.services.storage.store, app.services.storage.indexes
    indexes.catch_up(store)
    retriever = Retriever(store, indexes, pipeline.embedders, app.services.memory.retrieval_settings)
    qs = queries[:n]
    fps = pipeline.embed([app.services.perception.draft(q, "text", None) for q in qs])
    dirs = [query_direction(q) for q in qs]
    out: dict[str, Any] = {"queries": len(qs)}

    default_threads = blas_threads()
    # "per_memory_read": the same retrieval with stage 3 reading one decoded fingerprint per candidate, as
    # before issue 19's column read (same candidates, same ranking), interleaved call by call with the others
    per_memory = Retriever(_PerMemoryRead(store), indexes, pipeline.embedders, app.services.memory.retrieval_settings)
    times: dict[str, list[float]] = {"default": [], "openblas_1": [], "per_memory_read": []}
    stage_times: dict[str, dict[str, list[float]]] = {"default": {}, "openblas_1": {}, "per_memory_read": {}}
    for fp, d in zip(fps, dirs):
        for label, threads, which in (("default", default_threads, retriever), ("openblas_1", 1, retriever),
                                      ("per_memory_read", default_threads, per_memory)):
            blas_threads(threads)
            t0 = perf()
            r = which.run(fp, 10, causal_direction=d)
            times[label].append((perf() - t0) * 1e3)
            for k, v in r.stages_ms.items():
                stage_times[label].setdefault(k, []).append(v)
    blas_threads(default_threads)
    out["retriever_run_ms"] = {k: summarize(v) for k, v in times.items()}
    out["retriever_stages_ms"] = {lab: {k: summarize(v) for k, v in st.items()} for lab, st in stage_times.items()}
    for label in times:
        st = out["retriever_stages_ms"][label]
        print("   " + format_summary(f"Retriever.run, {label}", out["retriever_run_ms"][label], "ms")
              + "\n      " + ", ".join(f"{k} {v['median']:.2f} ({v['p95']:.2f})" for k, v in st.items()))

    sparse: dict[str, Any] = {}
    for space in (13, 6):
        index = indexes._indexes[space]
        full_t, pruned_t, overlap, dropped = [], [], [], []
        n_docs = len(index)
        for fp in fps:
            q = fp[space]
            t0 = perf()
            a = index.search(q, 100)
            full_t.append((perf() - t0) * 1e3)
            df = np.array([index._df(int(t)) for t in q.indices])
            keep = df <= n_docs / 4
            dropped.append(int((~keep).sum()))
            pq = Sparse(q.indices[keep], q.values[keep]) if keep.any() else q
            t0 = perf()
            b = index.search(pq, 100)
            pruned_t.append((perf() - t0) * 1e3)
            sa, sb = {x for x, _ in a}, {x for x, _ in b}
            overlap.append(len(sa & sb) / max(len(sa), 1))
        sparse[f"E{space}"] = {"search_ms": summarize(full_t), "search_ms_without_df_over_25pct": summarize(pruned_t),
                               "terms_dropped_per_query": summarize(dropped),
                               "top100_overlap": summarize(overlap)}
        print("   " + format_summary(f"S1 E{space} search (k=100)", sparse[f"E{space}"]["search_ms"], "ms"))
        print("   " + format_summary("   same, terms with df > 25% dropped", summarize(pruned_t), "ms")
              + f"  (dropped {np.median(dropped):.0f} terms/query, top-100 overlap {np.median(overlap):.2f})")
    out["s1_sparse"] = sparse

    # S3's two halves for the same candidate sets: reading the candidates' fingerprints, and scoring them
    from contextgraph.services.memory.search import SEMANTIC, SPARSE, SPLADE

    # the per-memory read (decode_fingerprint per candidate, what stage 3 did before issue 19) against the
    # column read it does now (store.fingerprint_columns), and scoring from decoded fingerprints vs columns
    split: dict[str, list[float]] = {"fingerprints_all_13": [], "fingerprints_without_e12": [],
                                     "e12_of_50_candidates": [], "score_13_spaces": [], "columns_all_13": [],
                                     "score_13_spaces_columns": []}
    all_spaces = list(range(1, 14))
    for fp, d in zip(fps, dirs):
        cands: dict[int, None] = {}
        for space, k in ((SPLADE, retriever.settings.sparse_candidates), (SPARSE, retriever.settings.sparse_candidates),
                         (SEMANTIC, retriever.settings.dense_candidates)):
            for seq, _ in indexes.search(space, fp[space], k):
                cands.setdefault(seq)
        seqs = list(cands)
        t0 = perf()
        full = store.fingerprints(seqs)
        t1 = perf()
        store.fingerprints(seqs, spaces=[sp for sp in range(1, 14) if sp != 12])
        t2 = perf()
        store.fingerprints(seqs[:50], spaces=[12])
        t3 = perf()
        retriever.space_scores(fp, [f for f in full if f is not None], d)
        t4 = perf()
        columns = store.fingerprint_columns(seqs, all_spaces)
        t5 = perf()
        retriever.space_scores(fp, columns, d)
        t6 = perf()
        for key, a, b in (("fingerprints_all_13", t0, t1), ("fingerprints_without_e12", t1, t2),
                          ("e12_of_50_candidates", t2, t3), ("score_13_spaces", t3, t4),
                          ("columns_all_13", t4, t5), ("score_13_spaces_columns", t5, t6)):
            split[key].append((b - a) * 1e3)
    out["s3_split_ms"] = {k: summarize(v) for k, v in split.items()}
    print("   S3 split, medians (p95) ms: " + ", ".join(f"{k} {v['median']:.2f} ({v['p95']:.2f})"
                                                    for k, v in out["s3_split_ms"].items()))

    prof = cProfile.Profile()
    prof.enable()
    for fp, d in zip(fps, dirs):
        retriever.run(fp, 10, causal_direction=d)
    prof.disable()
    stats = pstats.Stats(prof)
    rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:15]  # by own (total) time
    top = [{"function": f"{Path(fn).name}:{line}({name})", "calls": cc,
            "own_ms_per_query": round(tt * 1e3 / len(qs), 3), "cum_ms_per_query": round(ct * 1e3 / len(qs), 3)}
           for (fn, line, name), (cc, nc, tt, ct, _) in rows]
    out["profile_top_own_time"] = top
    print("   cProfile of Retriever.run, top by own time (ms per query, profiler overhead included):")
    for row in top[:10]:
        print(f"      {row['own_ms_per_query']:>7.3f} own {row['cum_ms_per_query']:>8.3f} cum  {row['function']}")
    out["gc_tracked_objects"] = len(gc.get_objects())
    print(f"   objects tracked by the collector: {out['gc_tracked_objects']:,}")
    return out


class _PerMemoryRead:
    """A store whose fingerprint_columns decodes each candidate's fingerprint first (decode_fingerprint, the
    read stage 3 did before the column read), for an A/B of the two reads in one process."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def fingerprint_columns(self, seqs: Any, spaces: Any) -> Any:
        from contextgraph.storage.fingerprint_columns import FingerprintColumns

        return FingerprintColumns.from_fingerprints(seqs, self._store.fingerprints(seqs), spaces)


async def profile_inject(app: Any, texts: Any, n: int) -> dict[str, Any]:
    """In-process `MemoryService.inject` (related_k 5), n calls, with timers wrapped around the parts it calls
    (in whatever thread they run), and the stage split of its related-memories retrieval. The wrappers are
    removed afterwards. Adds n memories to the store."""
    from contextgraph.services.memory.memory import MemoryService, NewMemory
    from contextgraph.services.memory.memory import search as search_mod
    from contextgraph.storage.indexes import IndexSet
    from contextgraph.storage.lmdb_store import LmdbStore

    pipeline = await app.services.perception.pipeline()
    acc: dict[str, list[float]] = {}
    stages: dict[str, list[float]] = {}
    restores: list[Callable[[], None]] = []

    def related_stages(result: Any) -> None:
        for key, v in result.stages_ms.items():
            stages.setdefault(key, []).append(v)

    def wrap(owner: Any, name: str, label: str, on_result: Callable[[Any], None] | None = None) -> None:
        restores.append(time_method(owner, name, label, acc, on_result))

    # inject ranks its related memories within the UTL's neighbourhood (Retriever.rank: stages 3-5, no search)
    wrap(search_mod.Retriever, "rank", "Retriever.rank (related memories)", related_stages)
    wrap(type(pipeline), "embed_with_triples", "pipeline.embed_with_triples")
    wrap(IndexSet, "apply", "indexes.apply (on the event loop)")
    wrap(MemoryService, "_novelty", "UTL novelty")
    wrap(LmdbStore, "put", "store.put (synced)")
    total = []
    try:
        for i in range(n + 5):
            text, modality = next(texts)
            t0 = perf()
            new = NewMemory(text, "benchmark: inject breakdown", modality=modality)
            await app.services.memory.inject(new, related_k=5)
            if i >= 5:
                total.append((perf() - t0) * 1e3)
            else:
                acc.clear()
                stages.clear()
    finally:
        for restore in reversed(restores):
            restore()
    out = {"inject_ms": summarize(total), "parts_ms": {k: summarize(v) for k, v in acc.items()},
           "related_retrieval_stages_ms": {k: summarize(v) for k, v in stages.items()}}
    print("   " + format_summary("inject (in-process, no MCP)", out["inject_ms"], "ms"))
    for k, v in sorted(out["parts_ms"].items(), key=lambda kv: -kv[1]["median"]):
        print(f"      {k:<36} median {v['median']:6.2f} ms  p95 {v['p95']:6.2f}")
    print("      related retrieval stages (medians): " + ", ".join(
        f"{k} {v['median']:.2f}" for k, v in out["related_retrieval_stages_ms"].items()))
    return out


async def run(args: argparse.Namespace, sizes: list[int]) -> dict[str, Any]:
    from mcp import Client

    from contextgraph.app import build_app
    from contextgraph.server import build_server

    home = Path(args.home) if args.home else Path(tempfile.mkdtemp(prefix="cg-bench-ops-"))
    results: dict[str, Any] = {"home": str(home), "sizes": {}}
    rss0 = rss()
    app = build_app(bench_settings(home, int8=not args.fp32))
    if args.retrieval:
        results["retrieval_override"] = override_retrieval(app, args.retrieval)
        print(f"retrieval settings overridden: {results['retrieval_override']}")
    t0 = perf()
    app.services.storage.open()  # LMDB + indexes: loads the saved index files, or rebuilds them from the store
    open_s = perf() - t0
    rss_open = rss()
    pipeline = await app.services.perception.pipeline()
    rss_model = rss()
    print(f"opened the store and its indexes in {open_s:.2f} s ({app.services.storage.store.count():,} memories); "
          f"RSS {rss_open['VmRSS']:.0f} MiB")
    results["open_s"] = round(open_s, 3)
    print(f"pipeline {pipeline.backbone.runtime}; RSS {rss0['VmRSS']:.0f} MiB at start, {rss_model['VmRSS']:.0f} "
          f"MiB with the model loaded; OpenBLAS threads {blas_threads()}")
    results["rss_mb"] = {"start": rss0, "store_open": rss_open, "model_loaded": rss_model}
    queries = [p.query for p in function_pairs()]
    np.random.default_rng(args.seed).shuffle(queries)
    filler = Filler(app, pipeline, args.distinct, horizon=max(sizes), seed=args.seed, batched_puts=args.batched_puts)
    # texts for store_memory / inject_context: far past anything the fill takes, so they are new to the store
    op_texts = itertools.islice(realistic_texts(args.seed + 1), 40_000, None)
    prev = rss_model
    async with Client(build_server(app), mode="legacy") as client:
        for size in sizes:
            print(f"== {size:,} memories")
            before = app.services.storage.store.count()
            t0 = perf()
            filler.grow_to(size)
            fill_s = perf() - t0
            gc.collect()
            after = rss()
            added = app.services.storage.store.count() - before
            disk = lmdb_stats(app)
            per_mem = {k: round((after[k] - prev[k]) * 1024 * 1024 / added, 1) if added else None for k in after}
            rep = filler.report
            print(f"   filled {added:,} in {fill_s:.0f} s (so far: embed {rep['embed_s']:.0f} s, put "
                  f"{rep['put_s']:.0f} s, index {rep['index_s']:.0f} s; {rep['distinct']:,} "
                  f"distinct, {rep['reused']:,} reused)")
            growth = (f"growth per added memory: anon {per_mem['RssAnon'] / 1024:.1f} KiB, file "
                      f"{per_mem['RssFile'] / 1024:.1f} KiB" if added else "nothing added (store already this big)")
            print(f"   RSS {after['VmRSS']:.0f} MiB (anon {after['RssAnon']:.0f}, file {after['RssFile']:.0f}); "
                  f"{growth}; LMDB {disk['data_mdb_allocated_bytes'] / 2**20:.0f} MiB = "
                  f"{disk['allocated_bytes_per_memory'] / 1024:.1f} KiB/memory")
            prev = after
            if args.fill_only:
                results["sizes"][str(size)] = {"fill_s": round(fill_s, 1), "added": added, "rss_mb": after,
                                               "rss_growth_bytes_per_added_memory": per_mem, "lmdb": disk}
                continue
            count_at_measure = app.services.storage.store.count()
            with cpu_hogs(args.hogs):
                ops = await measure_size(app, client, queries, op_texts, args)
            results["sizes"][str(size)] = {
                "count_at_measure": count_at_measure, "fill_s": round(fill_s, 1), "added": added,
                "fill_totals_so_far": dict(filler.report), "rss_mb": after,
                "rss_growth_bytes_per_added_memory": per_mem, "lmdb": disk, **ops,
            }
            results["sizes"][str(size)]["lmdb_after_ops"] = lmdb_stats(app)
            # after the calls too: RSS counts the LMDB pages they touched (RssFile), not only the indexes
            results["sizes"][str(size)]["rss_after_ops_mb"] = after_ops = rss()
            print(f"   RSS after the calls {after_ops['VmRSS']:.0f} MiB (anon {after_ops['RssAnon']:.0f}, "
                  f"file {after_ops['RssFile']:.0f})")
            if args.profile_search:
                print("   -- search profile (in-process, no MCP)")
                results["sizes"][str(size)]["search_profile"] = profile_search(app, pipeline, queries[-2000:],
                                                                               args.profile_search)
                print("   -- inject profile (in-process, no MCP)")
                results["sizes"][str(size)]["inject_profile"] = await profile_inject(app, op_texts,
                                                                                     args.profile_search // 2)
    t0 = perf()
    app.close()
    close_s = perf() - t0
    idx = dir_bytes(home / "indexes")
    n = lmdb_count(home)  # after close(): the store is closed, open it read-only for the count
    results["close_s"] = round(close_s, 2)
    results["indexes_on_disk"] = {**idx, "bytes_per_memory": round(idx["apparent"] / max(n, 1), 1)}
    print(f"close (writer drain + index save): {close_s:.1f} s; saved indexes {idx['apparent'] / 2**20:.0f} MiB = "
          f"{idx['apparent'] / max(n, 1) / 1024:.1f} KiB/memory")
    if not args.keep and not args.home:
        shutil.rmtree(home, ignore_errors=True)
    results["fill"] = {**filler.report, "batch": BATCH, "noise_norm": NOISE_NORM}
    return results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000", help="comma-separated store sizes, ascending")
    ap.add_argument("--ops", type=int, default=300, help="timed calls per tool per size")
    ap.add_argument("--breakdown-ops", type=int, default=100, help="extra search calls with include_breakdown")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--distinct", type=int, default=20_000, help="distinct texts embedded while filling")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--fp32", action="store_true",
                    help="serve the fp32 graph (CONTEXTGRAPH_INT8=0; the default was fp32 before 2026-11-27)")
    ap.add_argument("--hogs", type=int, default=0, help="busy-looping processes during the measurements")
    ap.add_argument("--blas-threads", type=int, default=None,
                    help="set numpy's OpenBLAS thread count (default: leave numpy's default, one per core)")
    ap.add_argument("--home", default=None, help="data directory to use (kept); default a temp dir")
    ap.add_argument("--keep", action="store_true", help="keep the temp data directory")
    ap.add_argument("--profile-search", type=int, default=0, metavar="N",
                    help="after each size, profile N in-process searches (OpenBLAS threads, stage 1, S3 split, "
                         "cProfile) and N/2 injects (wrapped timers; adds N/2 memories)")
    ap.add_argument("--retrieval", nargs="*", default=[], metavar="KEY=VALUE",
                    help="override retrieval settings for this run, e.g. rrf_k=5 sparse_candidates=50 w8=0")
    ap.add_argument("--batched-puts", action="store_true",
                    help="fill with one write transaction per batch (fill_store batched_puts): for 300K-1M stores")
    ap.add_argument("--fill-only", action="store_true", help="fill to the sizes and stop (with --home: reuse it later)")
    ap.add_argument("--quick", action="store_true", help="sizes 300,1000, 50 ops (smoke run)")
    ap.add_argument("--name", default="memory_ops", help="result file name (benchmarks/results/<name>.json)")
    args = ap.parse_args()
    if args.quick:
        args.sizes, args.ops, args.breakdown_ops, args.warmup = "300,1000", 50, 30, 3
    sizes = sorted(int(s) for s in args.sizes.split(","))
    if args.blas_threads is not None:
        blas_threads(args.blas_threads)
    started = perf()
    results = anyio.run(run, args, sizes)
    results.update({
        "settings": {"ops": args.ops, "breakdown_ops": args.breakdown_ops, "warmup": args.warmup,
                     "distinct": args.distinct, "batched_puts": args.batched_puts, "int8": not args.fp32,
                     "hogs": args.hogs, "openblas_threads": blas_threads(), "CONTEXTGRAPH_LOG_LEVEL": "error"},
        "budgets_ms": {"p95": BUDGETS_MS, "any_tool_p99": BUDGET_P99_MS},
        "wall_s": round(perf() - started, 1),
    })
    write_result(args.name, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
