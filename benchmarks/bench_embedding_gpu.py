"""The GPU batch path (issue 19.2): the full 13-space fingerprint of 100-200-token memories through the torch
backbone on a device, in half precision with GPU-sized length buckets, against the CPU serving path.

  1. throughput: `pipeline.embed` over --count realistic memories of 100-200 tokens (stdlib docstrings and
     function sources) in one call, as a bulk import hands them over; memories/s, and the split between the
     transformer (tokenise + forward + the copy back) and the 13 embedders (SPEC goal: embedders ≤ 15 %);
     for each of --workers (1: this process; N: a PipelinePool of N processes, each with its own backbone on
     the device and its own embedders, the shape `contextgraph import --workers N` runs), and optionally the
     CPU serving path (ONNX Runtime) over --onnx-workers processes for comparison on the same host
  2. single-memory latency: one ~100-token memory, --runs calls timed one by one (goal on an H100: ≤ 3 ms)
  3. agreement: the first --agree memories fingerprinted again by the CPU serving path (ONNX Runtime, fp32);
     per space the minimum and mean similarity between the two fingerprints of each memory (dense and E12:
     cosine, E12 over its token rows; sparse: cosine of the weight vectors; E9: fraction of equal bits)

The device is named in the output (torch.cuda.get_device_name). Without a GPU it runs on the CPU with
`--device cpu --dtype bfloat16` (a smoke run of the same code: CPU torch has bfloat16 kernels, not float16).
CI never runs it.

Run:  .venv/bin/python benchmarks/bench_embedding_gpu.py --device cuda [--dtype float16] [--count 4096] \
          [--workers 1,4,8,14] [--onnx-workers 14] [--model-dir DIR]
      .venv/bin/python benchmarks/bench_embedding_gpu.py --device cpu --dtype bfloat16 --count 64 --runs 5
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np
from _stats import format_summary, summarize, write_result
from _workload import bench_settings, realistic_texts

from contextgraph.embedders.parallel import PipelinePool, PipelineSpec

MIN_TOKENS, MAX_TOKENS = 100, 200
GOAL_PER_S, GOAL_SINGLE_MS, GOAL_EMBEDDERS_SHARE = 2000.0, 3.0, 0.15


def memories_of_length(tokenizer: Any, count: int) -> list[tuple[str, str]]:
    """The first `count` realistic texts whose token count lies in [MIN_TOKENS, MAX_TOKENS]."""
    out = []
    for text, modality in realistic_texts():
        if MIN_TOKENS <= len(tokenizer.encode(text).ids) <= MAX_TOKENS:
            out.append((text, modality))
            if len(out) == count:
                return out
    raise SystemExit(f"only {len(out)} stdlib texts have {MIN_TOKENS}-{MAX_TOKENS} tokens; ask for fewer")


def similarity(space_kind: str, a: Any, b: Any) -> float:
    """How alike the two backbones' vectors of one space are (1.0: identical)."""
    if space_kind == "sparse":
        dim = int(max(a.indices.max(initial=0), b.indices.max(initial=0))) + 1
        va, vb = np.zeros(dim), np.zeros(dim)
        va[a.indices], vb[b.indices] = a.values, b.values
        return _cosine(va, vb)
    if space_kind == "binary":
        return float(np.mean(np.unpackbits(a) == np.unpackbits(b)))
    if space_kind == "multivector":
        if a.shape != b.shape:
            return 0.0
        return float(np.mean([_cosine(x, y) for x, y in zip(a, b)]))
    return _cosine(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0.0 or nb == 0.0:
        return 1.0 if na == nb else 0.0
    return float(a @ b) / (na * nb)


def agreement(reference: list[dict], ours: list[dict]) -> dict[str, dict[str, float]]:
    from contextgraph.fingerprint import SPACES

    out = {}
    for space in SPACES:
        values = [similarity(space.kind, r[space.id], o[space.id]) for r, o in zip(reference, ours)]
        out[f"E{space.id}"] = {"min": round(min(values), 6), "mean": round(float(np.mean(values)), 6)}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda", help="torch device: cuda (default) or cpu")
    ap.add_argument("--dtype", default=None, help="float16 | bfloat16 | float32 (default: float16 on cuda)")
    ap.add_argument("--batch-size", type=int, default=None, help="texts per forward (default: the backbone's)")
    ap.add_argument("--count", type=int, default=4096, help="memories in the throughput run")
    ap.add_argument("--repeats", type=int, default=3, help="timed throughput runs (after one warm-up)")
    ap.add_argument("--workers", default="1", help="comma-separated worker-process counts to time (1: in process)")
    ap.add_argument("--onnx-workers", default="", help="also time the CPU serving path (ONNX) with these counts")
    ap.add_argument("--runs", type=int, default=100, help="timed single-memory calls")
    ap.add_argument("--agree", type=int, default=256, help="memories checked against the CPU serving path")
    ap.add_argument("--model-dir", default=None, help="model directory (default: the packaged all-MiniLM-L6-v2)")
    ap.add_argument("--name", default=None, help="result file name (default embedding-gpu-<device>)")
    args = ap.parse_args()

    import torch
    from threadpoolctl import threadpool_limits

    from contextgraph.constitution import constitution
    from contextgraph.embedders.backbone import TorchBackbone, default_model_dir

    # the server's BLAS limit (app.py: server.blas_threads), so the in-process pipeline runs as a server's does
    threadpool_limits(limits=int(constitution().get("server.blas_threads")), user_api="blas")
    from contextgraph.embedders.pipeline import Draft, FingerprintPipeline, build_pipeline

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("no CUDA device visible to torch: run with --device cpu --dtype bfloat16 for a smoke run")
    card = torch.cuda.get_device_name(0) if args.device.startswith("cuda") else "CPU"
    model_dir = Path(args.model_dir) if args.model_dir else default_model_dir()
    t0 = time.perf_counter()
    backbone = TorchBackbone(model_dir, args.device, dtype=args.dtype, batch_size=args.batch_size)
    pipeline = FingerprintPipeline(backbone)
    print(f"== {backbone.runtime} on {card}, batches of {backbone.batch_size} (loaded in "
          f"{time.perf_counter() - t0:.1f} s), torch {torch.__version__}, {os.cpu_count()} host CPUs")
    items = memories_of_length(backbone._tokenizer, max(args.count, args.agree))
    now = time.time()
    drafts = [Draft(text=t, modality=m, timestamp=now + i) for i, (t, m) in enumerate(items)]
    bulk = drafts[: args.count]
    home = tempfile.mkdtemp(prefix="cg-bench-gpu-")
    settings = bench_settings(home, CONTEXTGRAPH_MODEL_DIR=str(model_dir))

    def synced() -> float:
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()
        return time.perf_counter()

    throughput: dict[str, list[dict]] = {}
    for workers in _counts(args.workers):
        label = f"{backbone.runtime} x{workers}"
        if workers == 1:
            throughput[label] = time_throughput(label, pipeline, bulk, args.repeats, synced)
        else:
            spec = PipelineSpec.from_settings(settings, runtime="torch", device=args.device, dtype=args.dtype)
            with PipelinePool(spec, workers) as pool:
                throughput[label] = time_throughput(label, pool.start(), bulk, args.repeats, synced)
    for workers in _counts(args.onnx_workers):
        label = f"onnxruntime-fp32 x{workers}"
        spec = PipelineSpec.from_settings(settings, runtime="onnx")
        with PipelinePool(spec, workers) as pool:
            throughput[label] = time_throughput(label, pool.start(), bulk, args.repeats, time.perf_counter)

    single_draft = min(bulk, key=lambda d: abs(len(backbone._tokenizer.encode(d.text).ids) - 100))
    for _ in range(5):
        pipeline.embed([single_draft])
    single, single_encode = [], []
    for _ in range(args.runs):
        start = synced()
        pipeline.embed([single_draft])
        single.append((synced() - start) * 1e3)
        assert pipeline.last_timings is not None
        single_encode.append(pipeline.last_timings.encode_ms)
    single_summary = summarize(single)
    print("   " + format_summary("one ~100-token memory", single_summary, "ms", GOAL_SINGLE_MS))
    print("   " + format_summary("  of which the transformer", summarize(single_encode), "ms"))

    agree = {}
    if args.agree:
        checked = drafts[: args.agree]
        reference = build_pipeline(settings).embed(checked)  # the CPU serving path (ONNX, fp32)
        agree = agreement(reference, pipeline.embed(checked))
        print(f"   agreement with the CPU serving path over {len(checked)} memories (min / mean):")
        print("     " + " | ".join(f"{k} {v['min']:.4f}/{v['mean']:.4f}" for k, v in agree.items()))

    write_result(args.name or f"embedding-gpu-{args.device.split(':')[0]}", {
        "device": card, "runtime": backbone.runtime, "torch": torch.__version__, "batch_size": backbone.batch_size,
        "count": len(bulk), "tokens": [MIN_TOKENS, MAX_TOKENS], "throughput": throughput,
        "single_ms": single_summary, "single_transformer_ms": summarize(single_encode),
        "agreement": agree, "goals": {"per_s": GOAL_PER_S, "single_ms": GOAL_SINGLE_MS,
                                      "embedders_share": GOAL_EMBEDDERS_SHARE}})
    return 0


def _counts(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def time_throughput(label: str, pipeline: Any, bulk: list, repeats: int, clock: Any) -> list[dict]:
    """`repeats` timed `embed` calls over the whole bulk (after a warm-up batch): memories/s and the busy time
    split between the transformer and the embedders (summed over workers for a pool)."""
    pipeline.embed(bulk[:256])  # warm-up: kernels chosen, memory pools sized, every worker's first batch done
    runs = []
    for _ in range(repeats):
        start = clock()
        pipeline.embed(bulk)
        wall = clock() - start
        timings = pipeline.last_timings
        assert timings is not None
        embedders_ms = sum(timings.embedder_ms.values())
        share = embedders_ms / timings.total_ms
        runs.append({"wall_s": round(wall, 3), "per_s": round(len(bulk) / wall, 1),
                     "transformer_ms": round(timings.encode_ms, 1), "embedders_ms": round(embedders_ms, 1),
                     "embedders_share": round(share, 3),
                     "embedder_ms": {f"E{s}": round(ms, 1) for s, ms in sorted(timings.embedder_ms.items())}})
        print(f"   {label}: {len(bulk)} memories in {wall:.2f} s = {len(bulk) / wall:,.0f}/s (goal ≥ "
              f"{GOAL_PER_S:,.0f}); busy: transformer {timings.encode_ms:.0f} ms, embedders {embedders_ms:.0f} ms "
              f"({share:.0%}; goal ≤ {GOAL_EMBEDDERS_SHARE:.0%})", flush=True)
    best = max(runs, key=lambda r: r["per_s"])
    print("   embedders in the fastest run (ms): " + ", ".join(f"{k} {v}" for k, v in best["embedder_ms"].items()))
    return runs


if __name__ == "__main__":
    raise SystemExit(main())
