"""The memory core's use-cases: store, inject (store + UTL + related) and search.

Storage comes from the StoreHandle, fingerprints from Perception, the edges a new memory gets from the auto-edge
rules; this module only orders the steps. Embedding goes through Perception's batcher (one forward at a time,
concurrent calls' texts in one batch); index queries, fusion and the UTL run in worker threads under
Perception's read limiter, beside other calls' reads and forwards; commits go through the single writer.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import anyio

from contextgraph.constitution import Constitution
from contextgraph.embedders.e05_causal import query_direction
from contextgraph.embedders.pipeline import FingerprintPipeline
from contextgraph.errors import StorageError
from contextgraph.fingerprint import Fingerprint
from contextgraph.log import get_logger
from contextgraph.retrieval.modulation import Modulation
from contextgraph.services.engine.delta_sc_result import DeltaSc, utl_payload
from contextgraph.services.memory.auto_edges import AutoEdgeRules
from contextgraph.services.memory.memory_payloads import Injected, NewMemory, Searched, Stored, record_summary
from contextgraph.services.memory.purpose_port import PurposeSource
from contextgraph.services.memory.search import Retrieval, RetrievalSettings, Retriever
from contextgraph.services.memory.store_pipeline import Committed, Incoming, MemoryListeners, StorePipeline
from contextgraph.services.memory.store_retries import RecentStores
from contextgraph.services.runtime import operation_pulse
from contextgraph.services.runtime.perception import Perception
from contextgraph.services.runtime.store_handle import StoreHandle
from contextgraph.storage.base import MemoryRecord

_log = get_logger("storage")


class MemoryService:
    def __init__(self, handle: StoreHandle, perception: Perception, constitution: Constitution,
                 teleology: PurposeSource | None = None, modulation: Callable[[], Modulation] | None = None,
                 listeners: MemoryListeners | None = None) -> None:
        """`teleology`: the north star (purpose vectors on store, stage 4 on search); `modulation`: what the
        neuromodulators do to retrieval now; `listeners`: who hears of stores and searches. All three are optional
        so that a memory core can run without the engine around it."""
        self.handle = handle
        self.teleology = teleology
        self.perception = perception
        self.constitution = constitution
        self.cognition = handle.cognition
        self.workspace = handle.workspace
        self.retrieval_settings = RetrievalSettings.from_constitution(constitution)
        self.relevance_floor = float(constitution["retrieval"]["relevance_floor"])
        self.edge_rules = AutoEdgeRules(constitution["graph"])
        self.modulation = modulation
        self.listeners = listeners or MemoryListeners()
        m = constitution["memory"]
        self.recent_stores = RecentStores(float(m["retry_window_seconds"]), int(m["retry_remembered"]))
        flag_score = float(constitution["adversarial"]["flag_score"])
        self.store_pipeline = StorePipeline(handle, perception, self.edge_rules, flag_score, teleology, self.listeners)

    async def store(self, new: NewMemory) -> Stored:
        repeated = await self._repeated(new)
        if repeated is not None:
            return repeated
        # The UTL of every stored memory moves the pulse (docs/utl.md), not only inject_context's; its answer does
        # not show it, so it is computed after the answer (docs/engine.md#after-the-answer): ~15-28 ms at 10-100K
        stored, _fingerprint, _utl = await self._store_one(new, with_utl=False)
        return stored

    async def _repeated(self, new: NewMemory) -> Stored | None:
        """The memory a store of this content in this session made within the retry window, if it is live: a
        retry gets it back instead of a copy (services.memory.store_retries). A store that cannot be read now
        refuses the retry (StorageError) rather than guess."""
        memory_id = self.recent_stores.recent(new.content, new.session)
        if memory_id is None:
            return None
        record = await self.handle.read(lambda store: store.get(memory_id))
        if record is None:  # its commit failed, or it was forgotten since: stored anew
            return None
        return Stored(record, list(record.redactions), {}, deduplicated=True)

    async def inject(self, new: NewMemory, related_k: int) -> Injected:
        stored, fingerprint, result = await self._store_one(new, with_utl=True)
        assert result is not None  # scored before the commit: the answer shows it
        utl = utl_payload(result, self.constitution, self.cognition.action_for(result.quadrant))
        related: list[dict[str, Any]] = []
        if related_k:
            pipeline = await self.perception.pipeline()
            # the candidates: the neighbourhood the UTL computation gathered from every space's own index
            # (the k nearest and the next k in each), already read; stages 3-5 rank them as search_graph would
            seqs = list(result.neighbourhood)
            try:
                retrieval = await anyio.to_thread.run_sync(
                    lambda: self.retriever(pipeline).rank(fingerprint, seqs,
                                                          [result.neighbourhood[s] for s in seqs], related_k),
                    limiter=self.perception.reads,
                )
            except StorageError:  # the memory is committed: unreadable neighbours are left out, not its error
                _log.warning("related memories unreadable after a commit", id=stored.record.id, exc_info=True)
                return Injected(stored, utl, [], related_unavailable=True)
            related = [{**record_summary(f.record, preview=280), "score": f.score, "similarity": f.similarity}
                       for f in retrieval.found]
            await self.handle.after_answer.run(lambda: self._compete(fingerprint, retrieval), "inject competition")
        return Injected(stored, utl, related)

    async def search(self, query: str, *, top_k: int, min_similarity: float, modality: str | None,
                     breakdown: bool, stage4: bool | str = True) -> Searched:
        await self.handle.ready()
        pipeline = await self.perception.pipeline()
        started = time.perf_counter()
        fingerprint = await self.perception.embed_query(query, modality or "text")
        embed_ms = round((time.perf_counter() - started) * 1000, 3)  # with the wait for its batch

        def run() -> tuple[Searched, DeltaSc]:
            retrieval = self.retriever(pipeline).run(fingerprint, top_k, min_similarity=min_similarity,
                                                      modality=modality, causal_direction=query_direction(query),
                                                      query_text=query,  # what kind of query (time, code, prose)
                                                      stage4=stage4)
            # D16: the query's novelty against its answer, and the answer's coherence, move the pulse. Scored
            # here, ~6-8 ms: after the answer it ran beside the next search on two cores and cost that search
            # more than it saved (docs/engine.md#after-the-answer)
            answer = {f.record.seq: f.fingerprint for f in retrieval.found}  # as stage 3 read them
            # and their similarities to the query, measured by retrieval for the agreements: not measured again
            measured = {f.record.seq: f.similarities for f in retrieval.found if f.similarities is not None}
            utl = operation_pulse.score(self.handle, pipeline.embedders, fingerprint, pool=answer,
                                        pool_similarities=measured)
            return Searched(query, retrieval, breakdown, embed_ms, relevance_floor=self.relevance_floor), utl

        searched, utl = await anyio.to_thread.run_sync(run, limiter=self.perception.reads)
        # what the search tells the engine, after the answer and in order with the other operations' work
        await self.handle.after_answer.run(lambda: self._searched(utl, fingerprint, searched), "after search")
        await self.handle.save_engine_after_commit()  # the competition's events, at most once per interval
        # access counts are bookkeeping, gathered and written in a batch now and then (runtime/access_counts.py)
        self.handle.count_accesses([f.record.seq for f in searched.retrieval.found])
        return searched

    async def settled(self) -> None:
        """Returns once the cognitive work of the operations answered so far has run (tests, benchmarks)."""
        await self.handle.settled()

    # -- internals -------------------------------------------------------------------------------------------
    def _searched(self, utl: DeltaSc, fingerprint: Fingerprint, searched: Searched) -> None:
        """What a search tells the engine (the handle's worker thread): its pulse score is folded in, its results
        compete for the workspace, the listeners hear."""
        retrieval = searched.retrieval
        operation_pulse.fold(self.handle, [utl])
        self._compete(fingerprint, retrieval)
        for hook in self.listeners.after_search:
            hook(len(retrieval.found))
        for listener in self.listeners.after_results:
            try:
                listener(searched.query, retrieval)
            except Exception:  # the answer stands: a listener's fault is logged, never the caller's error
                _log.exception("search results listener failed")

    def _compete(self, context: Fingerprint, retrieval: Retrieval) -> None:
        """The operation's results compete for the global workspace against its fingerprint (the context)."""
        alignments = None if any(f.alignment is None for f in retrieval.found) else \
            [f.alignment or 0.0 for f in retrieval.found]
        self.workspace.observe(context, [(f.record.id, f.agreements, f.record.importance) for f in retrieval.found],
                               retrieval.reference, alignments)

    def retriever(self, pipeline: FingerprintPipeline) -> Retriever:
        """A retriever over the store, with the store model's reference sample for binding (from a worker
        thread: a store without a fitted model fits one here)."""
        store, indexes = self.handle.store, self.handle.indexes
        model = self.handle.delta_sc.model(store, indexes, {e.space: e for e in pipeline.embedders})
        reference = model.reference_columns  # the store model's uniform sample, one array per space
        purpose = None
        if self.teleology is not None:
            self.teleology.use_embedders(pipeline.embedders)
            self.teleology.refresh()  # another process may have set a star (a store read: this is a worker thread)
            purpose = self.teleology.star_view()
        retriever = Retriever(store, indexes, pipeline.embedders, self.retrieval_settings, reference, purpose)
        retriever.stale_spaces = self.handle.space_refresh.check(store)
        if self.modulation is not None:
            retriever.modulation = self.modulation()
        return retriever

    async def _store_one(self, new: NewMemory, with_utl: bool) -> tuple[Stored, Fingerprint, DeltaSc | None]:
        """The store pipeline for a batch of one: fingerprinted through Perception's batcher (beside other
        calls' texts), committed by one put that resolves the session's Temporal edge in its transaction."""
        handle = await self.handle.ready()
        store, rules = handle.store, self.edge_rules
        item = Incoming.of(new)
        links = await anyio.to_thread.run_sync(rules.resolve_links, store, new.link_to,
                                               limiter=self.perception.reads)
        pipeline = await self.perception.pipeline()
        timings: dict[str, float] = {}

        started = time.perf_counter()
        (fingerprint,), (triples,) = await self.perception.fingerprints(
            lambda: [self.perception.draft(item.content, new.modality, new.session,
                                           rules.neighbour_vectors(store, links))],
            with_triples=True)
        timings["embed"] = round((time.perf_counter() - started) * 1000, 3)  # with the wait for its batch
        (scored,) = await self.store_pipeline.score(pipeline, [item], [fingerprint], [triples], [links],
                                                    follow_session=True, with_utl=with_utl)
        now = time.time()
        memory_id = uuid.uuid4().hex
        self.recent_stores.remember(new.content, new.session, memory_id)  # before the commit: its answer may be lost
        edges, temporal = rules.edges(memory_id, links, scored.similar, scored.causal, now)
        record = MemoryRecord(
            id=memory_id,
            content=item.content,
            rationale=item.rationale,
            modality=new.modality,
            session=new.session,
            created_at=now,
            updated_at=now,
            importance=new.importance,
            tags=new.tags,
            links=tuple(links),
            redactions=item.redactions,
            extra=self.store_pipeline.extra(item, scored),
        )
        started = time.perf_counter()
        # durable once this returns, with its edges and lineage in the same transaction
        record = await handle.writer.submit(store.put, record, fingerprint, edges, temporal, triples)
        # Nine HNSW inserts: milliseconds at scale, so off the event loop but before the answer. (Inserting after
        # the answer, on a thread of its own, was measured at 100K: back-to-back stores then contend with it on
        # two cores and store_memory's p95 doubled, 42 → 101 ms.) A failed insert is logged; the oplog catch-up
        # before the next search indexes the memory.
        await anyio.to_thread.run_sync(self._apply_index, record.seq, fingerprint)
        timings["commit"] = round((time.perf_counter() - started) * 1000, 3)
        await self.store_pipeline.after_commit([Committed(record, fingerprint, scored.utl, triples)],
                                               (edge.other(record.id) for edge in edges), now, pipeline.embedders)
        _log.info("memory stored", id=record.id, seq=record.seq, modality=record.modality,
                  redactions=len(record.redactions))
        return Stored(record, list(record.redactions), timings), fingerprint, scored.utl

    def _apply_index(self, seq: int, fingerprint: Fingerprint) -> None:
        try:
            self.handle.indexes.apply(seq, fingerprint)
        except Exception:  # the next catch-up indexes it from the oplog instead
            _log.exception("background index insert failed; the oplog catch-up will index it", seq=seq)
