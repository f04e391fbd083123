"""Where search_graph says that nothing relevant was found (issue 38.6): the E1 similarity below which every
result of a search marks it `nothing_relevant` (constitution retrieval.relevance_floor), chosen on a tune half of
related and unrelated queries and reported on the test half.

Two stores, each of STORE_DOCS documents of one corpus (benchmarks/_corpora.py, fingerprints from its cache):
  prose  Debian package descriptions        code  Python standard-library functions
Queries, each run through the real search_graph tool (an App on the store, top_k 10), in a seeded random order:
  related    the query of a stored document (its synopsis, its docstring's first sentence): something relevant
             is stored
  unrelated  OFF_TOPIC: everyday questions (cooking, travel, sport, health, history ...) that nothing stored
             is about, as a user types them into a client whose memory holds only project knowledge
  near       the query of a document of the same corpus that is NOT stored: the subject is there, the answer
             is not
  foreign    queries of the other corpus (a Debian synopsis against the stdlib, a docstring against package
             descriptions): often about something the store does hold (a Python library's package next to the
             stdlib module), so neither related nor unrelated
Near and foreign are ambiguous by construction: left out of the choice and of precision/recall, and reported
to show what the flag does on them.
Per query: the best similarity among the results (what the flag reads). The floor is the threshold that maximises
the flag's F1 (positive = unrelated) on the tune half of both stores together; precision and recall of the flag
on the test half, per store and together, with the related queries' false-flag rate.

Run:  .venv/bin/python benchmarks/bench_relevance_floor.py [--docs 1000] [--related 300] [--foreign 300]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np
from _corpora import CorpusData, corpus, embed_corpus, refresh_lexical
from _stats import write_result
from _workload import bench_settings

SEED = 38
OFF_TOPIC = [  # 120 everyday questions: nothing a store of code or package descriptions is about
    "What is the capital of Mongolia?", "How long should I boil an egg for a soft yolk?",
    "Who won the football world cup in 1998?", "Recommend a good science fiction novel for a long flight",
    "What time does the bakery on the corner open on Sundays?", "How many calories are in a banana?",
    "Best way to remove a red wine stain from a carpet", "When is my dentist appointment next month?",
    "What is the weather forecast for Lisbon this weekend?", "How do I train a puppy to sit?",
    "Translate good morning into Japanese", "What should I cook for dinner with leftover rice and eggs?",
    "How tall is the Eiffel Tower?", "Tips for growing tomatoes on a balcony", "Who painted the Mona Lisa?",
    "How far is the moon from the earth?", "What are the rules of chess castling?",
    "Plan a three day trip to Kyoto in autumn", "How do I knit a scarf for beginners?",
    "Why do cats purr when they are happy?", "Which wine goes well with grilled salmon?",
    "What is a good stretching routine after running?", "How do I change a flat bicycle tyre?",
    "Birthday gift ideas for my grandmother", "What is the plot of Hamlet?", "How do bees make honey?",
    "Suggest a name for a golden retriever puppy", "What is the boiling point of water on Everest?",
    "How do I make sourdough starter from scratch?", "Which planets can be seen without a telescope tonight?",
    "How much should I tip a taxi driver in New York?", "What are the symptoms of a common cold?",
    "Lyrics of a famous Beatles song about yesterday", "How do I fold a fitted sheet neatly?",
    "What year did the Berlin wall fall?", "Explain the offside rule in football",
    "How to keep basil fresh in the fridge", "What is the population of Canada?",
    "Recommend a board game for a family of four", "How long does it take to walk across the Golden Gate bridge?",
    "What is the difference between a crocodile and an alligator?", "How do I get rid of fruit flies in the kitchen?",
    "Who was the first woman to fly solo across the Atlantic?", "What is a good age to start piano lessons?",
    "How many players are on a rugby union team?", "Which vitamins are in spinach?",
    "Is it safe to swim right after eating?", "How do I make a paper airplane that flies far?",
    "What flowers bloom in early spring?", "Why is the sky blue during the day and red at sunset?",
    "How do I ask for a raise at work politely?", "What is the tallest mountain in Africa?",
    "Ideas for a rainy afternoon with small children", "How long do tortoises live?",
    "What are the main ingredients of a margherita pizza?", "When do the clocks change for daylight saving?",
    "How do I clean a cast iron pan?", "Who wrote Pride and Prejudice?", "What is a healthy resting heart rate?",
    "How do I get a passport renewed quickly?", "What are the colours of the rainbow in order?",
    "Best beaches to visit in Portugal in summer", "How do I stop my glasses from fogging up?",
    "What does a sommelier do?", "How many bones are in the human body?",
    "Which city hosted the 2012 Olympic games?", "How can I fall asleep faster at night?",
    "What is the recipe for a classic French omelette?", "Why do leaves change colour in autumn?",
    "How do I write a condolence card?", "What is the speed of a cheetah?", "Where do penguins live?",
    "How to iron a shirt without creases", "What is the national dish of Hungary?",
    "How do I prepare for a job interview?", "Which languages are spoken in Switzerland?",
    "How often should I water a cactus?", "What causes thunder?", "Songs to play at a wedding reception",
    "How do I make cold brew coffee at home?", "Who discovered penicillin?",
    "What is the best time of year to visit Iceland?", "How do I remove rust from garden tools?",
    "How many teaspoons are in a tablespoon?", "What is the meaning of the idiom break a leg?",
    "How do I teach a child to ride a bike?", "Which fruits are in season in October?",
    "Where is the Great Barrier Reef?", "How do I brew green tea without it tasting bitter?",
    "What does a marathon training plan look like?", "Why do onions make you cry?",
    "How do I politely decline a party invitation?", "What is the longest river in South America?",
    "How do I repot an orchid?", "How many hours of sleep does a teenager need?",
    "What is the story of the Trojan horse?", "How do I make pancakes fluffy?",
    "What are good exercises for lower back pain?", "Which dog breeds are good with children?",
    "How long is a flight from London to Sydney?", "What do I need for a weekend camping trip?",
    "How do I get candle wax off a tablecloth?", "Who invented the telephone?",
    "How do I save money on groceries each week?", "What is the difference between weather and climate?",
    "How do I carve a pumpkin for Halloween?", "What are the phases of the moon?",
    "Where can I see the northern lights?", "How do I make a budget for a family holiday?",
    "What is the origin of the Olympic rings?", "How do I care for a sourdough bread crust?",
    "What is the best way to learn to swim as an adult?", "How do hummingbirds hover?",
    "Which museums in Paris are free on Sundays?", "How do I thaw a frozen turkey safely?",
    "What is the etiquette for a Japanese tea ceremony?", "How do I keep my houseplants alive in winter?",
    "How do I descale a kettle?", "What is the story behind Valentine's Day?", "How many moons does Jupiter have?",
]


def fill(data: CorpusData, emb: Any, chosen: list[int], home: Path) -> None:
    """The chosen documents into an LMDB store in `home`, with their cached fingerprints (as bench_retrieval_corpora
    stores them); the App opened on `home` builds its indexes from it."""
    from contextgraph.storage.base import MemoryRecord
    from contextgraph.storage.lmdb_store import LmdbStore

    store = LmdbStore(home / "store", sync=False)
    n = len(chosen)
    try:
        for j, i in enumerate(chosen):
            ts = emb.t0 - n + j
            store.put(MemoryRecord(id=uuid.uuid4().hex, content=data.items[i].document, rationale="relevance floor",
                                   modality=data.modality, session="bench", created_at=ts, updated_at=ts),
                      emb.docs[i])
    finally:
        store.close()


async def best_similarities(home: Path, queries: list[str]) -> list[float]:
    from contextgraph.app import build_app

    app = build_app(bench_settings(home))
    try:
        ctx = app.tool_context("bench")
        best = []
        for text in queries:
            outcome = await app.dispatcher.call("search_graph", {"query": text, "top_k": 10}, ctx)
            best.append(max((r["similarity"] for r in outcome.payload["results"]), default=0.0))
        return best
    finally:
        app.close()


def flag_quality(best: np.ndarray, unrelated: np.ndarray, floor: float) -> dict[str, float]:
    flagged = best < floor
    tp = int((flagged & unrelated).sum())
    fp = int((flagged & ~unrelated).sum())
    fn = int((~flagged & unrelated).sum())
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": round(precision, 4), "recall": round(recall, 4), "f1": round(f1, 4),
            "related_flagged": round(fp / max(1, int((~unrelated).sum())), 4), "n": len(best),
            "n_unrelated": int(unrelated.sum())}


def choose_floor(best: np.ndarray, unrelated: np.ndarray) -> tuple[float, list[tuple[float, float]]]:
    """The threshold (a multiple of 0.01) with the best F1; ties go to the lower floor (fewer false flags)."""
    curve = [(round(t, 2), flag_quality(best, unrelated, t)["f1"]) for t in np.arange(0.0, 0.8, 0.01)]
    top = max(f1 for _, f1 in curve)
    return next(t for t, f1 in curve if f1 == top), curve


def run(args: argparse.Namespace) -> dict[str, Any]:
    import anyio

    from contextgraph.embedders.pipeline import build_pipeline

    rng = random.Random(SEED)
    pipeline = build_pipeline(bench_settings(tempfile.mkdtemp(prefix="cg-floor-model-")))
    corpora: dict[str, tuple[CorpusData, Any]] = {}
    for name in ("prose", "code"):
        data = corpus(name)
        emb = embed_corpus(data, pipeline)
        refresh_lexical(data, emb, pipeline)
        corpora[name] = (data, emb)
    rows: list[dict[str, Any]] = []
    for name, other in (("prose", "code"), ("code", "prose")):
        data, emb = corpora[name]
        order = list(range(len(data.items)))
        rng.shuffle(order)
        stored, held_out = order[: args.docs], order[args.docs:]
        queries = [(data.items[i].query, "related") for i in rng.sample(stored, args.related)]
        queries += [(data.items[i].query, "near") for i in rng.sample(held_out, args.related)]
        foreign = corpora[other][0].items
        queries += [(foreign[i].query, "foreign") for i in rng.sample(range(len(foreign)), args.foreign)]
        queries += [(q, "unrelated") for q in OFF_TOPIC]
        rng.shuffle(queries)
        home = Path(tempfile.mkdtemp(prefix=f"cg-floor-{name}-"))
        fill(data, emb, stored, home)
        started = time.perf_counter()
        best = anyio.run(best_similarities, home, [q for q, _ in queries])
        print(f"[{name}] {args.docs} stored, {len(queries)} searches in {time.perf_counter() - started:.0f} s")
        split = np.random.default_rng(SEED).permutation(len(queries)) < len(queries) // 2
        rows += [{"store": name, "query": q, "label": label, "best": b, "half": "tune" if s else "test"}
                 for (q, label), b, s in zip(queries, best, split)]

    def arrays(**where: str) -> tuple[np.ndarray, np.ndarray]:
        picked = [r for r in rows
                  if r["label"] in ("related", "unrelated") and all(r[k] == v for k, v in where.items())]
        return (np.array([r["best"] for r in picked]), np.array([r["label"] == "unrelated" for r in picked]))

    floor, curve = choose_floor(*arrays(half="tune"))
    report: dict[str, Any] = {"floor": floor, "store_docs": args.docs, "tune_f1_curve": curve, "tune": flag_quality(
        *arrays(half="tune"), floor), "test": flag_quality(*arrays(half="test"), floor)}
    for name in ("prose", "code"):
        report[f"test_{name}"] = flag_quality(*arrays(half="test", store=name), floor)
        for label in ("related", "near", "foreign", "unrelated"):
            values = np.array([r["best"] for r in rows if r["store"] == name and r["label"] == label])
            report[f"best_{name}_{label}"] = {"median": round(float(np.median(values)), 3),
                                              "p10": round(float(np.percentile(values, 10)), 3),
                                              "p90": round(float(np.percentile(values, 90)), 3),
                                              "flagged": round(float((values < floor).mean()), 3)}
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=1000, help="documents stored per corpus")
    parser.add_argument("--related", type=int, default=300, help="related (and near) queries per store")
    parser.add_argument("--foreign", type=int, default=150, help="queries of the other corpus per store")
    report = run(parser.parse_args())
    for key, value in report.items():
        if key != "tune_f1_curve":
            print(f"{key}: {value}")
    write_result("relevance_floor", report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
