"""ATC under a simulated agent with known relevance (issue 35.2): where the adaptive thresholds settle when the
agent's calls are the only evidence, and whether they settle inside their bounds.

A store of STORE_DOCS Debian package descriptions (benchmarks/_corpora.py's prose corpus, fingerprints from its
cache; not the stdlib). Queries, each run through the real search_graph tool (an App on the store, top_k 10):
  related  the synopsis of a stored description: that one memory is relevant, every other result is not
  near     the synopsis of a description that is NOT stored: nothing found is relevant
The queries are split into a tune and a test half (seed 35); each half runs in its own fresh store and App,
so the thresholds start at their priors in both. The agent, seeded too, after each search:
  - finds the relevant result when it is in the top 10, hydrates it (hydrate_citation with its [node_…] tag)
    and, one time in three, boosts it (boost_importance +0.05);
  - marks each irrelevant result ranked above it `not_relevant` (update_synergy_matrix) with probability 0.4;
    on a query where nothing relevant is found, the top result, with the same probability;
  - leaves every other result unused.
Between two searches the simulated clock moves 90 s (an agent's turn), so results offered 20 searches ago pass
ATC's 30-minute pending window. Reported per half: each threshold's final θ against its bounds, its range over
the second half of the run (a swing), how often it touched a bound, the pairs it learned from, and the
reference θ: the lowest-cost decision `score ≥ θ` over every offered result's true label (maps.
best_threshold_reference), what a perfect judge of relevance would choose; how well E1 similarity and a
workspace candidate's r_m separate relevant from irrelevant results (AUC); each search's ranked results (corpus
indices), to compare the ranking between two versions of the code. Thresholds the constitution no longer has
(θ_opt, θ_acc) are reported when the code under test still has them, so a run of the old code compares.
Results and the before/after: benchmarks/HISTORY.md, "ATC under a simulated agent".

Run:  .venv/bin/python benchmarks/bench_thresholds.py [--docs 1000] [--searches 120] [--unused-weight W]
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np
from _corpora import CorpusData, corpus, embed_corpus, refresh_lexical
from _stats import write_result
from _workload import bench_settings

SEED = 35
TURN_SECONDS = 90.0  # the simulated time between two searches
RELATED_SHARE = 0.7  # the rest are near queries: the subject is stored, the answer is not
P_NOT_RELEVANT = 0.4  # the chance the agent marks an irrelevant result it read not_relevant
P_BOOST = 1 / 3
WATCHED = ("theta_opt", "theta_acc", "theta_warn", "theta_kur", "theta_dup")  # those the code under test has


class SimClock:
    def __init__(self, start: float) -> None:
        self.t = start

    def __call__(self) -> float:
        return self.t


def fill(data: CorpusData, emb: Any, chosen: list[int], home: Path) -> dict[int, str]:
    """The chosen documents stored with their cached fingerprints; corpus index → memory id."""
    from contextgraph.storage.base import MemoryRecord
    from contextgraph.storage.lmdb_store import LmdbStore

    store = LmdbStore(home / "store", sync=False)
    ids: dict[int, str] = {}
    try:
        for j, i in enumerate(chosen):
            ts = emb.t0 - len(chosen) + j
            ids[i] = uuid.uuid4().hex
            store.put(MemoryRecord(id=ids[i], content=data.items[i].document, rationale="threshold benchmark",
                                   modality=data.modality, session="bench", created_at=ts, updated_at=ts),
                      emb.docs[i])
    finally:
        store.close()
    return ids


async def agent_turn(app: Any, ctx: Any, rng: random.Random, query: str, relevant: str | None,
                     offered: dict[str, list[tuple[float, bool]]], evidence: dict[str, int],
                     rankings: list[list[str]]) -> None:
    """One search and what the agent does with its results (see the module docstring)."""
    call = app.dispatcher.call
    results = (await call("search_graph", {"query": query, "top_k": 10}, ctx)).payload["results"]
    rankings.append([r["id"] for r in results])
    offered["similarity"].extend((float(r["similarity"]), r["id"] == relevant) for r in results)
    found = {r["id"] for r in results}
    offered["r_m"].extend((float(c["r"]), c["memory_id"] == relevant)
                          for c in app.services.workspace.status()["candidates"] if c["memory_id"] in found)
    rank = next((k for k, r in enumerate(results) if r["id"] == relevant), None)
    judged = results[:rank] if rank is not None else results[:1]
    for r in judged:
        if rng.random() < P_NOT_RELEVANT:
            anchor = relevant if rank is not None else r["id"]
            await call("update_synergy_matrix", {"query_vector_id": anchor, "result_vector_id": r["id"],
                                                 "feedback": "not_relevant"}, ctx)
            evidence["not_relevant"] += 1
    if rank is not None and relevant is not None:
        await call("hydrate_citation", {"citation_tag": f"[node_{relevant}]"}, ctx)
        evidence["hydrated"] += 1
        if rng.random() < P_BOOST:
            await call("boost_importance", {"node_id": relevant, "delta": 0.05,
                                            "rationale": "the answer to what I searched for"}, ctx)
            evidence["boosted"] += 1


def auc(pairs: list[tuple[float, bool]]) -> float | None:
    """How well a score separates relevant from irrelevant results: P(a relevant one scores higher), ties half."""
    pos = np.array([s for s, y in pairs if y])
    neg = np.array([s for s, y in pairs if not y])
    if not pos.size or not neg.size:
        return None
    wins = (pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean()
    return round(float(wins), 4)


def trajectory_summary(values: list[float], lo: float, hi: float) -> dict[str, Any]:
    arr = np.asarray(values)
    late = arr[len(arr) // 2:]
    at_bound = (np.isclose(arr, lo, atol=1e-6) | np.isclose(arr, hi, atol=1e-6))
    return {"final": round(float(arr[-1]), 4), "bounds": [lo, hi],
            "at_bound": bool(at_bound[-1]), "searches_at_a_bound": int(at_bound.sum()),
            "second_half_range": [round(float(late.min()), 4), round(float(late.max()), 4)]}


async def run_half(home: Path, queries: list[tuple[str, str | None]], seed: int,
                   unused_weight: float | None, corpus_index: dict[str, int]) -> dict[str, Any]:
    from contextgraph.app import build_app
    from contextgraph.calibration.maps import best_threshold_reference

    app = build_app(bench_settings(home))
    thresholds = app.services.thresholds
    clock = SimClock(1_800_000_000.0)
    thresholds.clock = clock  # the pending window runs on simulated time
    if unused_weight is not None and hasattr(thresholds.outcomes, "unused_weight"):
        thresholds.outcomes.unused_weight = unused_weight  # the constitution's atc.pending.unused_weight otherwise
    rng = random.Random(seed)
    offered: dict[str, list[tuple[float, bool]]] = {"similarity": [], "r_m": []}
    rankings: list[list[str]] = []  # each search's ranked ids: the ranking must not depend on ATC's state
    evidence = {"hydrated": 0, "boosted": 0, "not_relevant": 0}
    paths: dict[str, list[float]] = {name: [] for name in WATCHED if name in thresholds.specs}
    try:
        ctx = app.tool_context("bench")
        for query, relevant in queries:
            await agent_turn(app, ctx, rng, query, relevant, offered, evidence, rankings)
            clock.t += TURN_SECONDS
            thresholds.expire()
            for name in paths:
                paths[name].append(thresholds.value(name))
        scores = np.array([s for s, _ in offered["similarity"]])
        labels = np.array([y for _, y in offered["similarity"]], dtype=np.float64)
        out: dict[str, Any] = {"searches": len(queries), "related": sum(r is not None for _, r in queries),
                               "agent": evidence, "offered": len(scores), "relevant_found": int(labels.sum()),
                               "auc": {k: auc(v) for k, v in offered.items()}, "thresholds": {},
                               "rankings": [[corpus_index[m] for m in ranked] for ranked in rankings]}
        out["rankings_sha256"] = hashlib.sha256(repr(out["rankings"]).encode()).hexdigest()
        for name in paths:
            spec = thresholds.spec(name)
            row = trajectory_summary(paths[name], spec.lo, spec.hi)
            row["pairs"] = thresholds.outcomes.count(name, "General")
            if name in ("theta_opt", "theta_acc", "theta_warn"):
                row["reference"] = round(best_threshold_reference(scores, labels, spec.target, spec.lo, spec.hi), 4)
            out["thresholds"][name] = row
        return out
    finally:
        app.close()


def run(args: argparse.Namespace) -> dict[str, Any]:
    import anyio

    from contextgraph.embedders.pipeline import build_pipeline

    rng = random.Random(SEED)
    pipeline = build_pipeline(bench_settings(tempfile.mkdtemp(prefix="cg-atc-model-")))
    data = corpus("prose")
    emb = embed_corpus(data, pipeline)
    refresh_lexical(data, emb, pipeline)
    order = list(range(len(data.items)))
    rng.shuffle(order)
    stored, held_out = order[: args.docs], order[args.docs:]
    n_related = round(2 * args.searches * RELATED_SHARE)
    picked = [(i, True) for i in rng.sample(stored, n_related)]
    picked += [(i, False) for i in rng.sample(held_out, 2 * args.searches - n_related)]
    rng.shuffle(picked)
    report: dict[str, Any] = {"store_docs": args.docs, "turn_seconds": TURN_SECONDS}
    for h, half in enumerate(("tune", "test")):
        if half not in args.halves:
            continue
        home = Path(tempfile.mkdtemp(prefix=f"cg-atc-{half}-"))
        ids = fill(data, emb, stored, home)
        queries = [(data.items[i].query, ids[i] if is_stored else None)
                   for i, is_stored in picked[h::2]]
        report[half] = anyio.run(run_half, home, queries, SEED + h, args.unused_weight,
                                 {m: i for i, m in ids.items()})
    return report


def main() -> int:
    global P_NOT_RELEVANT
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=1000, help="documents stored")
    parser.add_argument("--searches", type=int, default=120, help="searches per half")
    parser.add_argument("--label", default="thresholds", help="results file name")
    parser.add_argument("--halves", nargs="+", default=["tune", "test"], choices=["tune", "test"])
    parser.add_argument("--unused-weight", type=float, default=None,
                        help="overrides the constitution's atc.pending.unused_weight")
    parser.add_argument("--not-relevant", type=float, default=P_NOT_RELEVANT,
                        help="the chance the agent marks an irrelevant result it read not_relevant")
    args = parser.parse_args()
    P_NOT_RELEVANT = args.not_relevant
    report = run(args)
    for half in args.halves:
        r = report[half]
        print(f"[{half}] {r['searches']} searches ({r['related']} related), agent {r['agent']}, "
              f"relevant found {r['relevant_found']}/{r['related']}, AUC {r['auc']}, "
              f"rankings {r['rankings_sha256'][:12]}")
        for name, row in r["thresholds"].items():
            print(f"  {name:10s} {row}")
    write_result(args.label, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
