"""Micro-batching of embedding requests: the drafts of concurrent calls go through one `pipeline.embed` call.

Natural batching, no timer by default: a request that finds the batcher idle runs at once (a lone client is not
slowed), and requests that arrive while a batch runs queue up; when it ends, the first of them is handed the lead
and runs all that queued (up to `max_batch` requests) as the next batch. Only one batch runs at a time, under the
`limiter` it is given (Perception.cpu: two forwards at once only contend on two cores, docs/budgets.md).

Coordination lives on the event loop (no locks): the queue and the lead are touched only there; the batch itself
runs in a worker thread. Each caller gets exactly its own fingerprints (and triples). A batch that fails is
retried one request at a time, so one caller's bad input fails that caller alone; a failure that is the same
for every request (the model broke) reaches each of them as its own error.

Results equal embedding alone: every embedder computes each memory from its own token states, and a forward
batch pads rows under the attention mask; tests/unit/test_embed_batcher.py measures the gap (E12's token vectors
differ by < 1e-5, and the ranking spaces by nothing this pipeline can see).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from contextgraph.embedders.pipeline import Draft, FingerprintPipeline
from contextgraph.errors import EmbeddingError
from contextgraph.fingerprint import Fingerprint

Embedded = tuple[list[Fingerprint], list[list[Any]]]  # fingerprints, and E11 triples per draft


@dataclass(eq=False)
class _Request:
    pipeline: FingerprintPipeline
    make_drafts: Callable[[], Sequence[Draft]]  # called in the worker thread: drafts read the store
    with_triples: bool
    done: anyio.Event = field(default_factory=anyio.Event)
    outcome: Embedded | BaseException | None = None
    lead: bool = False  # handed the next batch: it runs the queue instead of waiting for a result


@dataclass
class BatchStats:
    batches: int = 0
    requests: int = 0
    largest: int = 0

    def as_dict(self) -> dict[str, float]:
        mean = self.requests / self.batches if self.batches else 0.0
        return {"batches": self.batches, "requests": self.requests, "largest": self.largest,
                "mean_requests_per_batch": round(mean, 3)}


class EmbedBatcher:
    def __init__(self, limiter: anyio.CapacityLimiter, *, max_batch: int = 32, collect_s: float = 0.0) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be ≥ 1, got {max_batch}")
        self._limiter = limiter
        self.max_batch = max_batch
        self.collect_s = max(0.0, collect_s)
        self._pending: deque[_Request] = deque()
        self._busy = False
        self.stats = BatchStats()

    @property
    def waiting(self) -> int:
        """Requests queued for the next batch."""
        return len(self._pending)

    async def embed(self, pipeline: FingerprintPipeline, make_drafts: Callable[[], Sequence[Draft]], *,
                    with_triples: bool = False) -> Embedded:
        """The fingerprints (and, with_triples, E11 triples) of the drafts `make_drafts()` returns, embedded in
        one batch with whatever other requests are waiting."""
        request = _Request(pipeline, make_drafts, with_triples)
        self._pending.append(request)
        if self._busy:
            try:
                await request.done.wait()
            except BaseException:  # cancelled while queued: never run it, and never strand the lead
                self._leave(request)
                raise
            if not request.lead:
                return _result(request)
        self._busy = True
        await self._run_batch(request)
        return _result(request)

    async def _run_batch(self, first: _Request) -> None:
        batch: list[_Request] = []
        try:
            if self.collect_s:
                await anyio.sleep(self.collect_s)  # let concurrent requests join (costs a lone caller this much)
            batch = self._take(first)
            outcomes = await anyio.to_thread.run_sync(_embed_each, batch, limiter=self._limiter)
            for request, outcome in zip(batch, outcomes):
                request.outcome = outcome
        finally:
            if first in self._pending:  # cancelled before it took its batch
                self._pending.remove(first)
            for request in batch:  # interrupted (cancelled, or a bug): nobody in it may wait forever
                if request.outcome is None:
                    request.outcome = EmbeddingError("The embedding batch was interrupted; retry.", retry=True)
                if request is not first:
                    request.done.set()
            self._pass_lead()

    def _take(self, first: _Request) -> list[_Request]:
        """`first` and the oldest waiting requests for the same pipeline, at most max_batch in all."""
        self._pending.remove(first)
        batch, kept = [first], deque[_Request]()
        while self._pending:
            request = self._pending.popleft()
            (batch if len(batch) < self.max_batch and request.pipeline is first.pipeline else kept).append(request)
        self._pending = kept
        self.stats.batches += 1
        self.stats.requests += len(batch)
        self.stats.largest = max(self.stats.largest, len(batch))
        return batch

    def _pass_lead(self) -> None:
        """The oldest waiting request runs the next batch; with none waiting, the batcher is idle."""
        if self._pending:
            head = self._pending[0]
            head.lead = True
            head.done.set()
        else:
            self._busy = False

    def _leave(self, request: _Request) -> None:
        if request in self._pending:
            self._pending.remove(request)
            if request.lead:  # it was woken to lead but cancelled first: the next one leads instead
                self._pass_lead()


def _result(request: _Request) -> Embedded:
    outcome = request.outcome
    if isinstance(outcome, BaseException):
        raise outcome
    assert outcome is not None
    return outcome


def _embed_each(batch: Sequence[_Request]) -> list[Embedded | BaseException]:
    """The worker thread's part: every request's drafts in one pipeline call, split back per request. Drafts that
    cannot be made fail only their request; a pipeline error in a batch of several retries each alone, so it
    reaches the requests that cause it (every one, when the error is not about the input)."""
    outcomes: list[Embedded | BaseException | None] = [None] * len(batch)
    drafts: list[list[Draft]] = []
    for i, request in enumerate(batch):
        try:
            drafts.append(list(request.make_drafts()))
        except Exception as exc:
            outcomes[i] = exc
            drafts.append([])
    live = [i for i, outcome in enumerate(outcomes) if outcome is None]
    if live:
        try:
            embedded = _embed(batch[live[0]].pipeline, [drafts[i] for i in live],
                              any(batch[i].with_triples for i in live))
            for i, out in zip(live, embedded):
                outcomes[i] = out
        except Exception as exc:
            if len(live) == 1:
                outcomes[live[0]] = exc
            else:
                for i in live:
                    try:
                        outcomes[i] = _embed(batch[i].pipeline, [drafts[i]], batch[i].with_triples)[0]
                    except Exception as alone:
                        outcomes[i] = alone
    return [outcome for outcome in outcomes if outcome is not None]


def _embed(pipeline: FingerprintPipeline, groups: list[list[Draft]], with_triples: bool) -> list[Embedded]:
    """One pipeline call for all groups' drafts; each group's slice of the results, in order."""
    flat = [draft for group in groups for draft in group]
    if with_triples:
        fingerprints, triples = pipeline.embed_with_triples(flat)
    else:
        fingerprints, triples = pipeline.embed(flat), [[] for _ in flat]
    out, at = [], 0
    for group in groups:
        out.append((fingerprints[at:at + len(group)], triples[at:at + len(group)]))
        at += len(group)
    return out
