"""The memory core's use-cases: store, inject (store + UTL + related), search, manifest.

Owns, for one data directory: the LMDB store (source of truth), the per-space indexes (caches that catch up
from the store's operation log before every search, so a second server process's writes are seen), the one
writer thread, and the embedding pipeline, whose transformer loads in the background after start-up.
CPU work (embedding, index queries, fusion) runs in worker threads; one forward pass at a time.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import numpy as np

from contextgraph.errors import EmbeddingError, NodeNotFound
from contextgraph.fingerprint import SPACES, Fingerprint
from contextgraph.log import get_logger
from contextgraph.security.pii import redact
from contextgraph.services import engine_state
from contextgraph.services.delta_sc import DeltaSc, DeltaScComputer, utl_payload
from contextgraph.services.search import Retrieval, RetrievalSettings, Retriever
from contextgraph.services.tombstones import expired_ids, purge_expired
from contextgraph.storage.base import MemoryRecord
from contextgraph.storage.maintenance import INDEX_DIR

_log = get_logger("storage")


@dataclass(frozen=True, slots=True)
class NewMemory:
    content: str
    rationale: str
    modality: str = "text"
    importance: float = 0.5
    tags: tuple[str, ...] = ()
    link_to: tuple[str, ...] = ()
    session: str = "local"


def record_summary(record: MemoryRecord, preview: int | None = None) -> dict[str, Any]:
    content = record.content if preview is None or len(record.content) <= preview else record.content[:preview] + "…"
    return {
        "id": record.id,
        "content": content,
        "modality": record.modality,
        "tags": list(record.tags),
        "importance": record.importance,
        "created_at": record.created_at,
        "session": record.session,
    }


@dataclass
class Stored:
    record: MemoryRecord
    redactions: list[str]
    timings_ms: dict[str, float]

    def payload(self) -> dict[str, Any]:
        r = self.record
        payload = {
            "id": r.id,
            "fingerprintId": r.id,
            "stored": True,
            "durable": True,
            "session": r.session,
            "modality": r.modality,
            "importance": r.importance,
            "tags": list(r.tags),
            "links": list(r.links),
            "created_at": r.created_at,
            "redacted": sorted(set(self.redactions)),
            "timings_ms": self.timings_ms,
        }
        if self.redactions:
            payload["message"] = (f"{len(self.redactions)} secret(s) were replaced by [REDACTED:type] before "
                                  "anything was embedded or stored.")
        return payload


@dataclass
class Injected:
    stored: Stored
    utl: dict[str, Any]
    related: list[dict[str, Any]]

    def payload(self) -> dict[str, Any]:
        return {**self.stored.payload(), "utl": self.utl, "related": self.related}


@dataclass
class Searched:
    query: str
    retrieval: Retrieval
    breakdown: bool
    embed_ms: float
    redactions: list[str] = field(default_factory=list)

    def payload(self) -> dict[str, Any]:
        results = []
        for f in self.retrieval.found:
            item = {**record_summary(f.record), "score": f.score, "similarity": f.similarity}
            if self.breakdown:
                item["space_ranks"] = {SPACES[s - 1].name: rank for s, rank in sorted(f.space_ranks.items())}
            results.append(item)
        payload: dict[str, Any] = {"query": self.query, "results": results, "count": len(results)}
        if self.breakdown:
            payload["stages_ms"] = {"embed_query": self.embed_ms, **self.retrieval.stages_ms}
            payload["candidates"] = self.retrieval.candidates
            payload["stage4"] = self.retrieval.stage4
        if not results:
            payload["message"] = ("Nothing matched. Try other words, lower min_similarity, or drop the modality "
                                  "filter." if self.retrieval.candidates else "The memory is empty or nothing "
                                  "shares a word or meaning with the query yet.")
        return payload


class MemoryService:
    def __init__(self, settings: Any, constitution: Any, cognition: Any, workspace: Any) -> None:
        self.settings = settings
        self.constitution = constitution
        self.cognition = cognition
        self.workspace = workspace
        self._engine_saved_at = 0.0
        self._engine_save_interval = float(constitution["gwt"]["persistence"]["save_interval_seconds"])
        self.home = Path(settings.home)
        self._retrieval_settings = RetrievalSettings.from_constitution(constitution)
        mem = constitution["memory"]
        self._model_wait = float(mem["model_wait_seconds"])
        self._graph = constitution["graph"]
        self.delta_sc = DeltaScComputer(constitution)
        self._open_lock = threading.Lock()
        self._store: Any = None
        self._indexes: Any = None
        self._saved_seq = 0
        self._writer: Any = None
        self._pipeline: Any = None
        self._pipeline_ready = threading.Event()
        self._pipeline_error: BaseException | None = None
        self._loader: threading.Thread | None = None
        self._cpu = anyio.CapacityLimiter(1)  # one forward pass / fusion at a time (MEASUREMENTS: no contention)

    # -- lifecycle -------------------------------------------------------------------------------------------
    def open(self) -> None:
        """Open the store and indexes (idempotent). Cheap: no model is loaded here."""
        with self._open_lock:
            if self._store is not None:
                return
            from contextgraph.storage.indexes import IndexSet
            from contextgraph.storage.lmdb_store import LmdbStore
            from contextgraph.storage.maintenance import STORE_DIR
            from contextgraph.storage.writer import Writer

            self.home.mkdir(parents=True, exist_ok=True)
            store = LmdbStore(self.home / STORE_DIR)
            indexes = IndexSet.open(self.home / INDEX_DIR, store)
            self._writer = Writer()
            self._indexes = indexes
            self._saved_seq = indexes.applied_seq  # what the files on disk reflect
            self._store = store
            engine_state.load(store, self.cognition, self.workspace)
            window, now = float(self.constitution["curation"]["recovery_window_days"]) * 86400.0, time.time()
            if store.graph_read(lambda g: expired_ids(g, now, window)):  # a write only when there is work
                purged = store.graph_write(lambda g: purge_expired(g, now, window))
                _log.info("expired tombstones purged", count=len(purged))

    async def opened(self) -> MemoryService:
        """open() off the event loop (loading large indexes takes seconds), for handlers that only need the
        store or the engine state the store holds."""
        if self._store is None:
            await anyio.to_thread.run_sync(self.open)
        return self

    def start_model_load(self) -> None:
        """Open the store and load the transformer in a background thread, so initialize and tools/list answer
        at once; callers that need either wait for it."""
        with self._open_lock:
            if self._loader is not None:
                return
            self._loader = threading.Thread(target=self._load_pipeline, name="contextgraph-model", daemon=True)
            self._loader.start()

    def _load_pipeline(self) -> None:
        try:
            self.open()
            from contextgraph.embedders.pipeline import build_pipeline

            started = time.perf_counter()
            self._pipeline = build_pipeline(self.settings)
            _log.info("embedding pipeline ready", seconds=round(time.perf_counter() - started, 2),
                      runtime=self._pipeline.backbone.runtime)
        except BaseException as exc:  # reported to every caller that waits for it
            self._pipeline_error = exc
            _log.exception("embedding pipeline failed to load")
        finally:
            self._pipeline_ready.set()

    async def pipeline(self) -> Any:
        self.start_model_load()
        if not self._pipeline_ready.is_set():
            ready = await anyio.to_thread.run_sync(self._pipeline_ready.wait, self._model_wait)
            if not ready:
                raise EmbeddingError(f"The embedding model is still loading after {self._model_wait:.0f} s; retry "
                                     "shortly.", retry=True)
        if self._pipeline_error is not None:
            raise EmbeddingError(f"The embedding model could not be loaded ({type(self._pipeline_error).__name__}: "
                                 f"{self._pipeline_error}). `contextgraph doctor` says what is missing.")
        return self._pipeline

    def close(self) -> None:
        with self._open_lock:
            if self._store is None:
                return
            try:
                self.delta_sc.close()  # no background refit may read the store once it closes
                if self.cognition.dirty or self.workspace.dirty:
                    try:
                        engine_state.save(self._store, self.cognition, self.workspace)
                    except Exception:  # the memories are safe; only the engine's latest state is lost
                        _log.exception("saving the engine state on close failed")
                self._writer.close()
                # Saving is a cache write (large at scale): skip it when nothing changed since the load.
                self._indexes.catch_up(self._store)
                if self._indexes.applied_seq != self._saved_seq:
                    self._indexes.save(self.home / INDEX_DIR)
            finally:
                self._store.close()
                self._store = None
                self.delta_sc = DeltaScComputer(self.constitution)  # fitted models belong to the store just closed

    async def save_engine(self, force: bool = True) -> None:
        """Write the engine state to the store: at most once per save interval during activity, or now."""
        now = time.monotonic()
        if not force and now - self._engine_saved_at < self._engine_save_interval:
            return
        await self.opened()
        self._engine_saved_at = now
        await self._writer.submit(engine_state.save, self._store, self.cognition, self.workspace)

    async def _save_engine_after_commit(self) -> None:
        """The periodic save that follows an acknowledged write: its failure must not turn the write's answer
        into an error (the client would retry and store it twice); it is logged, and the next save retries."""
        try:
            await self.save_engine(force=False)
        except Exception:
            _log.exception("saving the engine state failed; the next operation or close retries")

    # -- use-cases -------------------------------------------------------------------------------------------
    async def store(self, new: NewMemory) -> Stored:
        stored, _fingerprint, _utl = await self._store_one(new)
        return stored

    async def inject(self, new: NewMemory, related_k: int) -> Injected:
        stored, fingerprint, result = await self._store_one(new, with_novelty=True)
        utl = utl_payload(result, self.constitution)
        related: list[dict[str, Any]] = []
        if related_k:
            pipeline = await self.pipeline()
            # the candidates: the neighbourhood the UTL computation gathered from every space's own index
            # (the k nearest and the next k in each), already read; stages 3-5 rank them as search_graph would
            seqs = list(result.neighbourhood)
            retrieval = await anyio.to_thread.run_sync(
                lambda: self._retriever(pipeline).rank(fingerprint, seqs, [result.neighbourhood[s] for s in seqs],
                                                       related_k),
                limiter=self._cpu,
            )
            related = [{**record_summary(f.record, preview=280), "score": f.score, "similarity": f.similarity}
                       for f in retrieval.found]
            self._compete(fingerprint, retrieval)
        return Injected(stored, utl, related)

    async def search(self, query: str, *, top_k: int, min_similarity: float, modality: str | None,
                     breakdown: bool) -> Searched:
        self.open()
        pipeline = await self.pipeline()

        def run() -> tuple[Searched, Fingerprint]:
            from contextgraph.embedders.e05_causal import query_direction

            started = time.perf_counter()
            (fingerprint,) = pipeline.embed([self._draft(query, modality or "text", None)])
            embed_ms = round((time.perf_counter() - started) * 1000, 3)
            retrieval = self._retriever(pipeline).run(fingerprint, top_k, min_similarity=min_similarity,
                                                      modality=modality, causal_direction=query_direction(query))
            return Searched(query, retrieval, breakdown, embed_ms), fingerprint

        searched, fingerprint = await anyio.to_thread.run_sync(run, limiter=self._cpu)
        self._compete(fingerprint, searched.retrieval)
        await self._save_engine_after_commit()  # the competition's events, at most once per interval
        if searched.retrieval.found:
            # access counts are bookkeeping, not an acknowledgement: the search does not wait for the commit
            self._writer.submit_future(self._store.touch, [f.record.seq for f in searched.retrieval.found])
        return searched

    def _compete(self, context: Fingerprint, retrieval: Retrieval) -> None:
        """The operation's results compete for the global workspace against its fingerprint (the context)."""
        self.workspace.observe(context, [(f.record.id, f.agreements, f.record.importance) for f in retrieval.found],
                               retrieval.reference)

    def space_scores(self, query: Fingerprint, docs: list[Fingerprint]) -> dict[int, np.ndarray]:
        """Each space's score of `docs` against `query`, as retrieval's stage 3 measures them."""
        return self._retriever(self._pipeline).space_scores(query, docs, "both")

    async def embed_texts(self, texts: list[str], modality: str,
                          session: str | None) -> tuple[list[Fingerprint], list[list]]:
        """Fingerprints and E11 triples for texts about to be stored by another use-case (a merge's combined
        content) or never stored (compute_delta_sc's what-if versions); PII redacted as on store."""
        self.open()
        pipeline = await self.pipeline()
        drafts = [self._draft(redact(text)[0], modality, session) for text in texts]
        return await anyio.to_thread.run_sync(lambda: pipeline.embed_with_triples(drafts), limiter=self._cpu)

    def live_record(self, memory_id: str) -> MemoryRecord:
        """The live memory with this id, or NodeNotFound (-32012) with the hint every tool gives."""
        self.open()
        record = self._store.get(memory_id)
        if record is None:
            raise NodeNotFound(f"No live memory has id {memory_id}. search_graph finds memories by content.",
                               node_id=memory_id)
        return record

    def stored_triples(self, memory_id: str) -> list[Any]:
        self.open()
        return self._store.triples_of(memory_id)

    def edges_of(self, memory_id: str) -> list[Any]:
        self.open()
        return self._store.graph_read(lambda g: g.edges(memory_id))

    @property
    def writer(self) -> Any:
        self.open()
        return self._writer

    # -- read-only views for the manifest -----------------------------------------------------------------------
    @property
    def record_store(self) -> Any:
        self.open()
        return self._store

    @property
    def indexes(self) -> Any:
        self.open()
        return self._indexes

    def loaded_pipeline(self) -> Any:
        return self._pipeline if self._pipeline_ready.is_set() and self._pipeline_error is None else None

    def model_status(self) -> str:
        if self._pipeline_error is not None:
            return f"failed: {type(self._pipeline_error).__name__}: {self._pipeline_error}"
        return "ready" if self._pipeline_ready.is_set() else "loading"

    # -- internals -------------------------------------------------------------------------------------------
    def _retriever(self, pipeline: Any) -> Retriever:
        return Retriever(self._store, self._indexes, pipeline.embedders, self._retrieval_settings)

    def _draft(self, text: str, modality: str, session: str | None, neighbours: tuple = ()) -> Any:
        """A memory to fingerprint now: the next position in its session and in the store. A query (session
        None) sits at the head of the store, so the temporal spaces favour what is recent."""
        from contextgraph.embedders.pipeline import Draft

        return Draft(
            text=text,
            modality=modality,
            timestamp=time.time(),
            session_position=0 if session is None else self._store.session_count(session),
            global_position=self._store.last_seq() + 1,
            neighbours=neighbours,
        )

    async def _store_one(self, new: NewMemory,
                         with_novelty: bool = False) -> tuple[Stored, Fingerprint, DeltaSc | None]:
        """Embed, score (with_novelty: the full UTL against the store before the put), commit, index."""
        self.open()
        content, found = redact(new.content)
        rationale, found_in_rationale = redact(new.rationale)
        links = self._resolve_links(new.link_to)
        pipeline = await self.pipeline()
        timings: dict[str, Any] = {}

        def embed() -> tuple[Fingerprint, list, DeltaSc | None, list, list]:
            # the indexes catch up with the oplog on their own before each search below
            neighbours = self._neighbour_vectors(links)
            started = time.perf_counter()
            (fingerprint,), (triples,) = pipeline.embed_with_triples(
                [self._draft(content, new.modality, new.session, neighbours)])
            timings["embed"] = round((time.perf_counter() - started) * 1000, 3)
            utl = self._novelty(fingerprint, triples) if with_novelty else None
            return (fingerprint, triples, utl, self._similar(fingerprint),
                    self._causal(content, fingerprint, pipeline))

        fingerprint, triples, utl, similar, causal = await anyio.to_thread.run_sync(embed, limiter=self._cpu)
        now = time.time()
        memory_id = uuid.uuid4().hex
        edges, temporal = self._auto_edges(memory_id, links, similar, now, causal)
        record = MemoryRecord(
            id=memory_id,
            content=content,
            rationale=rationale,
            modality=new.modality,
            session=new.session,
            created_at=now,
            updated_at=now,
            importance=new.importance,
            tags=new.tags,
            links=tuple(links),
            redactions=tuple(found + found_in_rationale),
        )
        started = time.perf_counter()
        # durable once this returns, with its edges and lineage in the same transaction
        record = await self._writer.submit(self._store.put, record, fingerprint, edges, temporal, triples)
        # Nine HNSW inserts: milliseconds at scale, so off the event loop but before the answer. (Inserting after
        # the answer, on a thread of its own, was measured at 100K: back-to-back stores then contend with it on
        # two cores and store_memory's p95 doubled, 42 → 101 ms.) A failed insert is logged; the oplog catch-up
        # before the next search indexes the memory.
        await anyio.to_thread.run_sync(self._apply_index, record.seq, fingerprint)
        timings["commit"] = round((time.perf_counter() - started) * 1000, 3)
        if utl is not None:
            self.cognition.record(utl.delta_s, utl.delta_c, memory_count=self._store.count())
            await self._save_engine_after_commit()
        _log.info("memory stored", id=record.id, seq=record.seq, modality=record.modality,
                  redactions=len(record.redactions))
        return Stored(record, list(record.redactions), timings), fingerprint, utl

    def _apply_index(self, seq: int, fingerprint: Fingerprint) -> None:
        try:
            self._indexes.apply(seq, fingerprint)
        except Exception:  # the next catch-up indexes it from the oplog instead
            _log.exception("background index insert failed; the oplog catch-up will index it", seq=seq)

    def _similar(self, fingerprint: Fingerprint) -> list[tuple[str, float]]:
        """(id, E1 cosine) of the nearest existing memories above the Semantic-edge threshold."""
        threshold = float(self._graph["semantic_edge_min_cosine"])
        nearest = self._indexes.search(1, fingerprint[1], int(self._graph["semantic_edge_k"]))
        hits = [(seq, score) for seq, score in nearest if score >= threshold]
        records = self._store.get_by_seq([seq for seq, _ in hits]) if hits else []
        return [(r.id, float(score)) for r, (_seq, score) in zip(records, hits) if r is not None]

    def _causal(self, content: str, fingerprint: Fingerprint, pipeline: Any) -> list[tuple[str, str, float, float]]:
        """Causal matches of a new memory against existing ones, from E5's [cause ; effect] halves: (direction,
        id, similarity, margin), direction "in" (the other's effect is this memory's cause: other → new) or "out"
        (this memory's effect is the other's cause: new → other). Only when both memories have causal cue spans
        (a memory without a cue has both halves equal to its whole text, which would make any memory on the same
        topic look like a cause or an effect). Candidates: the E1 nearest few, plus E5 nearest to [cause ; cause]
        and [effect ; effect] (which rank the others' effect resp. cause halves), never a full scan. A match needs
        similarity ≥ causal_edge_min_cosine and a margin (similarity − the reverse direction's) ≥
        causal_edge_min_margin, which rules out restatements of the same cause and effect (both directions match)."""
        from contextgraph.embedders.e05_causal import causal_spans

        g = self._graph
        threshold, min_margin = float(g["causal_edge_min_cosine"]), float(g["causal_edge_min_margin"])
        k = int(g["causal_edge_k"])
        if not causal_spans(content).cues:
            return []
        e5 = next(e for e in pipeline.embedders if e.space == 5)
        cause, effect = e5.halves(fingerprint[5])
        if np.allclose(cause, effect):
            return []
        seqs: dict[int, None] = {}
        for space, query in ((1, fingerprint[1]), (5, np.concatenate([cause, cause]) / np.sqrt(2.0)),
                             (5, np.concatenate([effect, effect]) / np.sqrt(2.0))):
            seqs.update((seq, None) for seq, _ in self._indexes.search(space, query.astype(np.float32), k))
        if not seqs:
            return []
        order = list(seqs)
        found = []
        for record, fp in zip(self._store.get_by_seq(order), self._store.fingerprints(order, spaces=[5])):
            if record is None or fp is None:
                continue
            o_cause, o_effect = e5.halves(fp[5])
            if np.allclose(o_cause, o_effect):
                continue  # no cue: no cause or effect to match
            into, out = float(cause @ o_effect), float(effect @ o_cause)
            direction, sim, margin = ("in", into, into - out) if into >= out else ("out", out, out - into)
            if sim >= threshold and margin >= min_margin:
                found.append((direction, record.id, sim, margin))
        return found

    def _auto_edges(self, memory_id: str, links: list[str], similar: list[tuple[str, float]], now: float,
                    causal: list[tuple[str, str, float, float]] = ()) -> tuple:
        """The edges a new memory gets on store: Relational to what it names in link_to, Semantic to its nearest
        neighbours (weight = cosine), Causal cause → effect for its E5 matches (`_causal`; weight = the
        cause/effect half similarity, confidence = the margin over the reverse direction), and a factory for the
        Temporal edge from its session's previous memory, which the store resolves inside the put's transaction
        (so two concurrent stores cannot both claim it)."""
        from contextgraph.storage.base import Edge

        g = self._graph
        edges = [Edge(memory_id, other, "Relational", weight=float(g["link_edge_weight"]), created_at=now)
                 for other in links]
        linked = set(links)
        edges += [Edge(memory_id, other, "Semantic", weight=round(min(1.0, score), 6),
                       confidence=round(min(1.0, score), 6), direction="undirected", created_at=now)
                  for other, score in similar if other not in linked]
        edges += [Edge(*((other, memory_id) if direction == "in" else (memory_id, other)), "Causal",
                       weight=round(min(1.0, sim), 6), confidence=round(min(1.0, margin), 6), created_at=now)
                  for direction, other, sim, margin in causal]
        weight = float(g["temporal_edge_weight"])

        def temporal(previous: str, new: str) -> Edge:
            return Edge(previous, new, "Temporal", weight=weight, created_at=now)

        return edges, temporal

    def _resolve_links(self, link_to: tuple[str, ...]) -> list[str]:
        missing = [memory_id for memory_id in link_to if self._store.get(memory_id) is None]
        if missing:
            raise NodeNotFound(f"link_to names memories that do not exist: {', '.join(missing)}. search_graph finds "
                               "memories by content.", field="link_to", missing=missing)
        return list(link_to)

    def _neighbour_vectors(self, links: list[str]) -> tuple[tuple[float, np.ndarray], ...]:
        if not links:
            return ()
        seqs = [self._store.get(memory_id).seq for memory_id in links]
        vectors = self._store.fingerprints(seqs, spaces=[1])
        # Until typed edges carry weights (curation issue), a link_to edge weighs 1.
        return tuple((1.0, fp[1]) for fp in vectors if fp is not None)

    def _novelty(self, fingerprint: Fingerprint, triples: list) -> DeltaSc:
        """The new memory's full UTL against the store as it is before the put (services.delta_sc)."""
        state = self.cognition.snapshot()
        return self.delta_sc.compute(self._store, self._indexes, self._pipeline.embedders, fingerprint,
                                     coherence_history=state["coherence_history"],
                                     phase_spread=state["phase_spread"], emotional_weight=state["emotional_weight"],
                                     triples=triples)

