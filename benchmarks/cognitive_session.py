"""A scripted cognitive session: what the engine says, step by step, when an agent injects ten related memories
about one topic and then one unrelated memory. Not a latency benchmark: it records the engine's readings.

Fresh temporary data directory; everything through the real MCP SDK client in-process (`mcp.Client(
build_server(app), mode="legacy")`). Steps 1-10: inject_context (related_k 3, rationale "scripted session
step") of ten distinct sentences about database migrations timing out during deploys; step 11: one unrelated
memory ("Sourdough needs a starter fed with flour and water every day."). After each step it records:

  * the step's `utl` block: entropy, coherence, learningScore, johariQuadrant, E1 (semantic) ΔS and, once,
    the method every space used;
  * the response's `_cognitive_pulse`: entropy, coherence, learning_score, quadrant, suggested_action;
  * get_workspace_status: the active memory (or none) and the highest candidate r_m;
  * get_ego_state: identity_continuity and identity_status;
  * get_kuramoto_sync: r.

Then it waits --wait-s (default 6 s; the empty-workspace rule of the pulse fires after
`pulse.empty_workspace_seconds`), reads the pulse again (in-process `app.services.cognition.pulse()` and through a
get_workspace_status call), and calls epistemic_action without force, printing its question (or why none).

Prints one line per step and writes benchmarks/results/cognitive_session.json.

Run:  .venv/bin/python benchmarks/cognitive_session.py [--wait-s 6] [--name cognitive_session]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _stats import write_result  # noqa: E402
from _workload import bench_settings  # noqa: E402

import anyio  # noqa: E402

RATIONALE = "scripted session step"
RELATED = (
    "The orders table migration timed out during Tuesday's deploy because ALTER TABLE held an exclusive lock "
    "for over ten minutes.",
    "Our deploy pipeline runs database migrations before the new pods start, so a slow migration blocks the "
    "whole release.",
    "Adding a NOT NULL column with a default rewrote the entire users table in Postgres 10 and the migration hit "
    "the 300 second deploy timeout.",
    "To avoid migration timeouts during deploys, create indexes with CREATE INDEX CONCURRENTLY outside the "
    "transaction.",
    "The migration runner's statement_timeout is 60 seconds in production, which is why long backfills fail "
    "mid-deploy.",
    "Large data backfills should run as a background job after the deploy, not inside the schema migration.",
    "A long-running analytics query held a lock on the invoices table, so the deploy's migration waited on it "
    "until the deploy timed out.",
    "Setting lock_timeout to 5 seconds makes a blocked migration fail fast and retry instead of stalling the "
    "deploy for minutes.",
    "When a migration times out halfway through a deploy, the schema_migrations table can be left inconsistent "
    "and must be checked before retrying.",
    "We split the payments schema change into three smaller migrations so that each one finishes well within "
    "the deploy timeout.",
)
UNRELATED = "Sourdough needs a starter fed with flour and water every day."


def pulse_of(result: Any) -> dict[str, Any]:
    sc = result.structured_content or {}
    return sc.get("_cognitive_pulse") or {}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from mcp import Client

    from contextgraph.app import build_app
    from contextgraph.server import build_server

    home = Path(tempfile.mkdtemp(prefix="cg-cognitive-session-"))
    app = build_app(bench_settings(home))
    app.services.storage.open()
    await app.services.perception.pipeline()
    steps: list[dict[str, Any]] = []
    out: dict[str, Any] = {"home": "fresh temp dir (deleted)", "rationale": RATIONALE}

    async with Client(build_server(app), mode="legacy") as client:
        async def call(name: str, arguments: dict[str, Any]) -> Any:
            result = await client.call_tool(name, arguments)
            if result.is_error:
                raise AssertionError(f"{name} failed: {result.content}")
            return result

        for i, text in enumerate((*RELATED, UNRELATED), 1):
            t0 = time.perf_counter()
            r = await call("inject_context", {"content": text, "rationale": RATIONALE, "related_k": 3})
            wall_ms = (time.perf_counter() - t0) * 1e3
            sc = r.structured_content
            utl = sc["utl"]
            ws = (await call("get_workspace_status", {})).structured_content
            ego = (await call("get_ego_state", {})).structured_content
            kur = (await call("get_kuramoto_sync", {})).structured_content
            active = ws.get("active_memory")
            cands = ws.get("candidates") or []
            step = {
                "step": i,
                "kind": "related" if i <= len(RELATED) else "unrelated",
                "content": text,
                "memory_id": sc.get("id"),
                "inject_wall_ms": round(wall_ms, 2),
                "utl": {"entropy": utl["entropy"], "coherence": utl["coherence"],
                        "learningScore": utl["learningScore"], "johariQuadrant": utl["johariQuadrant"],
                        "suggestedAction": utl["suggestedAction"], "E1_delta_s": utl["delta_s"]["semantic"],
                        "E1_delta_c": utl["delta_c"]["semantic"], "compute_ms": utl.get("compute_ms"),
                        "lifecycle": utl["lifecycle"]["stage"]},
                "related": [{"id": x["id"], "score": x.get("score"), "similarity": x.get("similarity")}
                            for x in sc.get("related", [])],
                "pulse": pulse_of(r),
                "workspace": {"active_memory": None if active is None else active["memory_id"],
                              "active_r": None if active is None else active["r"],
                              "max_candidate_r": max((c["r"] for c in cands), default=None),
                              "candidates": len(cands), "is_broadcasting": ws.get("is_broadcasting"),
                              "empty_for_seconds": ws.get("empty_for_seconds")},
                "ego": {"identity_continuity": ego["identity_continuity"],
                        "identity_status": ego["identity_status"]},
                "kuramoto_r": kur["r"],
            }
            if i == 1:
                out["methods_step1"] = utl["methods"]
            steps.append(step)

        await anyio.sleep(args.wait_s)
        pulse_direct = app.services.cognition.pulse()
        ws_after = await call("get_workspace_status", {})
        ws_sc = ws_after.structured_content
        after_wait = {
            "waited_s": args.wait_s,
            "pulse_in_process": pulse_direct,
            "pulse_on_get_workspace_status": pulse_of(ws_after),
            "workspace_active_memory": (ws_sc.get("active_memory") or {}).get("memory_id"),
            "workspace_empty_for_seconds": ws_sc.get("empty_for_seconds"),
        }
        ep = await call("epistemic_action", {})
        ep_sc = dict(ep.structured_content)
        after_wait["epistemic_action"] = ep_sc
        out["after_wait"] = after_wait
    app.close()
    shutil.rmtree(home, ignore_errors=True)
    out["steps"] = steps
    return out


def short(memory_id: str | None) -> str:
    return "-" if not memory_id else memory_id[:8]


def print_session(out: dict[str, Any]) -> None:
    ids = {s["memory_id"]: s["step"] for s in out["steps"]}

    def name(memory_id: str | None) -> str:
        if not memory_id:
            return "none"
        return f"#{ids[memory_id]}" if memory_id in ids else short(memory_id)

    print("E1..E13 methods (step 1): " + "; ".join(f"{k}: {v}" for k, v in out["methods_step1"].items()))
    head = (f"{'step':>4} {'kind':<9} | {'utl: H':>6} {'C':>6} {'L':>6} {'quadrant':<8} {'E1 dS':>6} | "
            f"{'pulse: H':>8} {'C':>6} {'L':>6} {'quadrant':<8} {'action':<17} | {'ws active':<9} {'max r':>6} | "
            f"{'IC':>6} {'status':<8} | {'kur r':>6}")
    print(head)
    print("-" * len(head))
    for s in out["steps"]:
        u, p, w, e = s["utl"], s["pulse"], s["workspace"], s["ego"]
        mr = "-" if w["max_candidate_r"] is None else f"{w['max_candidate_r']:.3f}"
        print(f"{s['step']:>4} {s['kind']:<9} | {u['entropy']:>6.3f} {u['coherence']:>6.3f} {u['learningScore']:>6.3f} "
              f"{u['johariQuadrant']:<8} {u['E1_delta_s']:>6.3f} | {p.get('entropy', float('nan')):>8.3f} "
              f"{p.get('coherence', float('nan')):>6.3f} {p.get('learning_score', float('nan')):>6.3f} "
              f"{p.get('quadrant', '?'):<8} {p.get('suggested_action', '?'):<17} | {name(w['active_memory']):<9} "
              f"{mr:>6} | {e['identity_continuity']:>6.3f} {e['identity_status']:<8} | {s['kuramoto_r']:>6.3f}")
    a = out["after_wait"]
    p = a["pulse_in_process"]
    print(f"after {a['waited_s']:g} s idle: workspace active {name(a['workspace_active_memory'])}, empty for "
          f"{a['workspace_empty_for_seconds']} s; pulse: H {p.get('entropy')} C {p.get('coherence')} "
          f"L {p.get('learning_score')} {p.get('quadrant')} → suggested_action {p.get('suggested_action')}")
    ep = a["epistemic_action"]
    q = ep.get("question")
    print(f"epistemic_action (no force): action_type {ep.get('action_type')}, pulse_suggestion "
          f"{ep.get('pulse_suggestion')}, question: {q!r}" if q else
          f"epistemic_action (no force): no question; payload keys {sorted(ep)}; "
          f"{ {k: v for k, v in ep.items() if k != '_cognitive_pulse'} }")
    if q:
        print(f"   focal nodes {[name(x) for x in ep.get('focal_nodes', [])]}, target space "
              f"{ep.get('target_space')}, expected_entropy_reduction {ep.get('expected_entropy_reduction')}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wait-s", type=float, default=6.0, help="idle time before the last pulse and epistemic_action")
    ap.add_argument("--name", default="cognitive_session", help="result file name (benchmarks/results/<name>.json)")
    args = ap.parse_args()
    out = anyio.run(run, args)
    print_session(out)
    out["loadavg_after"] = os.getloadavg()
    write_result(args.name, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
