"""Fingerprints for large batches from several worker processes, each running its own pipeline: the bulk path
(`contextgraph import --workers N`, the GPU benchmark) on a machine with cores to spare.

Why processes: after the transformer, the 13 embedders are per-memory work in numpy and `re` that holds the GIL
(3-5 ms a memory of 100-200 tokens), so one process fingerprints at most a few hundred memories a second however
fast its forward is. On an H100 the forward of 4,096 such memories takes a fraction of a second and the host
work after it most of a minute on one core. N workers fingerprint N shards at once, each with its own backbone
(on a GPU: its own CUDA context and model copy, ~0.5 GB of device memory) and its own embedders.

What crosses a process boundary: drafts in, fingerprints and E11 triples out (~30 KB a memory). Token states
never do. Workers are started with `spawn` (CUDA cannot be used in a forked child, and a fork would copy the
parent's thread pools in whatever state they are), and limit their own BLAS, tokenizer and torch threads to one
each, so N workers use N cores.

The result is the same as `FingerprintPipeline.embed` on the whole batch in one process: every memory's
fingerprint depends on its own draft only, and the shards come back in order."""

from __future__ import annotations

import dataclasses
import math
import multiprocessing
import os
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import Any

from contextgraph.embedders.backbone import default_model_dir
from contextgraph.embedders.pipeline import Draft, FingerprintPipeline, StageTimings, check_draft, load_pipeline
from contextgraph.fingerprint import Fingerprint

START_TIMEOUT_S = 600  # a worker loads a model: seconds on a CPU, longer on a cold disk; not forever
MIN_SHARD = 16  # fewer memories per task and the round trip costs more than the work it spreads


@dataclass(frozen=True, slots=True)
class PipelineSpec:
    """What a worker needs to build the same pipeline as the parent (load_backbone's arguments); picklable."""

    cache_dir: str  # where the ONNX graph is cached (Settings.models_dir)
    model_dir: str | None = None  # None: the packaged all-MiniLM-L6-v2
    runtime: str = "auto"
    device: str = "cpu"
    dtype: str | None = None
    quantized: bool = False
    code_model: str = "shipped"  # E7's encoder: Settings.code_model

    @classmethod
    def from_settings(cls, settings: Any, **overrides: Any) -> PipelineSpec:
        """The server's pipeline as `settings` describe it, with `overrides` (runtime="torch", dtype=...)."""
        spec = cls(cache_dir=str(settings.models_dir),
                   model_dir=None if settings.model_dir is None else str(settings.model_dir),
                   runtime=settings.runtime, device=settings.device, quantized=settings.quantized,
                   code_model=settings.code_model)
        return dataclasses.replace(spec, **overrides)

    def build(self) -> FingerprintPipeline:
        model_dir = Path(self.model_dir) if self.model_dir else default_model_dir()
        return load_pipeline(model_dir, Path(self.cache_dir), runtime=self.runtime, quantized=self.quantized,
                             device=self.device, dtype=self.dtype, code_model=self.code_model)


_worker_pipeline: FingerprintPipeline | None = None  # one per worker process, built by _start_worker


def _start_worker(spec: PipelineSpec) -> None:
    global _worker_pipeline
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)  # one core per worker: N workers beside each other, not N × BLAS threads
    os.environ["TOKENIZERS_PARALLELISM"] = "false"  # nor N × the tokenizer's thread pool (one per core)
    if spec.runtime == "torch" or spec.device.startswith("cuda"):
        import torch

        torch.set_num_threads(1)
    _worker_pipeline = spec.build()


def _embed_shard(drafts: list[Draft], with_triples: bool) -> tuple[list[Fingerprint], list[list[Any]], StageTimings]:
    pipeline = _worker_pipeline
    assert pipeline is not None, "worker started without its pipeline"
    if with_triples:
        fingerprints, triples = pipeline.embed_with_triples(drafts)
    else:
        fingerprints, triples = pipeline.embed(drafts), [[] for _ in drafts]
    assert pipeline.last_timings is not None
    return fingerprints, triples, pipeline.last_timings


def _started(pause_s: float) -> int:
    """This worker's pid once its pipeline is built; the pause keeps one worker from taking every such task."""
    assert _worker_pipeline is not None
    time.sleep(pause_s)
    return os.getpid()


class PipelinePool:
    """`embed` / `embed_with_triples` as FingerprintPipeline's, over `workers` processes. Use as a context
    manager, or call `close()`: the workers hold models (and on a GPU, device memory) until then."""

    def __init__(self, spec: PipelineSpec, workers: int, *, shard_size: int | None = None) -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self.spec, self.workers, self.shard_size = spec, workers, shard_size
        self._executor = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=_start_worker, initargs=(spec,))
        self.last_timings: StageTimings | None = None  # the workers' stage times summed (busy time)
        self.last_wall_ms: float | None = None  # the last batch's wall time in this process

    def start(self) -> PipelinePool:
        """Start every worker and build its pipeline now (seconds each), so the first batch is not timed with it."""
        seen: set[int] = set()
        deadline = time.monotonic() + START_TIMEOUT_S
        # rounds of one short task per worker until each has answered (a worker takes tasks only once its
        # pipeline is built); a build error raises here, from the executor
        while len(seen) < self.workers:
            if time.monotonic() > deadline:
                raise BrokenProcessPool(f"{self.workers - len(seen)} of {self.workers} workers did not start within "
                                        f"{START_TIMEOUT_S} s")
            seen.update(self._executor.map(_started, [0.05] * self.workers))
        return self

    def embed(self, items: Sequence[Draft]) -> list[Fingerprint]:
        return self._embed(items, with_triples=False)[0]

    def embed_with_triples(self, items: Sequence[Draft]) -> tuple[list[Fingerprint], list[list[Any]]]:
        return self._embed(items, with_triples=True)

    def shards(self, count: int) -> list[range]:
        """Contiguous index ranges: about two per worker (so one slow shard does not leave the others idle),
        never smaller than MIN_SHARD unless the batch is, never larger than `shard_size` when set."""
        size = max(MIN_SHARD, math.ceil(count / (2 * self.workers)))
        if self.shard_size:
            size = min(size, self.shard_size)
        return [range(lo, min(lo + size, count)) for lo in range(0, count, size)]

    def _embed(self, items: Sequence[Draft], *, with_triples: bool) -> tuple[list[Fingerprint], list[list[Any]]]:
        started = time.perf_counter()
        for draft in items:  # a bad draft fails here, with its error's details, before any worker sees the batch
            check_draft(draft)
        items = list(items)
        chunks = [items[r.start : r.stop] for r in self.shards(len(items))]
        fingerprints: list[Fingerprint] = []
        triples: list[list[Any]] = []
        timings: list[StageTimings] = []
        for fps, found, stage in self._executor.map(_embed_shard, chunks, repeat(with_triples)):
            fingerprints.extend(fps)
            triples.extend(found)
            timings.append(stage)
        self.last_timings = _summed(timings, len(items))
        self.last_wall_ms = (time.perf_counter() - started) * 1e3
        return fingerprints, triples

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> PipelinePool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _summed(timings: Sequence[StageTimings], items: int) -> StageTimings:
    """The workers' stage times added up: busy time over all processes, so shares (embedders / total) read as
    in one process; the wall time is PipelinePool.last_wall_ms."""
    embedder_ms: dict[int, float] = {}
    for stage in timings:
        for space, ms in stage.embedder_ms.items():
            embedder_ms[space] = embedder_ms.get(space, 0.0) + ms
    return StageTimings(items=items, encode_ms=sum(t.encode_ms for t in timings), embedder_ms=embedder_ms,
                        validate_ms=sum(t.validate_ms for t in timings), total_ms=sum(t.total_ms for t in timings))
