"""The UTL's values, to compare two versions of the code (issue 19.5: did dropping five HNSW graphs move ΔS/ΔC?).

  record  DeltaScComputer.compute on --memories random stored memories of a filled data directory (each left out
          of its own neighbourhood), with whichever contextgraph is importable, after the store model's fit;
          writes each memory's per-space ΔS and ΔC, L and quadrant to OUT. Opens (or rebuilds) DIR/indexes, so
          give each version its own copy of the directory when their index formats differ.
  diff    two such files: per space the mean and max |ΔS| and |ΔC| differences, L's, the quadrant agreement;
          written with write_result under --name.

Run:  cp -r DIR /tmp/a && cp -r DIR /tmp/b && rm -rf /tmp/a/indexes
      PYTHONPATH=<worktree of the old commit>/src .venv/bin/python benchmarks/delta_sc_values.py record /tmp/a old.json
      .venv/bin/python benchmarks/delta_sc_values.py record /tmp/b new.json
      .venv/bin/python benchmarks/delta_sc_values.py diff old.json new.json --name delta_sc_before_after
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _stats import write_result


def record(home: Path, out: Path, memories: int, seed: int) -> None:
    from _workload import fit_store_model, open_services, random_stored

    services, pipeline = open_services(home)
    fit_store_model(services, pipeline)
    store, indexes, computer = services.storage.store, services.storage.indexes, services.storage.delta_sc
    rng = random.Random(seed)
    values, took = {}, []
    while len(values) < memories:
        seq, fp = random_stored(store, rng)
        t0 = time.perf_counter()
        d = computer.compute(store, indexes, pipeline.embedders, fp, coherence_history=[0.45, 0.5, 0.55, 0.5],
                             exclude=frozenset({seq}))
        took.append(time.perf_counter() - t0)
        values[seq] = {"spaces": {s.space: [s.delta_s, s.delta_c] for s in d.spaces}, "L": d.learning_score,
                       "quadrant": d.quadrant}
    out.write_text(json.dumps({"values": values, "compute_ms_median": 1000 * float(np.median(took))}))
    print(f"wrote {out}: {len(values)} memories, compute median {1000 * float(np.median(took)):.1f} ms")


def diff(a_path: Path, b_path: Path, name: str) -> None:
    a, b = json.loads(a_path.read_text()), json.loads(b_path.read_text())
    seqs = sorted(set(a["values"]) & set(b["values"]))
    per_space = {}
    for space in sorted(a["values"][seqs[0]]["spaces"], key=int):
        pairs = np.array([[a["values"][s]["spaces"][space], b["values"][s]["spaces"][space]] for s in seqs])
        gap = np.abs(pairs[:, 0] - pairs[:, 1])  # [memories, (ΔS, ΔC)]
        per_space[f"E{space}"] = {"delta_s_mean": round(float(gap[:, 0].mean()), 5),
                                  "delta_s_max": round(float(gap[:, 0].max()), 5),
                                  "delta_c_mean": round(float(gap[:, 1].mean()), 5)}
        print(f"   E{space:<2} |ΔS| mean {gap[:, 0].mean():.5f} max {gap[:, 0].max():.5f}   "
              f"|ΔC| mean {gap[:, 1].mean():.5f}")
    learning = np.abs(np.array([a["values"][s]["L"] - b["values"][s]["L"] for s in seqs]))
    agree = float(np.mean([a["values"][s]["quadrant"] == b["values"][s]["quadrant"] for s in seqs]))
    print(f"   L |diff| mean {learning.mean():.5f} max {learning.max():.5f}; quadrant agreement {agree:.3f}")
    write_result(name, {"memories": len(seqs), "files": [str(a_path), str(b_path)],
                        "compute_ms_median": [a["compute_ms_median"], b["compute_ms_median"]],
                        "abs_diff_per_space": per_space,
                        "learning_score_abs_diff": {"mean": round(float(learning.mean()), 5),
                                                    "max": round(float(learning.max()), 5)},
                        "quadrant_agreement": agree})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("home", type=Path)
    rec.add_argument("out", type=Path)
    rec.add_argument("--memories", type=int, default=150)
    rec.add_argument("--seed", type=int, default=5)
    dif = sub.add_parser("diff")
    dif.add_argument("a", type=Path)
    dif.add_argument("b", type=Path)
    dif.add_argument("--name", default="delta_sc_before_after")
    args = ap.parse_args()
    if args.cmd == "record":
        record(args.home, args.out, args.memories, args.seed)
    else:
        diff(args.a, args.b, args.name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
