"""Retriever.run latency (in-process, no MCP) at store sizes past the corpora: each stage's milliseconds.

The store is filled from the fingerprint cache of benchmarks/_corpora.py (code + prose documents, embedded once):
the first pass stores them as they are; further memories reuse a cached fingerprint with Gaussian noise of
relative norm 0.2 on the dense spaces (as bench_memory_ops does past --distinct), the sparse, binary and E12
vectors copied. Queries: the corpora's queries, alternating code and prose, with their text (query kinds).
Settings: the constitution's retrieval section, or a results JSON's tuning.chosen (--settings).

Run:  .venv/bin/python benchmarks/bench_retrieval_latency.py --sizes 10000 [--queries 300] [--settings FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np
from _corpora import corpus, embed_corpus, refresh_lexical
from _stats import format_summary, summarize, write_result
from _workload import bench_settings
from bench_retrieval_corpora import settings_from_dict

from contextgraph.services.memory.search import RetrievalSettings, Retriever

DENSE = (1, 5, 7, 8, 10, 11)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--settings")
    ap.add_argument("--name", default="retrieval_latency")
    args = ap.parse_args()

    import yaml

    from contextgraph.embedders.e05_causal import query_direction
    from contextgraph.embedders.pipeline import build_pipeline
    from contextgraph.storage.base import MemoryRecord
    from contextgraph.storage.indexes import IndexSet
    from contextgraph.storage.lmdb_store import LmdbStore

    pipeline = build_pipeline(bench_settings(tempfile.mkdtemp(prefix="cg-lat-")))
    if args.settings:
        settings = settings_from_dict(json.loads(Path(args.settings).read_text())["tuning"]["chosen"])
    else:
        settings = RetrievalSettings.from_constitution(
            yaml.safe_load((Path(__file__).resolve().parents[1] / "constitution.yaml").read_text()))
    docs, queries = [], []
    for name in ("code", "prose"):
        data = corpus(name)
        emb = embed_corpus(data, pipeline)
        refresh_lexical(data, emb, pipeline)
        docs += [(fp, it.document, data.modality) for fp, it in zip(emb.docs, data.items)]
        queries.append([(fp, it.query) for fp, it in zip(emb.queries, data.items)])
    rng = np.random.default_rng(7)
    mixed = [q for pair in zip(*[rng.permutation(len(qs))[: args.queries // 2] for qs in queries])
             for q in pair]
    picked = [queries[i % 2][j] for i, j in enumerate(mixed)]

    home = Path(tempfile.mkdtemp(prefix="cg-lat-store-"))
    store = LmdbStore(home / "store", sync=False, map_size=64 << 30)
    indexes = IndexSet(store)
    results: dict = {"settings_from": args.settings or "constitution.yaml", "sizes": {}}
    now = time.time()
    stored = 0
    for size in [int(x) for x in args.sizes.split(",")]:
        t0 = time.perf_counter()
        while stored < size:
            fp, text, modality = docs[stored % len(docs)]
            if stored >= len(docs):
                fp = dict(fp)
                for space in DENSE:
                    v = fp[space]
                    noise = rng.standard_normal(v.shape).astype(np.float32)
                    fp[space] = (v + 0.2 * np.linalg.norm(v) * noise / np.linalg.norm(noise)).astype(np.float32)
            ts = now - size + stored
            store.put(MemoryRecord(id=uuid.uuid4().hex, content=text, rationale="latency benchmark",
                                   modality=modality, session="bench", created_at=ts, updated_at=ts), fp)
            stored += 1
            if stored % 2000 == 0:
                indexes.catch_up(store)
        indexes.catch_up(store)
        fill_s = time.perf_counter() - t0
        retriever = Retriever(store, indexes, pipeline.embedders, settings)
        stages: dict[str, list[float]] = {}
        total, cands = [], []
        for fp, text in picked[:20]:  # warm-up
            retriever.run(fp, 10, causal_direction=query_direction(text), query_text=text)
        for fp, text in picked:
            t = time.perf_counter()
            r = retriever.run(fp, 10, causal_direction=query_direction(text), query_text=text)
            total.append((time.perf_counter() - t) * 1e3)
            cands.append(r.candidates)
            for k, v in r.stages_ms.items():
                stages.setdefault(k, []).append(v)
        entry = {"fill_s": round(fill_s, 1), "run_ms": summarize(total),
                 "stages_ms": {k: summarize(v) for k, v in stages.items()},
                 "candidates_median": float(np.median(cands))}
        results["sizes"][str(size)] = entry
        print(f"\n{size} memories (filled in {fill_s:.0f} s), candidates median {entry['candidates_median']:.0f}")
        print(format_summary("Retriever.run", entry["run_ms"], "ms", budget=30.0))
        for k, v in entry["stages_ms"].items():
            print(format_summary(f"  {k}", v, "ms"))
    store.close()
    write_result(args.name, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
