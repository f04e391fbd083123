"""Precision and recall of the Causal edges made on store, before and after the explicit-link rule
(docs/storage.md#explicit-causal-links), on causal_links_corpus.py's tune and test halves.

Each half goes into a fresh store through store_memory's own path (MemoryService.store, the real transformer),
one session per case, the cases in order: the other cases of the half are the distractors every store meets.
An edge counts when its two notes and its direction are the gold's; an edge between cases, or reversed, is a
false positive. "before" is the E5 half rule alone (the edges without a cue as provenance: the rule that was
already there); "after" adds the explicit-link edges. The clause rule's inputs are recorded once with its
thresholds open and replayed for every grid point (its candidates do not depend on its thresholds), so the
grid costs no further stores; the thresholds with the best F1 on the tune half (ties: the stricter) are then
reported on the test half.

Run:  .venv/bin/python benchmarks/bench_causal_links.py
"""

from __future__ import annotations

import asyncio
import itertools
import math
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _stats import write_result
from _workload import bench_settings
from causal_links_corpus import Case, split

from contextgraph.app import build_app
from contextgraph.services.memory.causal_links import LinkRule
from contextgraph.services.memory.memory_payloads import NewMemory

WHY = "benchmark: explicit causal links"
MIN_COSINE = [round(0.5 + 0.05 * i, 2) for i in range(8)]  # 0.50 … 0.85
MIN_MARGIN = [round(0.05 * i, 2) for i in range(7)]  # 0 … 0.30

Pair = tuple[str, str]


class Recorder(LinkRule):
    """The product's rule with its thresholds open, keeping each store's clause inputs for the replay."""

    pending: Any = None

    def clause_matches(self, spans, cause, effect, uncued):  # type: ignore[override]
        uncued = list(uncued)
        Recorder.pending = (spans, cause, effect, uncued)
        return super().clause_matches(spans, cause, effect, uncued)


TEXT: dict[str, str] = {}  # memory id → its note, for the listing of wrong and missed edges


async def fill(cases: list[Case]) -> tuple[set[Pair], set[Pair], set[Pair], list[tuple[str, Any]]]:
    """(gold, half-rule edges, continuation edges, [(memory id, clause inputs)]) of one half in a fresh store."""
    with tempfile.TemporaryDirectory(prefix="bench-causal-links-") as home:
        app = build_app(bench_settings(Path(home)))
        try:
            memory = app.services.memory
            product = memory.edge_rules.links
            memory.edge_rules.links = Recorder(-math.inf, -math.inf, product.continuation_window,
                                               product.continuation_weight)
            gold: set[Pair] = set()
            recorded: list[tuple[str, Any]] = []
            ids: list[str] = []
            for k, case in enumerate(cases):
                mine = []
                for note in case.notes:
                    Recorder.pending = None
                    stored = await memory.store(NewMemory(note, WHY, session=f"case-{k}"))
                    mine.append(stored.record.id)
                    TEXT[stored.record.id] = note
                    if Recorder.pending is not None:
                        recorded.append((stored.record.id, Recorder.pending))
                gold |= {(mine[a], mine[b]) for a, b in case.edges}
                ids += mine
            edges = app.services.storage.store.graph_read(
                lambda g: [e for n in ids for e in g.edges_out(n) if e.type == "Causal"])
            halves = {(e.source, e.target) for e in edges if not e.provenance}
            cued = {(e.source, e.target): e.provenance for e in edges if e.provenance}
            # a continuation edge comes from the session's previous memory; a clause edge is replayed below
            continuation = {pair for pair, cue in cued.items() if _is_continuation(pair, ids, cases)}
            return gold, halves, continuation, recorded
        finally:
            app.close()


def _is_continuation(pair: Pair, ids: list[str], cases: list[Case]) -> bool:
    from contextgraph.services.memory.causal_links import continuation_cue

    notes = [n for case in cases for n in case.notes]
    return continuation_cue(notes[ids.index(pair[1])]) is not None and ids.index(pair[0]) == ids.index(pair[1]) - 1


def replay(recorded: list[tuple[str, Any]], min_cosine: float, min_margin: float) -> set[Pair]:
    rule = LinkRule(min_cosine, min_margin, 0.0, 0.0)
    out = set()
    for memory_id, (spans, cause, effect, uncued) in recorded:
        for m in rule.clause_matches(spans, cause, effect, uncued):
            out.add((m.other, memory_id) if m.direction == "in" else (memory_id, m.other))
    return out


def score(made: set[Pair], gold: set[Pair]) -> dict[str, Any]:
    tp = len(made & gold)
    precision = tp / len(made) if made else 1.0
    recall = tp / len(gold) if gold else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"made": len(made), "gold": len(gold), "right": tp, "precision": round(precision, 3),
            "recall": round(recall, 3), "f1": round(f1, 3)}


async def main() -> dict[str, Any]:
    tune_cases, test_cases = split()
    tune, test = await fill(tune_cases), await fill(test_cases)
    grid = []
    for c, m in itertools.product(MIN_COSINE, MIN_MARGIN):
        gold, halves, continuation, recorded = tune
        grid.append((score(halves | continuation | replay(recorded, c, m), gold)["f1"], c, m))
    best_f1 = max(f for f, _, _ in grid)
    _, c, m = max((g for g in grid if g[0] == best_f1), key=lambda g: (g[1], g[2]))  # ties: the stricter
    out: dict[str, Any] = {"chosen": {"min_cosine": c, "min_margin": m}, "cases": {"tune": len(tune_cases),
                                                                                     "test": len(test_cases)}}
    for name, (gold, halves, continuation, recorded) in (("tune", tune), ("test", test)):
        out[name] = {"before": score(halves, gold),
                     "after": score(halves | continuation | replay(recorded, c, m), gold)}
        print(name, "before", out[name]["before"], "\n     after ", out[name]["after"])
    print("chosen", out["chosen"])
    out["tune_f1_grid"] = {f"{c}/{m}": f for f, c, m in grid}  # min_cosine/min_margin: F1 on the tune half
    for f, c_, m_ in grid:
        print(f"{c_:.2f}/{m_:.2f} {f:.3f}", end="  " if m_ < MIN_MARGIN[-1] else "\n")
    gold, halves, continuation, recorded = test
    made = halves | continuation | replay(recorded, c, m)
    out["test_missed"] = [f"{TEXT[a]} → {TEXT[b]}" for a, b in gold - made]
    out["test_wrong"] = [f"{TEXT[a]} → {TEXT[b]}" for a, b in made - gold]
    print("test missed:", *out["test_missed"], sep="\n  ")
    print("test wrong:", *out["test_wrong"], sep="\n  ")
    return out


if __name__ == "__main__":
    write_result("causal_links", asyncio.run(main()))
