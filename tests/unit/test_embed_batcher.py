"""The embedding micro-batcher (services/embed_batcher.py): a lone call runs at once and alone; calls that arrive
while a batch runs share the next one; every caller gets its own fingerprints; errors reach the callers that
cause them; a cancelled caller strands nobody; and batched fingerprints equal those embedded alone (real
pipeline)."""

from __future__ import annotations

import copy
import threading

import anyio
import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from contextgraph.constitution import Constitution, constitution
from contextgraph.embedders.pipeline import Draft
from contextgraph.errors import EmbeddingError, InvalidParams
from contextgraph.services.runtime.embed_batcher import EmbedBatcher, _embed
from contextgraph.services.runtime.perception import Perception

pytestmark = pytest.mark.anyio


class FakePipeline:
    """Records each call's texts; a text's fingerprint is {1: [len(text), position]}, its triples [text]. Texts
    starting with 'bad' are refused like bad input; `gate`, when set, holds every call until it opens."""

    def __init__(self, broken: bool = False) -> None:
        self.calls: list[list[str]] = []
        self.started = threading.Event()
        self.gate: threading.Event | None = None
        self.broken = broken

    def _run(self, drafts):
        self.calls.append([d.text for d in drafts])
        self.started.set()
        if self.gate is not None:
            self.gate.wait(30)
        if self.broken:
            raise EmbeddingError("E9 (hdc) failed: the model is broken")
        if bad := [d.text for d in drafts if d.text.startswith("bad")]:
            raise InvalidParams(f"bad text {bad[0]!r}", field="text")
        return [{1: np.array([len(d.text), d.global_position], dtype=np.float32)} for d in drafts]

    def embed(self, drafts):
        return self._run(drafts)

    def embed_with_triples(self, drafts):
        return self._run(drafts), [[d.text] for d in drafts]


def drafts_of(*texts: str):
    return lambda: [Draft(text, global_position=i) for i, text in enumerate(texts)]


async def wait_until(condition) -> None:
    with anyio.fail_after(30):
        while not condition():
            await anyio.sleep(0.005)


def own(result, *texts: str) -> bool:
    fingerprints, _triples = result
    return [(int(fp[1][0]), int(fp[1][1])) for fp in fingerprints] == [(len(t), i) for i, t in enumerate(texts)]


async def test_a_lone_call_runs_at_once_and_alone():
    pipeline, batcher = FakePipeline(), EmbedBatcher(anyio.CapacityLimiter(1))
    result = await batcher.embed(pipeline, drafts_of("hello world"))  # type: ignore[arg-type]
    assert own(result, "hello world") and result[1] == [[]]
    assert pipeline.calls == [["hello world"]]
    assert batcher.stats.as_dict() == {"batches": 1, "requests": 1, "largest": 1, "mean_requests_per_batch": 1.0}
    assert batcher.waiting == 0


async def test_calls_arriving_during_a_batch_share_the_next_one():
    pipeline, batcher = FakePipeline(), EmbedBatcher(anyio.CapacityLimiter(1))
    pipeline.gate = threading.Event()
    texts = [f"query number {i}" + "!" * i for i in range(8)]
    results: dict[int, object] = {}

    async def caller(i: int) -> None:
        results[i] = await batcher.embed(pipeline, drafts_of(texts[i], texts[i] + " again"),  # type: ignore[arg-type]
                                         with_triples=i % 2 == 0)

    async with anyio.create_task_group() as tg:
        tg.start_soon(caller, 0)
        await anyio.to_thread.run_sync(pipeline.started.wait, 30)  # the first batch is running
        for i in range(1, 8):
            tg.start_soon(caller, i)
        await wait_until(lambda: batcher.waiting == 7)
        pipeline.gate.set()
    # 8 calls, 2 pipeline calls: the lone first, then the seven that queued behind it, in arrival order
    assert [len(call) for call in pipeline.calls] == [2, 14]
    assert batcher.stats.batches == 2 and batcher.stats.largest == 7
    for i in range(8):
        assert own(results[i], texts[i], texts[i] + " again"), i
        # the batch computes triples once if any caller asks; each caller who asked gets its own drafts' triples
        if i % 2 == 0:
            assert results[i][1] == [[texts[i]], [texts[i] + " again"]]  # type: ignore[index]


async def test_max_batch_caps_each_batch():
    pipeline, batcher = FakePipeline(), EmbedBatcher(anyio.CapacityLimiter(1), max_batch=4)
    pipeline.gate = threading.Event()
    results: dict[int, object] = {}

    async def caller(i: int) -> None:
        results[i] = await batcher.embed(pipeline, drafts_of(f"t{i}"))  # type: ignore[arg-type]

    async with anyio.create_task_group() as tg:
        tg.start_soon(caller, 0)
        await anyio.to_thread.run_sync(pipeline.started.wait, 30)
        for i in range(1, 11):
            tg.start_soon(caller, i)
        await wait_until(lambda: batcher.waiting == 10)
        pipeline.gate.set()
    assert [len(call) for call in pipeline.calls] == [1, 4, 4, 2]
    assert all(own(results[i], f"t{i}") for i in range(11))


async def test_one_callers_bad_input_fails_only_that_caller():
    pipeline, batcher = FakePipeline(), EmbedBatcher(anyio.CapacityLimiter(1))
    pipeline.gate = threading.Event()
    outcomes: dict[str, object] = {}

    async def caller(text: str) -> None:
        try:
            outcomes[text] = await batcher.embed(pipeline, drafts_of(text))  # type: ignore[arg-type]
        except Exception as exc:
            outcomes[text] = exc

    async def broken_drafts() -> None:
        def make():
            raise InvalidParams("no such session", field="session")
        try:
            await batcher.embed(pipeline, make)  # type: ignore[arg-type]
        except InvalidParams as exc:
            outcomes["drafts"] = exc

    async with anyio.create_task_group() as tg:
        tg.start_soon(caller, "first")
        await anyio.to_thread.run_sync(pipeline.started.wait, 30)
        for text in ("good one", "bad one", "good two"):
            tg.start_soon(caller, text)
        tg.start_soon(broken_drafts)
        await wait_until(lambda: batcher.waiting == 4)
        pipeline.gate.set()
    assert own(outcomes["good one"], "good one") and own(outcomes["good two"], "good two")
    assert isinstance(outcomes["bad one"], InvalidParams) and outcomes["bad one"].data["field"] == "text"
    assert isinstance(outcomes["drafts"], InvalidParams) and outcomes["drafts"].data["field"] == "session"
    # the mixed batch failed, then each was embedded alone; the refused drafts never reached the pipeline
    assert pipeline.calls[1:] == [["good one", "bad one", "good two"], ["good one"], ["bad one"], ["good two"]]


async def test_a_broken_pipeline_reaches_every_caller():
    pipeline, batcher = FakePipeline(broken=True), EmbedBatcher(anyio.CapacityLimiter(1))
    pipeline.gate = threading.Event()
    errors: list[BaseException] = []

    async def caller(i: int) -> None:
        with pytest.raises(EmbeddingError, match="the model is broken") as caught:
            await batcher.embed(pipeline, drafts_of(f"t{i}"))  # type: ignore[arg-type]
        errors.append(caught.value)

    async with anyio.create_task_group() as tg:
        tg.start_soon(caller, 0)
        await anyio.to_thread.run_sync(pipeline.started.wait, 30)
        for i in range(1, 4):
            tg.start_soon(caller, i)
        await wait_until(lambda: batcher.waiting == 3)
        pipeline.gate.set()
    assert len(errors) == 4
    # and the batcher is idle again: the next call runs
    pipeline.broken = False
    assert own(await batcher.embed(pipeline, drafts_of("after")), "after")  # type: ignore[arg-type]


@pytest.mark.parametrize("cancelled", [1, 2])
async def test_a_cancelled_caller_strands_nobody(cancelled):
    """Caller 1 is the next batch's lead (the oldest waiting), caller 2 an ordinary member: either cancelled
    while waiting, the others still get their results and the batcher goes idle."""
    pipeline, batcher = FakePipeline(), EmbedBatcher(anyio.CapacityLimiter(1))
    pipeline.gate = threading.Event()
    results: dict[int, object] = {}
    scopes: dict[int, anyio.CancelScope] = {}

    async def caller(i: int) -> None:
        with anyio.CancelScope() as scope:
            scopes[i] = scope
            results[i] = await batcher.embed(pipeline, drafts_of(f"t{i}"))  # type: ignore[arg-type]

    async with anyio.create_task_group() as tg:
        tg.start_soon(caller, 0)
        await anyio.to_thread.run_sync(pipeline.started.wait, 30)
        for i in (1, 2, 3):
            tg.start_soon(caller, i)
        await wait_until(lambda: batcher.waiting == 3)
        scopes[cancelled].cancel()
        await wait_until(lambda: batcher.waiting == 2)
        pipeline.gate.set()
    assert sorted(results) == sorted({0, 1, 2, 3} - {cancelled})
    assert all(own(results[i], f"t{i}") for i in results)
    assert pipeline.calls[1] == [f"t{i}" for i in (1, 2, 3) if i != cancelled]
    assert batcher.waiting == 0 and own(await batcher.embed(pipeline, drafts_of("x")), "x")  # type: ignore[arg-type]


@hypothesis_settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=5), min_size=1, max_size=12))
def test_results_split_back_per_request(sizes):
    """Against the naive reference: each request's slice of one call equals its own call."""
    pipeline = FakePipeline()
    groups = [[Draft(f"r{r}d{d}" + "x" * d, global_position=r * 10 + d) for d in range(n)] for r, n in enumerate(sizes)]
    together = _embed(pipeline, groups, with_triples=True)  # type: ignore[arg-type]
    assert len(pipeline.calls) == 1
    for group, (fingerprints, triples) in zip(groups, together):
        alone_fps, alone_triples = pipeline.embed_with_triples(group)
        assert triples == alone_triples
        assert [fp[1].tolist() for fp in fingerprints] == [fp[1].tolist() for fp in alone_fps]


@pytest.mark.parametrize("parallel", [True, False])
async def test_perception_follows_the_concurrency_settings(settings, parallel):
    """Parallel: reads have a limiter of their own and batches hold up to embed_max_batch requests. Serial (the
    server of before, for benchmarks): reads share the forward limiter and every batch holds one request."""
    data = copy.deepcopy(constitution().data)
    data["concurrency"].update(parallel=parallel, read_threads=3, embed_max_batch=16)
    perception = Perception(settings, Constitution(data, constitution().path), None)  # type: ignore[arg-type]
    if parallel:
        assert perception.reads is not perception.cpu and perception.reads.total_tokens == 3
        assert perception.batcher.max_batch == 16
    else:
        assert perception.reads is perception.cpu and perception.batcher.max_batch == 1
    assert perception.cpu.total_tokens == 1
