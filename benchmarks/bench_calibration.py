"""ATC and Meta-UTL on synthetic streams with a known miscalibration (issue 17), and the status tools' latency.

1. Thresholds: for each threshold, pairs (score s, outcome y) with P(y = 1 | s) = sigmoid((logit s − logit θ*)/T* +
   logit q): the threshold's optimum is θ* (the score where the outcome's probability is its target q) and the
   engine's scores are over/under-confident by T*. The stream is fed through ThresholdService.observe (level 1, per
   observation); then levels 2, 3 and 4 run in turn. Printed: ECE/MCE/Brier of the calibrated probabilities before
   and after each level, θ against θ*, pair counts, and whether θ ever left its bounds.
2. Meta-UTL: a long simulated session (L̂ given, L = L̂ + bias + noise) with bias 0 and bias +0.3: λ_S's path,
   the adjustments and escalations, and the first log entries.
3. Status tools through the dispatcher at the largest ATC state (every threshold × domain at max_pairs, a full
   Meta-UTL window and log): median/p95 of get_threshold_status, get_calibration_metrics, get_meta_learning_status
   and get_meta_learning_log. These tools read no memory, so the store's size does not enter; the store is empty.
   The machine is shared with other engineers: timings are noisy.

    .venv/bin/python benchmarks/bench_calibration.py [--pairs 2000] [--ops 3000] [--calls 200]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time

import numpy as np

from contextgraph.calibration.maps import calibrated
from contextgraph.constitution import constitution
from contextgraph.services.engine import atc_levels
from contextgraph.services.engine.atc import Setting, ThresholdService
from contextgraph.services.engine.meta_learning import MetaLearningService

# the known optimum and miscalibration per threshold (θ* inside the bounds, away from the prior)
TRUTH = {"theta_warn": (0.5, 0.4), "theta_dup": (0.93, 0.3),
         "theta_kur": (0.86, 0.35), "johari": (0.42, 0.6)}


def thresholds_bench(pairs: int, seed: int) -> None:
    c = constitution()
    print(f"== thresholds: {pairs} pairs each, known θ* and T*; level 1 runs per observation, then 2, 3, 4")
    print(f"{'threshold':11} {'prior':>6} {'θ*':>5} {'T*':>5} | {'stage':18} {'θ':>7} {'T':>7} {'ECE':>7} {'MCE':>7} "
          f"{'Brier':>7} {'pairs':>6}")
    for name, (theta_star, t_star) in TRUTH.items():
        clock_t = [0.0]
        service = ThresholdService(c, lambda: clock_t[0])
        spec = service.spec(name)
        rng = np.random.default_rng(seed)
        s = rng.uniform(0.25, 0.995, pairs)
        y = (rng.random(pairs) < calibrated(s, theta_star, t_star, spec.target)).astype(float)
        seen = []
        row = atc_levels.quality(service, name, service.setting(name), s, y)

        def show(stage: str, q: dict) -> None:
            print(f"{name:11} {spec.prior:6.2f} {theta_star:5.2f} {t_star:5.2f} | {stage:18} {q['theta']:7.4f} "
                  f"{q['temperature']:7.4f} {q['ece']:7.4f} {q['mce']:7.4f} {q['brier']:7.4f} {q['pairs']:6d}")

        show("prior (before)", row)
        for si, yi in zip(s, y):
            clock_t[0] += 1.0
            service.observe(name, "General", float(si), float(yi), "bench")
            seen.append(service.value(name))
        kept_s, kept_y = service.outcomes.pairs(name, "General")
        # the same pairs the levels see (the newest max_pairs), at the prior: the fair "before"
        show("prior (kept pairs)", atc_levels.quality(service, name, Setting(spec.prior), kept_s, kept_y))
        show("after level 1", atc_levels.quality(service, name, service.setting(name), kept_s, kept_y))
        for level in (2, 3, 4):
            out = atc_levels.recalibrate(service, level, "General", name)
            show(f"after level {level}", out["thresholds"][name]["after"])
        print(f"{'':11} θ stayed in [{spec.lo}, {spec.hi}]: {spec.lo <= min(seen) and max(seen) <= spec.hi} "
              f"(min {min(seen):.4f}, max {max(seen):.4f}); "
              f"final |θ − θ*| = {abs(service.value(name) - theta_star):.4f}; "
              f"prior |θ − θ*| = {abs(spec.prior - theta_star):.4f}")


def meta_bench(ops: int, seed: int) -> None:
    c = constitution()
    print(f"\n== Meta-UTL: {ops} simulated stores in the growth stage (λ prior 0.5), L̂ ~ U(0.3, 0.7), "
          "L = L̂ + bias + N(0, 0.08)")
    for bias in (0.0, 0.3, -0.3):
        meta = MetaLearningService(c, background=False)
        rng = np.random.default_rng(seed)
        path = []
        for _ in range(ops):
            lam = meta.stage(200).lambda_s
            predicted = float(rng.uniform(0.3, 0.7))
            actual = float(np.clip(predicted + bias + rng.normal(0, 0.08), 0, 1))
            meta.observe(200, actual, predicted, lam)
            path.append(meta.stage(200).lambda_s)
        st = meta.status()
        marks = [path[i] for i in (0, ops // 4, ops // 2, 3 * ops // 4, ops - 1)]
        print(f"bias {bias:+.1f}: λ_S path {' → '.join(f'{v:.4f}' for v in marks)}; adjustments {st['adjustments']}, "
              f"escalations {st['escalation']['count']}, accuracy {st['accuracy']}, "
              f"α {st['alpha']} ({st['alpha_source']})")
        for entry in list(meta.log)[:2] + [e for e in meta.log if e["kind"] == "escalation"][:1]:
            print(f"    log #{entry['seq']} op {entry['operation']} {entry['kind']}: λ_S {entry['lambda_s'][0]} → "
                  f"{entry['lambda_s'][1]}: {entry['reason'][:150]}")


async def status_bench(calls: int, memories: int = 0) -> None:
    from _workload import bench_settings, fill_store, realistic_texts

    from contextgraph.app import build_app

    with tempfile.TemporaryDirectory() as home:
        app = build_app(bench_settings(home), configure_logging=True)
        try:
            await app.services.storage.ready()
            if memories:  # a real store under the tools, though none of them reads a memory
                pipeline = await app.services.perception.pipeline()
                texts = realistic_texts()
                items = [next(texts) for _ in range(memories)]
                report = fill_store(app.services.storage, pipeline, items, start_time=time.time() - 60.0 * memories)
                print(f"\nfilled {report.memories} memories in {report.wall_s:.0f} s")
            service, meta = app.services.thresholds, app.services.meta_learning
            c = app.constitution
            rng = np.random.default_rng(0)
            n = int(c["atc"]["max_pairs"])
            for name in service.specs:
                for domain in service.domains:
                    for s, y in zip(rng.random(n), rng.random(n) < 0.5):
                        service.outcomes.add(name, domain, float(s), float(y), time.time())
            for _ in range(int(c["meta_utl"]["log_max"]) + 200):
                meta.observe(200, float(rng.uniform(0.5, 0.9)), float(rng.uniform(0.2, 0.5)), 0.5)
            pairs = sum(service.outcomes.count(t, d) for t, d in service.outcomes.keys())
            print(f"\n== status tools through the dispatcher: {pairs} recorded pairs, Meta-UTL window "
                  f"{len(meta.window)}, log {len(meta.log)}, {app.services.storage.store.count()} memories "
                  "(these tools read no memory)")
            ctx = app.tool_context("bench")
            for tool, args in (("get_threshold_status", {}), ("get_threshold_status", {"domain": "Code",
                                                                                       "embedder_id": 1}),
                               ("get_calibration_metrics", {"timeframe": "30d"}), ("get_meta_learning_status", {}),
                               ("get_meta_learning_log", {"limit": 100})):
                for _ in range(10):
                    await app.dispatcher.call(tool, args, ctx)
                times = []
                for _ in range(calls):
                    t0 = time.perf_counter()
                    await app.dispatcher.call(tool, args, ctx)
                    times.append((time.perf_counter() - t0) * 1000)
                times.sort()
                p95 = times[int(0.95 * (len(times) - 1))]
                print(f"{tool:26} {args!s:40} median {statistics.median(times):7.3f} ms  p95 {p95:7.3f} ms "
                      f"(n={calls})")
        finally:
            app.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=2000)
    ap.add_argument("--ops", type=int, default=3000)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--memories", type=int, default=0, help="fill the store with this many memories first")
    ap.add_argument("--status-only", action="store_true", help="only the status tools' latency")
    args = ap.parse_args()
    if not args.status_only:
        thresholds_bench(args.pairs, args.seed)
        meta_bench(args.ops, args.seed)
    asyncio.run(status_bench(args.calls, args.memories))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
