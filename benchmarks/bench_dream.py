"""Dreams on a real corpus (issue 16): what a dream does to the graph, whether retrieval loses quality after it,
and how fast a dream wakes (SPEC §11: < 100 ms).

1. The prose corpus (benchmarks/_corpora.py, 2,400 documents, cached fingerprints) is stored in an app's store
   with the edges store_memory would give each document (services.auto_edges: Semantic to the E1 nearest above
   the threshold, Causal from E5's halves).
2. Retrieval quality (nDCG@10, recall@10, MRR@10 on the test half of the queries, as bench_retrieval_corpora.py
   measures it) with no neuromodulation, with the neuromodulators at their baselines (must be identical, query
   by query), and after one full dream (NREM then REM, --nrem/--rem seconds) once the E8 refreshes its edge
   changes queued have been applied and the indexes caught up.
3. Wake latency: --aborts dreams each aborted (abort_dream's path) and as many woken by a memory operation (the
   dispatcher's path), each 0.1-0.6 s into NREM; median and p95 of the time from the request to the dream task's
   end.

The machine is shared with other engineers' test runs while this runs: timings are noisy, read them as such.

Run:  .venv/bin/python benchmarks/bench_dream.py [--nrem 30] [--rem 30] [--aborts 20] [--docs 2400]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np
from _corpora import corpus, embed_corpus, halves, refresh_lexical
from _stats import summarize, write_result
from _workload import bench_settings
from bench_retrieval_corpora import TOP_K, metrics, rank_in

from contextgraph.app import build_app
from contextgraph.constitution import constitution
from contextgraph.embedders.e05_causal import CausalEmbedder, query_direction
from contextgraph.services.engine.neuromodulation import NeuromodulationService
from contextgraph.services.memory.search import Retriever
from contextgraph.storage.base import MemoryRecord

perf = time.perf_counter


def fill(app: Any, data: Any, emb: Any, pipeline: Any, log: Any) -> list[int]:
    store, indexes = app.services.storage.store, app.services.storage.indexes
    rules = app.services.memory.edge_rules
    e5 = next(e for e in pipeline.embedders if isinstance(e, CausalEmbedder))
    seqs = []
    started = perf()
    for i, (item, fp) in enumerate(zip(data.items, emb.docs)):
        memory_id = uuid.uuid4().hex
        now = emb.t0 - len(data.items) + i
        edges, _ = rules.edges(memory_id, [], rules.similar(store, indexes, fp),
                               rules.causal(store, indexes, item.document, fp, e5), now)
        record = store.put(MemoryRecord(id=memory_id, content=item.document, rationale="dream benchmark",
                                        modality=data.modality, session="bench", created_at=now, updated_at=now),
                           fp, edges)
        indexes.apply(record.seq, fp)
        seqs.append(record.seq)
        if (i + 1) % 400 == 0:
            log(f"  stored {i + 1}/{len(data.items)} with their edges ({perf() - started:.0f} s)")
    return seqs


def evaluate(app: Any, pipeline: Any, emb: Any, texts: list[str], relevant: list[int], idx: np.ndarray,
             modulation_service: NeuromodulationService | None) -> tuple[dict[str, float], list[list[int]]]:
    storage = app.services.storage
    storage.indexes.catch_up(storage.store)
    retriever = Retriever(storage.store, storage.indexes, pipeline.embedders, app.services.memory.retrieval_settings)
    if modulation_service is not None:
        retriever.modulation = modulation_service.modulation()
    lists = []
    for i in idx.tolist():
        found = retriever.run(emb.queries[i], TOP_K, causal_direction=query_direction(texts[i]),
                              query_text=texts[i]).found
        lists.append([f.record.seq for f in found])
    ranks = np.array([rank_in(found, relevant[i]) for found, i in zip(lists, idx.tolist())])
    return metrics(ranks), lists


def edge_stats(app: Any) -> dict[str, Any]:
    def read(g: Any) -> dict[str, Any]:
        weights, provenance = [], {}
        for r in g.recent(100_000, None, None):
            for e in g.edges_out(r.id):
                weights.append(e.weight)
                provenance[e.provenance or "store"] = provenance.get(e.provenance or "store", 0) + 1
        return {"edges": len(weights), "mean_weight": round(float(np.mean(weights)), 4) if weights else None,
                "by_provenance": provenance}

    return app.services.storage.store.graph_read(read)


async def wake_latencies(app: Any, n: int, how: str, rng: random.Random) -> list[float]:
    dream = app.services.dream
    dream.nrem_seconds = 600.0
    out = []
    for _ in range(n):
        await dream.trigger("nrem", force=True)
        await asyncio.sleep(rng.uniform(0.1, 0.6))
        if how == "abort":
            answer = await dream.abort()
            out.append(answer["wake_latency_ms"])
        else:
            app.services.activity.operation("search_graph")  # what the dispatcher does as a search starts
            await dream.until_awake()
            out.append(dream.reports[-1]["wake_latency_ms"])
    return out


async def run(args: argparse.Namespace) -> dict[str, Any]:
    log = print
    home = Path(tempfile.mkdtemp(prefix="cg-dream-"))
    app = build_app(bench_settings(home, CONTEXTGRAPH_AUTO_DREAM="0"), configure_logging=False)
    pipeline = await app.services.perception.pipeline()
    data = corpus("prose")
    data.items = data.items[: args.docs]
    emb = embed_corpus(data, pipeline, log=log)
    refresh_lexical(data, emb, pipeline)
    await app.services.storage.ready()
    t0 = perf()
    seqs = fill(app, data, emb, pipeline, log)
    log(f"stored {len(seqs)} documents in {perf() - t0:.0f} s; {edge_stats(app)}")
    texts = [it.query for it in data.items]
    test = halves(len(seqs))["test"]
    result: dict[str, Any] = {"documents": len(seqs), "test_queries": len(test), "edges_before": edge_stats(app)}

    plain, plain_lists = evaluate(app, pipeline, emb, texts, seqs, test, None)
    baseline, baseline_lists = evaluate(app, pipeline, emb, texts, seqs, test, NeuromodulationService(constitution()))
    result["retrieval_plain"] = plain
    result["retrieval_baseline_modulators"] = baseline
    result["baseline_identical_to_plain"] = baseline_lists == plain_lists
    log(f"retrieval, no neuromodulation:      {plain}")
    log(f"retrieval, modulators at baselines: {baseline} (identical lists: {baseline_lists == plain_lists})")

    dream = app.services.dream
    dream.nrem_seconds, dream.rem_seconds = args.nrem, args.rem
    dream.nrem["cues_per_minute"] = args.cues_per_minute
    dream.walks["walks_per_minute"] = args.walks_per_minute
    started = perf()
    await dream.trigger("full", force=True)
    await dream.until_awake()
    report = dict(dream.reports[-1])
    for key in ("blind_spot_edges", "shortcut_edges", "shared_name_edges"):
        report[key + "_count"] = len(report.pop(key, []))
    result["dream"] = {**report, "wall_s": round(perf() - started, 1)}
    log(f"dream: {result['dream']}")
    e8 = app.services.storage.e8
    for _ in range(6000):  # until the E8 refreshes the dream queued are applied (bounded: 20 min)
        if not e8.pending:
            break
        await asyncio.sleep(0.2)
    await app.services.storage.writer.submit(lambda: None)  # the last E8 batch is committed
    result["edges_after"] = edge_stats(app)
    after, after_lists = evaluate(app, pipeline, emb, texts, seqs, test, None)
    result["retrieval_after_dream"] = after
    result["lists_changed_after_dream"] = sum(a != b for a, b in zip(after_lists, plain_lists))
    log(f"retrieval after the dream:          {after} ({result['lists_changed_after_dream']} of {len(test)} "
        f"top-10 lists changed)")

    rng = random.Random(16)
    aborts = await wake_latencies(app, args.aborts, "abort", rng)
    woken = await wake_latencies(app, args.aborts, "activity", rng)
    result["wake_ms"] = {"abort_dream": summarize(aborts), "memory_operation": summarize(woken),
                         "budget_ms": constitution()["budgets_ms"]["dream_wake"]}
    for name, values in (("abort_dream", aborts), ("memory operation", woken)):
        s = summarize(values)
        log(f"wake latency ({name}, n={s['n']}): median {s['median']:.2f} ms, p95 {s['p95']:.2f} ms, "
            f"max {s['max']:.2f} ms (budget 100 ms)")
    app.close()
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nrem", type=float, default=30.0, help="NREM seconds")
    ap.add_argument("--rem", type=float, default=30.0, help="REM seconds")
    ap.add_argument("--aborts", type=int, default=20)
    ap.add_argument("--docs", type=int, default=2400)
    ap.add_argument("--cues-per-minute", type=float, default=2400.0)
    ap.add_argument("--walks-per-minute", type=float, default=600.0)
    ap.add_argument("--name", default="dream")
    args = ap.parse_args()
    result = asyncio.run(run(args))
    write_result(args.name, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
