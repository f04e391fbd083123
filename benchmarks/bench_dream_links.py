"""Dreams that find links (docs/engine.md#rem): on the planted set of benchmarks/dream_links_corpus.py (topics of
six notes naming one thing in different words, and distractors sharing generic words), what a forced full dream
links, and whether retrieval of the planted notes gets worse after it.

For each half (tune: the thresholds were chosen on it; test: reported), a fresh store:
1. --background prose documents (benchmarks/_corpora.py, cached fingerprints) stored with their store-time
   edges, so that the planted notes sit among several hundred unrelated memories with their own names; then the
   planted notes through store_memory's own path (MemoryService.store: real store-time edge rules).
2. Before: which planted pairs the store-time rules linked. Retrieval: for each topic, "what do we know about
   <name>" — recall@6 of its notes and MRR of the first.
3. --sweep: every pair the REM proposal step considers (no thresholds), with its evidence and walk rank, and
   precision/recall over a grid of (min_evidence, max_walk_rank): how the constitution's values were chosen.
4. A forced full dream (short phases), then: new dream links among the planted notes — related (same topic),
   cross-topic, topic-distractor — precision = related / all dream links touching a planted note, recall =
   related linked after / related pairs; the links it made among the background; retrieval again.

Run:  .venv/bin/python benchmarks/bench_dream_links.py [--half both] [--background 400] [--sweep]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import itertools
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _corpora import corpus, embed_corpus, refresh_lexical
from _stats import write_result
from _workload import bench_settings
from bench_dream import fill
from dream_links_corpus import TEST, TUNE, Half

from contextgraph.app import build_app
from contextgraph.services.dreams import dream_links, dream_phases
from contextgraph.services.memory.memory_payloads import NewMemory

WHY = "planted for the dream links benchmark"
GRID_EVIDENCE = (0.0, 1.0, 2.0, 3.0)
GRID_RANK = (1.0, 0.5, 0.3, 0.2, 0.15, 0.1, 0.07, 0.05, 0.03)


def graph_links(app: Any) -> dict[frozenset[str], set[str]]:
    """{pair: provenances of its non-Temporal edges}."""

    def read(g: Any) -> dict[frozenset[str], set[str]]:
        out: dict[frozenset[str], set[str]] = {}
        for r in g.recent(100_000, None, None):
            for e in g.edges_out(r.id):
                if e.type != "Temporal":
                    out.setdefault(frozenset((e.source, e.target)), set()).add(e.provenance or "store")
        return out

    return app.services.storage.store.graph_read(read)


def classify(pairs: list[frozenset[str]], topic_of: dict[str, str | None]) -> dict[str, int]:
    """Counts of pairs touching a planted note: same topic, two topics, a topic note and a distractor, two
    distractors; and pairs among the background."""
    out = {"related": 0, "cross_topic": 0, "topic_distractor": 0, "distractor_distractor": 0, "planted_background": 0,
           "background": 0}
    for pair in pairs:
        a, b = sorted(pair)
        if a not in topic_of and b not in topic_of:
            out["background"] += 1
        elif a not in topic_of or b not in topic_of:
            out["planted_background"] += 1
        elif topic_of[a] is not None and topic_of[a] == topic_of[b]:
            out["related"] += 1
        elif topic_of[a] is not None and topic_of[b] is not None:
            out["cross_topic"] += 1
        elif topic_of[a] is None and topic_of[b] is None:
            out["distractor_distractor"] += 1
        else:
            out["topic_distractor"] += 1
    return out


async def retrieval(app: Any, half: Half, ids_of: dict[str, str]) -> dict[str, float]:
    recalls, rrs = [], []
    for topic in half.topics:
        wanted = {ids_of[t] for t in topic.notes}
        found = await app.services.memory.search(f"what do we know about {topic.name}", top_k=len(topic.notes),
                                                 min_similarity=0.0, modality=None, breakdown=False)
        got = [f.record.id for f in found.retrieval.found]
        recalls.append(len(wanted & set(got)) / len(wanted))
        rrs.append(next((1.0 / (k + 1) for k, i in enumerate(got) if i in wanted), 0.0))
    return {"recall_at_6": round(sum(recalls) / len(recalls), 4), "mrr": round(sum(rrs) / len(rrs), 4)}


def sweep(app: Any, topic_of: dict[str, str | None]) -> dict[str, Any]:
    store = app.services.storage.store
    dream = app.services.dream
    ball = dream_phases.build_ball(store, int(dream.walks["sample"]), int(dream.rem["dimensions"]),
                                   float(dream.rem["curvature"]))
    assert ball is not None
    loose = dataclasses.replace(dream.link_settings, min_evidence=0.0, max_walk_rank=1.0, max_links=100_000)
    planned = dream_links.plan(store, ball, loose, float(dream.rem["curvature"]))
    planted = [k for k in planned if k.source in topic_of or k.target in topic_of]
    related = sum(1 for a, b in itertools.combinations(topic_of, 2) if topic_of[a] and topic_of[a] == topic_of[b])
    grid = []
    for ev, rank in itertools.product(GRID_EVIDENCE, GRID_RANK):
        kept = [k for k in planted if k.evidence >= ev and k.walk_rank <= rank]
        good = sum(1 for k in kept if topic_of.get(k.source) and topic_of.get(k.source) == topic_of.get(k.target))
        grid.append({"min_evidence": ev, "max_walk_rank": rank, "links": len(kept), "related": good,
                     "precision": round(good / len(kept), 4) if kept else None,
                     "recall": round(good / related, 4) if related else None,
                     "background_links": sum(1 for k in planned if k.evidence >= ev and k.walk_rank <= rank
                                             and k.source not in topic_of and k.target not in topic_of)})
    return {"candidates_planted": [{"related": bool(topic_of.get(k.source))
                                    and topic_of.get(k.source) == topic_of.get(k.target),
                                    "shared": list(k.shared), "evidence": k.evidence,
                                    "walk_rank": round(k.walk_rank, 3)} for k in planted],
            "grid": grid}


async def run_half(name: str, half: Half, args: argparse.Namespace) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix=f"cg-dream-links-{name}-"))
    app = build_app(bench_settings(home, CONTEXTGRAPH_AUTO_DREAM="0"), configure_logging=False)
    pipeline = await app.services.perception.pipeline()
    await app.services.storage.ready()
    if args.background:
        data = corpus("prose")
        data.items = data.items[: args.background]
        emb = embed_corpus(data, pipeline)
        refresh_lexical(data, emb, pipeline)
        fill(app, data, emb, pipeline, lambda *_: None)
    topic_of: dict[str, str | None] = {}
    ids_of: dict[str, str] = {}
    for text, topic in half.notes():
        stored = await app.services.memory.store(NewMemory(text, WHY, session="planted"))
        topic_of[stored.record.id] = topic
        ids_of[text] = stored.record.id
    related_total = sum(1 for a, b in itertools.combinations(topic_of, 2) if topic_of[a] and topic_of[a] == topic_of[b])
    before = graph_links(app)
    result: dict[str, Any] = {"planted_notes": len(topic_of), "related_pairs": related_total,
                              "background": args.background}
    result["store_time_links"] = classify(list(before), topic_of)
    result["retrieval_before"] = await retrieval(app, half, ids_of)
    if args.sweep:
        result["sweep"] = sweep(app, topic_of)
    dream = app.services.dream
    dream.nrem_seconds, dream.rem_seconds = args.nrem, args.rem
    dream.nrem["cues_per_minute"] = 2400.0
    dream.walks["walks_per_minute"] = 600.0
    await dream.trigger("full", force=True)
    await dream.until_awake()
    report = dream.reports[-1]
    e8 = app.services.storage.e8
    for _ in range(3000):  # the E8 refreshes the dream queued, applied before retrieval is measured again
        if not e8.pending:
            break
        await asyncio.sleep(0.2)
    await app.services.storage.writer.submit(lambda: None)
    after = graph_links(app)
    dreamt = [p for p, prov in after.items() if any(x.startswith("dream") for x in prov) and p not in before]
    counts = classify(dreamt, topic_of)
    touching = sum(counts[k] for k in ("related", "cross_topic", "topic_distractor", "distractor_distractor",
                                       "planted_background"))
    linked_related = classify(list(after), topic_of)["related"]
    result["dream"] = {"new_links": counts, "precision": round(counts["related"] / touching, 4) if touching else None,
                       "recall_before": round(result["store_time_links"]["related"] / related_total, 4),
                       "recall_after": round(linked_related / related_total, 4),
                       "shared_name_edges": len(report["shared_name_edges"]),
                       "blind_spot_edges": len(report["blind_spot_edges"]),
                       "edges_strengthened": report["edges_strengthened"], "aborted": report["aborted"]}
    result["retrieval_after"] = await retrieval(app, half, ids_of)
    app.close()
    return result


async def run(args: argparse.Namespace) -> dict[str, Any]:
    halves = {"tune": TUNE, "test": TEST}
    names = list(halves) if args.half == "both" else [args.half]
    out = {}
    for name in names:
        out[name] = await run_half(name, halves[name], args)
        r = out[name]
        print(f"[{name}] store-time links {r['store_time_links']}")
        print(f"[{name}] dream: {r['dream']}")
        print(f"[{name}] retrieval before {r['retrieval_before']} after {r['retrieval_after']}")
        if args.sweep:
            for row in r["sweep"]["grid"]:
                print(f"[{name}]   {row}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--half", choices=("tune", "test", "both"), default="both")
    ap.add_argument("--background", type=int, default=400, help="prose documents stored before the planted notes")
    ap.add_argument("--nrem", type=float, default=2.0, help="NREM seconds")
    ap.add_argument("--rem", type=float, default=3.0, help="REM seconds")
    ap.add_argument("--sweep", action="store_true", help="precision/recall over a grid of the two thresholds")
    ap.add_argument("--name", default="dream_links")
    args = ap.parse_args()
    write_result(args.name, asyncio.run(run(args)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
