"""Does a north star cost a minor topic its memories? Stage 4 on stores with a major topic ≥ 3× a minor one.

Each store holds two topics of third-party text installed with the project (never the standard library or the
manual pages), each item a (question, document) pair whose question finds exactly its document:
    code+notes     major: scikit-learn functions (first docstring sentence → the function without its
                   docstring); minor: installed packages' descriptions (the metadata's summary → the first prose
                   paragraph of its description)
    two-projects   major: scipy functions; minor: the functions of pip's vendored libraries (rich, urllib3, ...)
    late-minor     as code+notes, but the minor topic is stored after the north star was bootstrapped
Every question is asked of the retriever itself (stages 1-5, the query embedded once) with no star, with the star
and stage4="filter" (the earlier stage 4), and with the star and the re-rank at several bounds β. Reported per
topic: recall@10 (the share of questions whose document is in the top 10) and MRR@10, on the tune half (where the
bounds β that keep the minor recall ≥ 0.98× and the major ≥ 1.0× its no-star value are listed) and the test half.
`--size N` adds unlabelled filler (functions of numpy, torch, sympy and others) up to N memories first.

Run: .venv/bin/python benchmarks/bench_purpose_topics.py [--configs code+notes,two-projects,late-minor]
                                                          [--size 10000] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import importlib.metadata as metadata
import json
import os
import random
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _workload import Pair, bench_settings, fill_store, function_pairs

from contextgraph.app import build_app
from contextgraph.services.memory.search import Retriever

SITE = Path(np.__file__).parent.parent
BOUNDS = (0.05, 0.1, 0.2, 0.3)
SEED = 20261127
WHY = "purpose topics benchmark"


def package_descriptions() -> list[Pair]:
    """(summary, first prose paragraph of the long description) of every installed distribution that has both."""
    out, seen = [], set()
    for dist in metadata.distributions():
        meta = dist.metadata
        summary = (meta.get("Summary") or "").strip()
        text = meta.get("Description") or meta.get_payload() or ""  # type: ignore[attr-defined]
        paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", str(text))]
        prose = [p for p in paragraphs if len(p) > 200 and not p.startswith(("[", "!", "<", "|", "..", "#", "`", "*",
                                                                              "-", "=", "Copyright", "Licensed"))]
        if len(summary.split()) >= 3 and prose and meta["Name"] not in seen:
            seen.add(meta["Name"])
            out.append(Pair(summary, prose[0], meta["Name"]))
    return sorted(out, key=lambda p: p.where)


def functions(*roots: str) -> list[Pair]:
    return [p for r in roots for p in function_pairs(root=SITE / r)]


def sample(pairs: list[Pair], n: int, seed: int) -> list[Pair]:
    pairs = [p for p in pairs if len(p.document) < 6000]
    return random.Random(seed).sample(pairs, min(n, len(pairs)))


def config_items(name: str) -> tuple[list[Pair], list[Pair], bool]:
    """(major, minor, whether the minor topic is stored after the star)."""
    notes = package_descriptions()
    if name == "two-projects":
        return (sample(functions("scipy"), 150, SEED),
                sample(functions("pip/_vendor/rich", "pip/_vendor/urllib3", "pip/_vendor/requests"), 50, SEED), False)
    major = sample(functions("sklearn"), 3 * min(50, len(notes)), SEED)
    return major, sample(notes, 50, SEED), name == "late-minor"


def halves(n: int, seed: int) -> tuple[set[int], set[int]]:
    order = np.random.default_rng(seed).permutation(n)
    return set(order[: n // 2].tolist()), set(order[n // 2:].tolist())


async def store_all(app: Any, pairs: list[Pair]) -> list[str]:
    ids = []
    for p in pairs:
        out = await app.dispatcher.call("store_memory", {"content": p.document, "rationale": WHY},
                                        app.tool_context("bench-topics"))
        ids.append(out.payload["id"])
    return ids


def filler(n: int) -> list[tuple[str, str]]:
    pairs = functions("numpy", "torch", "sympy", "hypothesis", "huggingface_hub", "narwhals")
    return [(p.document[:4000], "code") for p in random.Random(SEED).sample(pairs, min(n, len(pairs)))]


async def run_config(name: str, size: int) -> dict[str, Any]:
    major, minor, late = config_items(name)
    with tempfile.TemporaryDirectory(prefix="cg-topics-") as home:
        app = build_app(bench_settings(home), configure_logging=False)
        try:
            return await measure(app, name, major, minor, late, size)
        finally:
            app.close()


async def measure(app: Any, name: str, major: list[Pair], minor: list[Pair], late: bool, size: int) -> dict:
    services = app.services
    pipeline = await services.perception.pipeline()
    started = time.perf_counter()
    extra = max(0, size - len(major) - len(minor))
    if extra:
        fill_store(services.storage, pipeline, filler(extra), start_time=time.time() - 86400 * 30,
                   batched_puts=True, rationale="benchmark filler: third-party functions")
    topics = {"major": major, "minor": minor}
    ids = {"major": await store_all(app, major)}
    if not late:
        ids["minor"] = await store_all(app, minor)
    star = (await app.dispatcher.call("auto_bootstrap_north_star", {}, app.tool_context("bench-topics"))).payload
    if late:
        ids["minor"] = await store_all(app, minor)
    for _ in range(6000):  # the purpose vectors recomputed under the new star
        if not services.purpose.teleology.recompute["running"]:
            break
        await asyncio.sleep(0.1)
    store_s = time.perf_counter() - started
    view = services.purpose.teleology.star_view()
    settings = services.memory.retrieval_settings
    model = services.storage.delta_sc.model(services.storage.store, services.storage.indexes,
                                            {e.space: e for e in pipeline.embedders})
    questions = [(t, i, p.query) for t in topics for i, p in enumerate(topics[t])]
    fps = pipeline.embed([services.perception.draft(q, "text", None) for _, _, q in questions])

    def ranks(purpose: Any, stage4: bool | str, bound: float = settings.stage4_bound) -> list[int | None]:
        retriever = Retriever(services.storage.store, services.storage.indexes, pipeline.embedders,
                              dataclasses.replace(settings, stage4_bound=bound), model.reference_columns, purpose)
        out = []
        for (t, i, q), fp in zip(questions, fps):
            found = [f.record.id for f in retriever.run(fp, 10, query_text=q, stage4=stage4).found]
            out.append(found.index(ids[t][i]) + 1 if ids[t][i] in found else None)
        return out

    variants = {"no star": ranks(None, False), "filter": ranks(view, "filter")}
    for b in BOUNDS:
        variants[f"rerank β={b}"] = ranks(view, "rerank", b)
    split = {t: halves(len(topics[t]), SEED + len(t)) for t in topics}
    table: dict[str, Any] = {}
    for variant, found in variants.items():
        for half, h in (("tune", 0), ("test", 1)):
            for t in topics:
                rows = [r for (tt, i, _), r in zip(questions, found) if tt == t and i in split[t][h]]
                table.setdefault(variant, {}).setdefault(half, {})[t] = {
                    "recall@10": round(sum(r is not None for r in rows) / len(rows), 4),
                    "mrr@10": round(sum(1 / r for r in rows if r) / len(rows), 4), "questions": len(rows)}
    return {"config": name, "memories": services.storage.store.count(), "major": len(major), "minor": len(minor),
            "minor_after_star": late, "fill_and_store_s": round(store_s, 1),
            "star": {"label": star.get("label"), "size": star.get("size"), "share": star.get("share"),
                     "goals": [(g["label"], g["size"]) for g in star.get("goals", [])]},
            "threshold": view.threshold if view else None, "results": table}


def passing(reports: list[dict[str, Any]]) -> list[float]:
    """The bounds β whose tune-half recall holds in every config: minor ≥ 0.98× and major ≥ 1.0× no star."""
    good = []
    for b in BOUNDS:
        ok = True
        for r in reports:
            base, tuned = r["results"]["no star"]["tune"], r["results"][f"rerank β={b}"]["tune"]
            ok &= tuned["minor"]["recall@10"] >= 0.98 * base["minor"]["recall@10"]
            ok &= tuned["major"]["recall@10"] >= base["major"]["recall@10"]
        if ok:
            good.append(b)
    return good


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", default="code+notes,two-projects,late-minor")
    ap.add_argument("--size", type=int, default=0, help="fill each store to this many memories first")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    reports = []
    for name in args.configs.split(","):
        report = asyncio.run(run_config(name, args.size))
        reports.append(report)
        print(json.dumps({k: v for k, v in report.items() if k != "results"}), flush=True)
        for variant, halves_ in report["results"].items():
            line = "  ".join(f"{half} {t} R@10 {m['recall@10']:.3f} MRR {m['mrr@10']:.3f}"
                             for half, by in halves_.items() for t, m in by.items())
            print(f"  {variant:14s} {line}", flush=True)
    good = passing(reports)
    print(f"bounds that keep both topics' recall on the tune halves: β in {good}")
    if args.out:
        args.out.write_text(json.dumps({"passing_bounds": good, "reports": reports}, indent=1))


if __name__ == "__main__":
    main()
