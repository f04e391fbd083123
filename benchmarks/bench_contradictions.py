"""critique_context's conflict judge on a labelled set of memory pairs (tests/unit/contradiction_pairs.py): value
conflicts, negations and supersessions against complements, near-topic pairs about different subjects and
restatements, in five domains, split into tune and test halves with a fixed seed.

Each pair goes through the judge critique_context runs (`Critique._judge`) with its real E1 and E11 vectors (the
packaged all-MiniLM-L6-v2 through ONNX Runtime), the first text stored a minute before the second. A pair counts
as flagged when the judge reports it under "conflicts" with a `forget_concept` action (a confirmed conflict); the
ones it reports with `annotate_node` (a possible conflict it cannot confirm) are counted apart. Prints precision
and recall per half and every mistake, so a reader can judge them; "fresh" is a third set of 30 pairs written
after the judge was tuned, in other phrasings, never tuned on.

Run:  .venv/bin/python benchmarks/bench_contradictions.py [--half tune|test|fresh|all]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "unit"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
from contradiction_pairs import FRESH, Pair, split

from contextgraph.config import user_model_cache
from contextgraph.constitution import constitution
from contextgraph.embedders.backbone import default_model_dir, load_backbone
from contextgraph.embedders.base import MemoryInput
from contextgraph.embedders.e01_semantic import SemanticEmbedder
from contextgraph.embedders.e11_entity import EntityEmbedder
from contextgraph.services.introspection.critique import Critique
from contextgraph.storage.base import MemoryRecord


def vectors(texts: list[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each distinct text's unit E1 and E11 vectors, as the pipeline computes them at store time."""
    backbone = load_backbone(default_model_dir(), user_model_cache(os.environ), runtime="onnx")
    inputs = [MemoryInput(encoded=e) for e in backbone.encode(texts)]
    e1 = SemanticEmbedder(backbone).embed_batch(inputs)
    e11 = EntityEmbedder(backbone).embed_batch(inputs)
    return {t: (np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)) for t, a, b in zip(texts, e1, e11)}


def judge(critique: Critique, pair: Pair, vecs: dict[str, tuple[np.ndarray, np.ndarray]]) -> str | None:
    """"confirmed", "possible" or None: what the judge reports for the pair (a stored first, b a minute later)."""
    ra = MemoryRecord(id="a" * 32, content=pair.a, rationale="", modality="text", session="s", created_at=1000.0)
    rb = MemoryRecord(id="b" * 32, content=pair.b, rationale="", modality="text", session="s", created_at=1060.0)
    findings: dict[str, list[dict]] = {"conflicts": []}
    critique._judge(ra, rb, vecs[pair.a], vecs[pair.b], ["conflicts"], findings)  # the pair judge itself
    if not findings["conflicts"]:
        return None
    return "confirmed" if findings["conflicts"][0]["action"]["tool"] == "forget_concept" else "possible"


def report(name: str, pairs: list[Pair], verdicts: list[str | None]) -> None:
    tp = sum(p.conflict and v == "confirmed" for p, v in zip(pairs, verdicts))
    fp = sum(not p.conflict and v == "confirmed" for p, v in zip(pairs, verdicts))
    fn = sum(p.conflict and v != "confirmed" for p, v in zip(pairs, verdicts))
    possible = sum(v == "possible" for v in verdicts)
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    print(f"{name}: {len(pairs)} pairs, {tp + fn} conflicts | flagged {tp + fp}: TP {tp} FP {fp} FN {fn} | "
          f"precision {precision:.3f} recall {recall:.3f} | possible (annotate_node) {possible}")
    for p, v in zip(pairs, verdicts):
        if p.conflict != (v == "confirmed"):
            print(f"    {'FP' if v == 'confirmed' else 'FN'} [{p.kind}/{p.domain}] {p.a!r} / {p.b!r}"
                  + (" (possible)" if v == "possible" else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--half", choices=("tune", "test", "fresh", "all"), default="all")
    args = parser.parse_args()
    tune, test = split()
    halves = {"tune": tune, "test": test, "fresh": list(FRESH)}
    chosen = list(halves) if args.half == "all" else [args.half]
    vecs = vectors(sorted({t for h in chosen for p in halves[h] for t in (p.a, p.b)}))
    critique = Critique(None, constitution())  # type: ignore[arg-type]  # the judge never reads the store
    for h in chosen:
        report(h, halves[h], [judge(critique, p, vecs) for p in halves[h]])


if __name__ == "__main__":
    main()
