"""The GPU path (issues 19.2, 36 and 37): the full 13-space fingerprint of 100-200-token memories through the
torch backbone and E7's code encoder on a device, in half precision, against the CPU serving path.

  1. agreement (first, so a short run still answers it): the first --agree memories fingerprinted by the GPU
     pipeline and by the CPU serving path with CONTEXTGRAPH_INT8=0 (ONNX Runtime: the shared model in fp32, E7's
     code model in int8); per space the minimum and mean similarity (dense and E12: cosine, E12 over its token
     rows; sparse: cosine of the weight vectors; E9: fraction of equal bits). E7 also against its code model in
     fp32 ONNX (the same precision class), and single texts replayed from CUDA graphs against the same
     backbone's batched forward
  2. threads (--threads N): a fresh pipeline fingerprinting single texts of several lengths and batches from N
     threads at once, as a server's requests do (each CUDA graph captured while the others run); every
     fingerprint must equal the same text's made alone
  3. single-memory latency: one ~100-token memory and a 12-token query, --runs calls timed one by one, with CUDA
     graphs (embedders/cuda_graphs.py), with E9 on the host, and with transformers' eager forward (goal on an
     H100: ≤ 3 ms)
  4. retrieval parity (--parity N): E1 and E7 alone over N seeded stdlib (docstring sentence, function) pairs,
     nDCG@10 with documents and queries embedded on the CPU, on the GPU, and each on the other: a store built
     on one and searched from the other ranks as either does
  5. throughput: `pipeline.embed` over --count realistic memories of 100-200 tokens in one call, as a bulk
     import hands them over; memories/s, and the split between the shared transformer and the 13 embedders
     (E7's own forward is inside E7), for each of --workers (1: this process; N: a PipelinePool of N processes)

The device is named in the output (torch.cuda.get_device_name). Without a GPU it runs on the CPU with
`--device cpu --dtype bfloat16` (a smoke run of the same code: CPU torch has bfloat16 kernels, not float16).
CI never runs it. benchmarks/device_gpu.sh runs it on a lent device.

Run:  .venv/bin/python benchmarks/bench_embedding_gpu.py --device cuda [--dtype float16] [--count 4096] \
          [--workers 1,4,8,14] [--parity 1000] [--model-dir DIR] [--code-model DIR]
      .venv/bin/python benchmarks/bench_embedding_gpu.py --device cpu --dtype bfloat16 --count 64 --runs 5 \
          --agree 16 --parity 100
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
from contextgraph.embedders.pipeline import Draft, FingerprintPipeline, load_pipeline

MIN_TOKENS, MAX_TOKENS = 100, 200
QUERY = "how do I read a file with a given text encoding"
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
    ap.add_argument("--runs", type=int, default=100, help="timed single-memory calls")
    ap.add_argument("--agree", type=int, default=256, help="memories checked against the CPU serving path")
    ap.add_argument("--parity", type=int, default=1000, help="stdlib pairs in the retrieval parity check (0: none)")
    ap.add_argument("--threads", type=int, default=4,
                    help="threads embedding single texts and batches at once on a fresh pipeline (0: skip)")
    ap.add_argument("--model-dir", default=None, help="model directory (default: the packaged all-MiniLM-L6-v2)")
    ap.add_argument("--code-model", default=None,
                    help="E7's encoder directory (default: the shipped code model assembled on --model-dir)")
    ap.add_argument("--name", default=None, help="result file name (default embedding-gpu-<device>)")
    args = ap.parse_args()

    import torch
    from threadpoolctl import threadpool_limits

    from contextgraph.constitution import constitution
    from contextgraph.embedders import code_model
    from contextgraph.embedders.backbone import default_model_dir

    # the server's BLAS limit (app.py: server.blas_threads), so the in-process pipeline runs as a server's does
    threadpool_limits(limits=int(constitution().get("server.blas_threads")), user_api="blas")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("no CUDA device visible to torch: run with --device cpu --dtype bfloat16 for a smoke run")
    card = torch.cuda.get_device_name(0) if args.device.startswith("cuda") else "CPU"
    home = Path(tempfile.mkdtemp(prefix="cg-bench-gpu-"))
    model_dir = Path(args.model_dir) if args.model_dir else default_model_dir()
    code_dir = Path(args.code_model) if args.code_model else code_model.assemble(model_dir, home / "models")
    settings = bench_settings(home, CONTEXTGRAPH_MODEL_DIR=str(model_dir), CONTEXTGRAPH_CODE_MODEL=str(code_dir))
    t0 = time.perf_counter()
    pipeline = gpu_pipeline(args, model_dir, code_dir, cuda_graphs=True)
    backbone = pipeline.backbone
    result: dict[str, Any] = {
        "device": card, "runtime": backbone.runtime, "torch": torch.__version__, "batch_size": backbone.batch_size,
        "tokens": [MIN_TOKENS, MAX_TOKENS], "code_model": code_dir.name,
        "goals": {"per_s": GOAL_PER_S, "single_ms": GOAL_SINGLE_MS, "embedders_share": GOAL_EMBEDDERS_SHARE}}
    name = args.name or f"embedding-gpu-{args.device.split(':')[0]}"
    print(f"== {backbone.runtime} on {card}, batches of {backbone.batch_size}, E7 {code_dir.name} (loaded in "
          f"{time.perf_counter() - t0:.1f} s), torch {torch.__version__}, {os.cpu_count()} host CPUs", flush=True)
    items = memories_of_length(backbone._tokenizer, max(args.count, args.agree))  # type: ignore[attr-defined]
    now = time.time()
    drafts = [Draft(text=t, modality=m, timestamp=now + i) for i, (t, m) in enumerate(items)]

    def synced() -> float:
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()
        return time.perf_counter()

    # the CPU serving path with CONTEXTGRAPH_INT8=0: ONNX Runtime, the shared model in fp32, E7's in int8
    cpu = load_pipeline(model_dir, settings.models_dir, runtime="onnx", quantized=False, device="cpu",
                        code_model=str(code_dir)) if args.agree or args.parity else None
    if cpu is not None and args.agree:
        result["agreement"] = check_agreement(cpu, pipeline, drafts[: args.agree], settings.models_dir, code_dir)
        write_result(name, result)
    if args.threads:
        result["threads"] = check_threads(gpu_pipeline(args, model_dir, code_dir, cuda_graphs=True), drafts,
                                          args.threads)
        write_result(name, result)
    single_draft = min(drafts, key=lambda d: abs(len(backbone._tokenizer.encode(d.text).ids) - 100))  # type: ignore
    variants = {"cuda graphs": pipeline, "cuda graphs, E9 on the host": with_host_hdc(pipeline),
                "eager": gpu_pipeline(args, model_dir, code_dir, cuda_graphs=False)}
    result["single"] = {label: time_single(label, p, single_draft, args.runs, synced) for label, p in variants.items()}
    query = Draft(text=QUERY, modality="text", timestamp=now)  # a search embeds its query through the same pipeline
    result["query"] = {label: time_single(label, variants[label], query, args.runs, synced, what="a 12-token query")
                       for label in ("cuda graphs", "eager")}
    write_result(name, result)
    if cpu is not None and args.parity:
        result["retrieval_parity"] = retrieval_parity({"cpu": cpu, "gpu": pipeline}, args.parity)
        write_result(name, result)
    result["count"] = min(args.count, len(drafts))
    result["throughput"] = {}
    for workers in _counts(args.workers):
        label = f"{backbone.runtime} x{workers}"
        if workers == 1:
            result["throughput"][label] = time_throughput(label, pipeline, drafts[: args.count], args.repeats, synced)
        else:
            spec = PipelineSpec.from_settings(settings, runtime="torch", device=args.device, dtype=args.dtype)
            with PipelinePool(spec, workers) as pool:
                result["throughput"][label] = time_throughput(label, pool.start(), drafts[: args.count],
                                                              args.repeats, synced)
        write_result(name, result)
    return 0


def gpu_pipeline(args: Any, model_dir: Path, code_dir: Path, *, cuda_graphs: bool) -> Any:
    """The shared backbone and E7's code encoder in torch on --device, one text at a time through CUDA graphs
    or not: what `load_pipeline(runtime="torch")` builds, with the graphs' switch exposed."""
    from contextgraph.embedders.backbone import TorchBackbone

    def load(directory: Path) -> TorchBackbone:
        return TorchBackbone(directory, args.device, dtype=args.dtype, batch_size=args.batch_size,
                             cuda_graphs=cuda_graphs)

    return FingerprintPipeline(load(model_dir), code_encoder=load(code_dir))


def with_host_hdc(pipeline: Any) -> Any:
    """The same pipeline with E9 in numpy on the host (the same bits) instead of on the device."""
    from contextgraph.embedders.e09_hdc import HdcEmbedder

    embedders = [HdcEmbedder() if e.space == 9 else e for e in pipeline.embedders]
    return FingerprintPipeline(pipeline.backbone, embedders)


def check_agreement(cpu: Any, gpu: Any, checked: list, cache_dir: Path, code_dir: Path) -> dict[str, Any]:
    """Per space, the GPU pipeline's fingerprints against the CPU serving path's; E7 also against its code model
    in fp32 ONNX; and single texts (CUDA graphs) against the batched GPU forward."""
    from contextgraph.embedders.backbone import OnnxBackbone
    from contextgraph.fingerprint import SPACES

    batched = gpu.embed(checked)
    serving = agreement(cpu.embed(checked), batched)
    fp32 = FingerprintPipeline(cpu.backbone, code_encoder=OnnxBackbone(code_dir, cache_dir, quantized=False))
    texts, modalities = [d.text for d in checked], [d.modality for d in checked]
    e7_fp32 = [similarity("dense", a, b) for a, b in zip(fp32.embed_space(7, texts, modalities),
                                                            (fp[7] for fp in batched))]
    singles = [gpu.embed([d])[0] for d in checked[:32]]
    graphed = {f"E{s.id}": round(min(similarity(s.kind, a[s.id], b[s.id]) for a, b in zip(singles, batched)), 6)
               for s in SPACES}
    out = {"serving_path": serving, "E7_vs_fp32_onnx": {"min": round(min(e7_fp32), 6),
                                                       "mean": round(float(np.mean(e7_fp32)), 6)},
           "graphed_single_vs_batched_min": graphed, "memories": len(checked)}
    print(f"   agreement with the CPU serving path over {len(checked)} memories (min / mean):")
    print("     " + " | ".join(f"{k} {v['min']:.4f}/{v['mean']:.4f}" for k, v in serving.items()))
    print(f"   E7 against its code model in fp32 ONNX: min {min(e7_fp32):.5f} mean {np.mean(e7_fp32):.5f}")
    print("   single texts through CUDA graphs vs the batched forward (min over 32): "
          + " ".join(f"{k} {v:.4f}" for k, v in graphed.items()), flush=True)
    return out


def check_threads(pipeline: Any, drafts: list, threads: int) -> dict[str, Any]:
    """A fresh pipeline (no graph captured yet) fingerprinting from `threads` threads at once, as a server's
    requests do: single texts of several lengths (each width captured while the others run) and batches (E9 on
    the device beside the captures). Every fingerprint must equal the same text's, made afterwards alone."""
    from concurrent.futures import ThreadPoolExecutor

    from contextgraph.fingerprint import SPACES

    singles = [[d] for d in drafts[:8]] + [[Draft(text=QUERY * n, modality="text")] for n in (1, 3, 9, 20)]
    work = singles + [drafts[8 + 16 * i: 24 + 16 * i] for i in range(4)]
    started = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        together = list(pool.map(pipeline.embed, work))
    seconds = time.perf_counter() - started
    worst = min(min(similarity(s.kind, a[s.id], b[s.id]) for s in SPACES)
                for items, fps in zip(work, together) for a, b in zip(fps, pipeline.embed(items)))
    print(f"   {threads} threads, {len(work)} calls at once on a fresh pipeline: {seconds:.2f} s, every fingerprint "
          f"as alone (min similarity over all spaces {worst:.6f})", flush=True)
    return {"threads": threads, "calls": len(work), "seconds": round(seconds, 3), "min_similarity": round(worst, 6)}


def time_single(label: str, pipeline: Any, draft: Any, runs: int, clock: Any,
                what: str = "one ~100-token memory") -> dict[str, Any]:
    """`runs` single-memory embeds after five warm-ups: the whole call, the shared forward, E7 (its forward)."""
    for _ in range(5):
        pipeline.embed([draft])
    total, shared, spaces = [], [], {}
    for _ in range(runs):
        start = clock()
        pipeline.embed([draft])
        total.append((clock() - start) * 1e3)
        timings = pipeline.last_timings
        shared.append(timings.encode_ms)
        for space, ms in timings.embedder_ms.items():
            spaces.setdefault(f"E{space}", []).append(ms)
    out = {"total_ms": summarize(total), "shared_forward_ms": summarize(shared), "e7_ms": summarize(spaces["E7"]),
           "embedder_p50_ms": {k: round(float(np.median(v)), 3) for k, v in spaces.items()}}
    print("   " + format_summary(f"{what}, {label}", out["total_ms"], "ms", GOAL_SINGLE_MS))
    print("   " + format_summary("  of which the shared forward", out["shared_forward_ms"], "ms"))
    print("   " + format_summary("  of which E7 (its own forward)", out["e7_ms"], "ms"))
    print("     embedders p50 (ms): " + ", ".join(f"{k} {v}" for k, v in out["embedder_p50_ms"].items()), flush=True)
    return out


def retrieval_parity(pipelines: dict[str, Any], n: int) -> dict[str, Any]:
    """E1 and E7 alone over `n` seeded stdlib (docstring sentence, function) pairs: nDCG@10 for every
    (documents' pipeline, queries' pipeline) pair."""
    from _corpora import code_corpus

    from contextgraph.embedders.e01_semantic import sentence_vector

    items = code_corpus().items
    chosen = sorted(np.random.default_rng(20261127).choice(len(items), size=min(n, len(items)), replace=False))
    docs, queries = [items[i].document for i in chosen], [items[i].query for i in chosen]
    vectors: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}
    for name, p in pipelines.items():
        vectors[name, "E1"] = tuple(_unit([sentence_vector(e) for e in p.backbone.encode(texts)])
                                    for texts in (docs, queries))
        vectors[name, "E7"] = (_unit(p.embed_space(7, docs, ["code"] * len(docs))),
                               _unit(p.embed_space(7, queries, ["text"] * len(queries))))
    out: dict[str, Any] = {"pairs": len(docs)}
    for space in ("E1", "E7"):
        for doc_side in pipelines:
            for query_side in pipelines:
                score = ndcg_at_10(vectors[doc_side, space][0], vectors[query_side, space][1])
                out[f"{space} docs {doc_side} / queries {query_side}"] = round(score, 4)
    print(f"   retrieval parity over {len(docs)} stdlib pairs (nDCG@10): "
          + " | ".join(f"{k} {v}" for k, v in out.items() if k != "pairs"), flush=True)
    return out


def _unit(rows: Any) -> np.ndarray:
    matrix = np.asarray(rows, dtype=np.float64)
    return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)


def ndcg_at_10(docs: np.ndarray, queries: np.ndarray) -> float:
    """One relevant document per query (query i's is document i): the mean of 1/log2(rank + 1) within the top 10."""
    scores = queries @ docs.T
    own = scores[np.arange(len(queries)), np.arange(len(queries))]
    ranks = 1 + (scores > own[:, None]).sum(axis=1)
    return float(np.mean(np.where(ranks <= 10, 1.0 / np.log2(ranks + 1), 0.0)))


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
