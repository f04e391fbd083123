"""The head re-scorer on text it was not fitted on: Retriever.run with `head_rescorer` on and off, on the held-out
corpora of benchmarks/_corpora.py (man: manual pages; thirdparty: E7's held-out packages). EVALUATION ONLY: nothing
is fitted or tuned here, and nothing may ever be fitted or tuned on these corpora (the re-scorer's coefficients come
from bench_head_rescorer.py on the code/prose tune halves; the fusion from bench_retrieval_corpora.py).

Systems (each asked for its top 10; one relevant document per query; all queries of each corpus):
  bm25, e1, rrf   bench_retrieval_corpora.py's baselines (E6 BM25 with the constitution's k1/b; E1 cosine; their
                  RRF, k 60, over each one's top 100)
  off, on         the 5-stage Retriever as search_graph calls it, the constitution's settings with
                  retrieval.head_rescorer false / true (bench_retrieval_corpora.Bench.full)
Metrics: nDCG@10, recall@10, MRR@10; paired-bootstrap 95% intervals (2,000 resamples of the queries) of on − off,
off − rrf and on − rrf, and of on − off per man section / per package; the share of queries whose top 10 the
re-scorer changed.

Run:  .venv/bin/python benchmarks/bench_held_out.py [--corpora man,thirdparty]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np
from _stats import summarize, write_result
from _workload import bench_settings
from bench_retrieval_corpora import Bench, bootstrap, metrics, rrf_lists

from contextgraph.services.memory.search import SPARSE, RetrievalSettings

perf = time.perf_counter


def evaluate(bn: Bench, base: RetrievalSettings) -> dict[str, Any]:
    e6 = base.bm25.get(SPARSE, {"k1": 1.2, "b": 0.75})
    lists: dict[str, list] = {"bm25": bn.lexical(SPARSE, e6["k1"], e6["b"]), "e1": bn.e1_top(),
                              "rrf": rrf_lists(bn.lexical(SPARSE, e6["k1"], e6["b"], k=100), bn.e1_top(100))}
    times = {}
    for label, flag in (("off", False), ("on", True)):
        lists[label], times[label] = bn.full(dataclasses.replace(base, head_rescorer=flag))
    found = {k: bn.ranks_of(v) for k, v in lists.items()}
    groups = np.array([it.where.split("/")[0] for it in bn.data.items])  # man: the section; thirdparty: the package
    by_group = {g: {"queries": int((groups == g).sum()),
                    "ndcg@10": {k: metrics(found[k][groups == g])["ndcg@10"] for k in ("rrf", "off", "on")},
                    "on_minus_off_ndcg@10": bootstrap(found["off"][groups == g], found["on"][groups == g])["ndcg@10"]}
                for g in sorted(set(groups.tolist()))}
    return {
        "documents": len(bn.data.items), "queries": len(bn.queries),
        "systems": {k: metrics(v) for k, v in found.items()},
        "on_minus_off": bootstrap(found["off"], found["on"]),
        "off_minus_rrf": bootstrap(found["rrf"], found["off"]),
        "on_minus_rrf": bootstrap(found["rrf"], found["on"]),
        "top10_changed": round(float(np.mean([a != b for a, b in zip(lists["off"], lists["on"])])), 4),
        "relevant_rank_changed": round(float(np.mean(found["off"] != found["on"])), 4),
        "retriever_ms": {k: summarize(v) for k, v in times.items()},
        "by_group": by_group,
        "ranks": {k: v.tolist() for k, v in found.items()},  # per query: rank of the relevant document, 0 = missed
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpora", default="man,thirdparty")
    ap.add_argument("--name", default="held_out")
    args = ap.parse_args(argv)

    import yaml

    from contextgraph.embedders.pipeline import build_pipeline

    started = perf()
    pipeline = build_pipeline(bench_settings(tempfile.mkdtemp(prefix="cg-held-out-")))
    constitution = yaml.safe_load((Path(__file__).resolve().parents[1] / "constitution.yaml").read_text())
    base = RetrievalSettings.from_constitution(constitution)
    results: dict[str, Any] = {"constitution_head_rescorer": base.head_rescorer, "corpora": {}}
    for name in args.corpora.split(","):
        bn = Bench(name, pipeline, base, lambda m: print(m, flush=True))
        results["corpora"][name] = r = evaluate(bn, base)
        bn.close()
        print(f"\n[{name}] {r['documents']} docs; top 10 changed by the re-scorer on {r['top10_changed']:.1%} of "
              f"queries, the relevant document's rank on {r['relevant_rank_changed']:.1%}")
        for sys_name, m in r["systems"].items():
            print(f"  {sys_name:<5} nDCG {m['ndcg@10']:.4f}  R@10 {m['recall@10']:.4f}  MRR {m['mrr@10']:.4f}")
        for key in ("on_minus_off", "off_minus_rrf", "on_minus_rrf"):
            d = r[key]
            print(f"  {key:<13} nDCG {d['ndcg@10']}  R@10 {d['recall@10']}  MRR {d['mrr@10']}  [lo, hi, mean]")
        for g, m in r["by_group"].items():
            print(f"  {g:<12} {m['queries']:>4} queries  nDCG rrf {m['ndcg@10']['rrf']:.4f} "
                  f"off {m['ndcg@10']['off']:.4f} "
                  f"on {m['ndcg@10']['on']:.4f}  on − off {m['on_minus_off_ndcg@10']}")
        print(f"  Retriever.run median ms: off {r['retriever_ms']['off']['median']:.1f}, "
              f"on {r['retriever_ms']['on']['median']:.1f}", flush=True)
    results["wall_s"] = round(perf() - started, 1)
    write_result(args.name, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
