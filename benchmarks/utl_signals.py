"""Whether the engine's signals mean something on an agent's timescale (docs/utl.md, docs/engine.md): a scripted
session on labelled probes (benchmarks/utl_signals_corpus.py: a tune half of six topics, a test half of four).

Fresh temporary data directory; everything through the real MCP SDK client in-process. Every stored fact, then
every probe (duplicate, paraphrase, new fact on the topic, unrelated text), is one inject_context; after each the
script reads the step's `utl` block (ΔS = entropy, ΔC = coherence, L, Johari, suggested action), the response's
pulse advice, get_consciousness_state (r, C, R, D, identity continuity and status) and Meta-UTL's λ_S. The store
model's background refits are waited for after each step, so a run is deterministic up to the embedder. Then it
reads r, C and IC, waits --idle-s without any operation, and reads them again; and it records the top 5 of a
search_graph per topic (retrieval must not change with these signals).

Reported per half: per probe kind the mean ΔS, ΔC, L, r, C, IC and the Johari/advice counts; the share of topics
where L orders duplicate < paraphrase < new and unrelated < new; mean ΔC(new) − ΔC(unrelated); L's 5th-95th
percentile span over the whole session; corr(C, r) over the session; the idle drift of r, C and IC; how many
snapshots read identity "Critical". Writes benchmarks/results/<name>.json.

Run:  .venv/bin/python benchmarks/utl_signals.py [--idle-s 60] [--name utl_signals] [--fresh]
(--fresh: the corpus's FRESH topics join the session as a third half; the store then differs from the plain run's.)
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import anyio
import numpy as np
import utl_signals_corpus as corpus
from _stats import write_result
from _workload import bench_settings

RATIONALE = "utl signals session step"


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from mcp import Client

    from contextgraph.app import build_app
    from contextgraph.server import build_server

    home = Path(tempfile.mkdtemp(prefix="cg-utl-signals-"))
    app = build_app(bench_settings(home))
    app.services.storage.open()
    await app.services.perception.pipeline()
    steps: list[dict[str, Any]] = []
    async with Client(build_server(app), mode="legacy") as client:
        async def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
            result = await client.call_tool(name, arguments)
            if result.is_error:
                raise AssertionError(f"{name} failed: {result.content}")
            return dict(result.structured_content or {})

        async def engine() -> dict[str, Any]:
            cs = await call("get_consciousness_state", {})
            meta = await call("get_meta_learning_status", {})
            return {"r": cs["r"], "C": cs["C"], "R": cs["R"], "D": cs["D"],
                    "IC": cs["identity"]["continuity"], "IC_status": cs["identity"]["status"],
                    "lambda_s": meta["lambda_s"]}

        script = ([("seed", "seed", topic, text) for topic, text in corpus.stored(args.fresh)]
                  + corpus.probes(args.fresh))
        for half, topic, kind, text in script:
            sc = await call("inject_context", {"content": text, "rationale": RATIONALE, "related_k": 3})
            app.services.storage.delta_sc.wait()  # the store model's background refit: deterministic runs
            utl = sc["utl"]
            steps.append({"half": half, "topic": topic, "kind": kind, "S": utl["entropy"], "C_utl": utl["coherence"],
                          "L": utl["learningScore"], "L_hat": utl["predictedLearningScore"],
                          "johari": utl["johariQuadrant"], "phi": utl["phaseSpread"],
                          "components": utl["components"], "delta_c": utl["delta_c"], "delta_s": utl["delta_s"],
                          "advice": (sc.get("_cognitive_pulse") or {}).get("suggested_action"),
                          **await engine()})
        before = await engine()
        await anyio.sleep(args.idle_s)
        after = await engine()
        retrieval = {}
        for topic, t in {**corpus.TUNE, **corpus.TEST, **(corpus.FRESH if args.fresh else {})}.items():
            found = await call("search_graph", {"query": str(t["new"]), "top_k": 5})
            retrieval[topic] = [r.get("content", "")[:60] for r in found.get("results", [])]
    app.close()
    shutil.rmtree(home, ignore_errors=True)
    return {"steps": steps, "idle": {"seconds": args.idle_s, "before": before, "after": after},
            "retrieval_top5": retrieval}


def _mean(values: list[float]) -> float:
    return float(np.mean(values)) if values else float("nan")


def summarise(out: dict[str, Any]) -> dict[str, Any]:
    steps = out["steps"]
    summary: dict[str, Any] = {}
    for half in [h for h in ("tune", "test", "fresh") if any(s["half"] == h for s in steps)]:
        rows = [s for s in steps if s["half"] == half]
        topics = sorted({s["topic"] for s in rows})
        by = {(s["topic"], s["kind"]): s for s in rows}
        ordered = sum(1 for t in topics if by[(t, "duplicate")]["L"] < by[(t, "paraphrase")]["L"] < by[(t, "new")]["L"]
                      and by[(t, "unrelated")]["L"] < by[(t, "new")]["L"])
        gap = _mean([by[(t, "new")]["C_utl"] - by[(t, "unrelated")]["C_utl"] for t in topics])
        kinds = {}
        for kind in corpus.KINDS:
            ks = [s for s in rows if s["kind"] == kind]
            kinds[kind] = {k: round(_mean([s[k] for s in ks]), 4) for k in ("S", "C_utl", "L", "r", "C", "IC")}
            kinds[kind]["johari"] = sorted({s["johari"] for s in ks})
            kinds[kind]["advice"] = sorted({str(s["advice"]) for s in ks})
        summary[half] = {"topics": len(topics), "L_order_share": round(ordered / len(topics), 3),
                         "delta_c_new_minus_unrelated": round(gap, 4), "kinds": kinds}
    ls = [s["L"] for s in steps]
    r, c = np.array([s["r"] for s in steps]), np.array([s["C"] for s in steps])
    idle = out["idle"]
    summary["session"] = {
        "L_p5_p95": [round(float(np.percentile(ls, 5)), 4), round(float(np.percentile(ls, 95)), 4)],
        "L_span": round(float(np.percentile(ls, 95) - np.percentile(ls, 5)), 4),
        "corr_C_r": round(float(np.corrcoef(c, r)[0, 1]), 4) if r.std() > 0 and c.std() > 0 else None,
        "r_range": [round(float(r.min()), 4), round(float(r.max()), 4)],
        "R_range": [min(s["R"] for s in steps), max(s["R"] for s in steps)],
        "D_range": [min(s["D"] for s in steps), max(s["D"] for s in steps)],
        "IC_critical": sum(1 for s in steps if s["IC_status"] == "Critical"),
        "lambda_s_range": [min(s["lambda_s"] for s in steps), max(s["lambda_s"] for s in steps)],
        "idle_drift": {k: round(abs(idle["after"][k] - idle["before"][k]), 4) for k in ("r", "C", "IC")},
        "idle_seconds": idle["seconds"],
    }
    return summary


def print_summary(summary: dict[str, Any]) -> None:
    for half in [h for h in ("tune", "test", "fresh") if h in summary]:
        h = summary[half]
        print(f"{half}: {h['topics']} topics; L order dup < para < new, unrel < new in {h['L_order_share']:.0%}; "
              f"ΔC(new) − ΔC(unrelated) = {h['delta_c_new_minus_unrelated']:+.3f}")
        print(f"  {'kind':<11}{'ΔS':>7}{'ΔC':>7}{'L':>7}{'r':>7}{'C':>7}{'IC':>7}  johari / advice")
        for kind, k in h["kinds"].items():
            print(f"  {kind:<11}{k['S']:>7.3f}{k['C_utl']:>7.3f}{k['L']:>7.3f}{k['r']:>7.3f}{k['C']:>7.3f}"
                  f"{k['IC']:>7.3f}  {','.join(k['johari'])} / {','.join(k['advice'])}")
    s = summary["session"]
    print(f"session: L p5-p95 {s['L_p5_p95']} (span {s['L_span']}); corr(C, r) {s['corr_C_r']}; r {s['r_range']}; "
          f"R {s['R_range']}; D {s['D_range']}; IC Critical in {s['IC_critical']} snapshots; λ_S {s['lambda_s_range']}")
    print(f"idle {s['idle_seconds']:g} s without operations: |Δr| {s['idle_drift']['r']}, |ΔC| {s['idle_drift']['C']}, "
          f"|ΔIC| {s['idle_drift']['IC']}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--idle-s", type=float, default=60.0, help="seconds without operations between two readings")
    ap.add_argument("--name", default="utl_signals", help="result file name (benchmarks/results/<name>.json)")
    ap.add_argument("--fresh", action="store_true", help="add the FRESH topics (a third check, its own session)")
    args = ap.parse_args()
    out = anyio.run(run, args)
    out["summary"] = summarise(out)
    print_summary(out["summary"])
    write_result(args.name, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
