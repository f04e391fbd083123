"""A scripted cognitive session: what the engine says, step by step, when an agent stores memories on three
topics and then probes it with the five kinds of novelty issue 11 orders. Not a latency benchmark: it records the
engine's readings.

Fresh temporary data directory; everything through the real MCP SDK client in-process (`mcp.Client(
build_server(app), mode="legacy")`). Every step is one inject_context (related_k 3, rationale "scripted session
step"). Steps 1-12: four memories on each of three topics (CI caching, espresso, a field trip's birds),
interleaved. Then, for two of the topics, five probes in order: an exact duplicate of a stored memory, a light
edit of another (one number changed), a paraphrase of a third, a new fact on the topic, and an unrelated text.
These sentences are not the property tests' (tests/unit/novelty_corpus.py): what was tuned there is checked here.
After each step it records:

  * the step's `utl` block: ΔS and ΔC per space (all 13), entropy, coherence, learningScore, johariQuadrant,
    and once the method every space used;
  * the response's `_cognitive_pulse`: entropy, coherence, learning_score, quadrant, suggested_action;
  * get_workspace_status: the active memory (the winner) and its r_m, and the highest candidate r_m;
  * get_ego_state: identity_continuity and identity_status;
  * get_kuramoto_sync: r.

Then it waits --wait-s (default 6 s; the empty-workspace rule of the pulse fires after
`pulse.empty_workspace_seconds`), reads the pulse again (in-process `app.services.cognition.pulse()` and through a
get_workspace_status call), and calls epistemic_action without force, printing its question (or why none).

Prints the per-step table (ΔS and ΔC per space, L, pulse, workspace winner and r_m), a summary of the
orderings (ΔS per space and L by probe kind), and writes benchmarks/results/cognitive_session.json.

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
import anyio
from _stats import write_result
from _workload import bench_settings

RATIONALE = "scripted session step"
TOPICS = {
    "ci-cache": (
        "The CI pipeline restores the pip cache keyed on the hash of requirements.txt before installing packages.",
        "Integration tests in CI run against a Postgres 15 service container started for each job.",
        "The nightly CI workflow rebuilds the Docker base image and pushes it to the registry with a date tag.",
        "A CI job is cancelled automatically when a newer commit is pushed to the same branch.",
    ),
    "espresso": (
        "The espresso grinder is set to step 12 for the medium roast from the corner shop.",
        "A double shot should take 18 grams of coffee and run for about 28 seconds.",
        "The machine is descaled every two months with a citric acid solution.",
        "Milk for a flat white is steamed to about 60 degrees, just before the jug gets too hot to hold.",
    ),
    "birds": (
        "On the wetland walk we saw a grey heron standing motionless in the reeds by the second hide.",
        "A pair of great crested grebes performed their head-shaking courtship display on the lake.",
        "The warden said marsh harriers nest in the reed bed on the far side of the reserve.",
        "Swifts arrived over the visitor centre in the first week of May this year.",
    ),
}
PROBES = {
    "ci-cache": {
        "duplicate": TOPICS["ci-cache"][3],
        "edit": "Integration tests in CI run against a Postgres 16 service container started for each job.",
        "paraphrase": "Before packages are installed, CI brings back the pip cache, whose key is the hash of "
                      "requirements.txt.",
        "new": "Flaky CI tests are retried once, and a test that fails twice marks the whole job as failed.",
        "unrelated": "The violin's E string snapped during the rehearsal of the second movement.",
    },
    "espresso": {
        "duplicate": TOPICS["espresso"][2],
        "edit": "A double shot should take 18 grams of coffee and run for about 32 seconds.",
        "paraphrase": "For the corner shop's medium roast, the grinder sits at setting 12.",
        "new": "Preheating the cups on top of the machine keeps the espresso from cooling too quickly.",
        "unrelated": "Basalt columns form when a thick lava flow cools and contracts slowly.",
    },
}
KINDS = ("duplicate", "edit", "paraphrase", "new", "unrelated")
SHORT = ("sem", "rec", "per", "pos", "cau", "spa", "cod", "gra", "hdc", "mm", "ent", "li", "spl")


def script() -> list[tuple[str, str, str]]:
    """(kind, topic, text) of every step: the stored topics interleaved, then the probes topic by topic."""
    steps = [("seed", topic, texts[i]) for i in range(4) for topic, texts in TOPICS.items()]
    for topic, probes in PROBES.items():
        steps += [(kind, topic, probes[kind]) for kind in KINDS]
    return steps


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

        names = None
        for i, (kind, topic, text) in enumerate(script(), 1):
            t0 = time.perf_counter()
            r = await call("inject_context", {"content": text, "rationale": RATIONALE, "related_k": 3})
            wall_ms = (time.perf_counter() - t0) * 1e3
            # the store model refits in the background: waiting for it makes a run answer the same way each time
            app.services.storage.delta_sc.wait()
            sc = r.structured_content
            utl = sc["utl"]
            names = names or list(utl["delta_s"])
            ws = (await call("get_workspace_status", {})).structured_content
            ego = (await call("get_ego_state", {})).structured_content
            kur = (await call("get_kuramoto_sync", {})).structured_content
            active = ws.get("active_memory")
            cands = ws.get("candidates") or []
            step = {
                "step": i,
                "kind": kind,
                "topic": topic,
                "content": text,
                "memory_id": sc.get("id"),
                "inject_wall_ms": round(wall_ms, 2),
                "utl": {"entropy": utl["entropy"], "coherence": utl["coherence"],
                        "learningScore": utl["learningScore"], "johariQuadrant": utl["johariQuadrant"],
                        "suggestedAction": utl["suggestedAction"], "delta_s": utl["delta_s"],
                        "delta_c": utl["delta_c"], "components": utl.get("components"),
                        "compute_ms": utl.get("compute_ms"), "lifecycle": utl["lifecycle"]["stage"]},
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
            if i == len(script()):
                out["methods_last"] = utl["methods"]
            steps.append(step)
        out["spaces"] = names

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

    print("methods (last step): " + "; ".join(f"{k}: {v}" for k, v in out["methods_last"].items()))
    spaces = out["spaces"]
    cols = " ".join(f"{s:>5}" for s in SHORT)
    head = (f"{'step':>4} {'kind':<10} {'topic':<8} {'':2} {cols} | {'H':>5} {'C':>5} {'L':>6} {'quad':<7} | "
            f"{'pulse H':>7} {'C':>5} {'L':>6} {'quad':<7} {'action':<16} | {'winner':<6} {'r_m':>5} {'max r':>5} | "
            f"{'kur r':>5}")
    print(head)
    print("-" * len(head))
    for s in out["steps"]:
        u, p, w = s["utl"], s["pulse"], s["workspace"]
        ds = " ".join(f"{u['delta_s'][n]:>5.3f}" for n in spaces)
        dc = " ".join(f"{u['delta_c'][n]:>5.3f}" for n in spaces)
        ar = "-" if w["active_r"] is None else f"{w['active_r']:.3f}"
        mr = "-" if w["max_candidate_r"] is None else f"{w['max_candidate_r']:.3f}"
        print(f"{s['step']:>4} {s['kind']:<10} {s['topic']:<8} ΔS {ds} | {u['entropy']:>5.3f} {u['coherence']:>5.3f} "
              f"{u['learningScore']:>6.4f} {u['johariQuadrant']:<7} | {p.get('entropy', float('nan')):>7.3f} "
              f"{p.get('coherence', float('nan')):>5.3f} {p.get('learning_score', float('nan')):>6.4f} "
              f"{p.get('quadrant', '?'):<7} {p.get('suggested_action', '?'):<16} | {name(w['active_memory']):<6} "
              f"{ar:>5} {mr:>5} | {s['kuramoto_r']:>5.3f}")
        print(f"{'':>4} {'':<10} {'':<8} ΔC {dc} |")
    print()
    print("probes by kind (mean over the probed topics): ΔS per space, L")
    print(f"{'kind':<10} {cols} | {'L':>6}")
    for kind in KINDS:
        rows = [s for s in out["steps"] if s["kind"] == kind]
        mean = {n: sum(r["utl"]["delta_s"][n] for r in rows) / len(rows) for n in spaces}
        score = sum(r["utl"]["learningScore"] for r in rows) / len(rows)
        print(f"{kind:<10} " + " ".join(f"{mean[n]:>5.3f}" for n in spaces) + f" | {score:>6.4f}")
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
