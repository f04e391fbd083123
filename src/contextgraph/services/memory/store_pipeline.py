"""The one path a memory takes into the store, for store_memory / inject_context (a batch of one, fingerprinted
through Perception's batcher beside other calls) and for the bulk importer (a file's batch in one forward and
one transaction):

    redact → fingerprint → score → records → commit → index → after the commit

Scoring finds the auto-edge candidates, makes E8 from the graph context those edges give, and the purpose
under the north star: what is committed with the memory. The UTL against the store as it was before the commit
is computed there too when the answer shows it (inject_context, the importer's report), else after the answer
(store_memory), excluding the memory itself and those committed after it. After the commit, before the answer:
the quarantine list, the E8 refresh of the neighbourhood and the engine save. After the answer, in order on the
store handle's worker (docs/engine.md#after-the-answer): the engine's record of each UTL and the after-store
listeners. The callers differ only where batching must: how a batch is fingerprinted, whether its own earlier
memories are edge candidates, and how it is committed (one put per memory, which resolves the session's
Temporal edge inside its transaction, or one transaction for the whole batch).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import numpy as np

from contextgraph.embedders.e05_causal import CausalEmbedder
from contextgraph.embedders.e08_graph import mix
from contextgraph.embedders.pipeline import FingerprintPipeline
from contextgraph.fingerprint import Fingerprint, dense
from contextgraph.log import get_logger
from contextgraph.security.pii import redact
from contextgraph.services.engine.delta_sc_result import DeltaSc
from contextgraph.services.memory.adversarial import add_to_quarantine, screen
from contextgraph.services.memory.auto_edges import AutoEdgeRules, CausalMatch
from contextgraph.services.memory.memory_payloads import NewMemory
from contextgraph.services.memory.purpose_port import PurposeSource
from contextgraph.services.memory.search import Retrieval
from contextgraph.services.runtime.perception import Perception
from contextgraph.services.runtime.store_handle import StoreHandle
from contextgraph.storage.base import MemoryRecord, NewTriple

_log = get_logger("storage")

# called on the store handle's worker thread after the answer (docs/engine.md#after-the-answer): a listener that
# reads the store reads it there, directly
AfterStore = Callable[[MemoryRecord, Fingerprint, DeltaSc], Any]


@dataclass
class MemoryListeners:
    """Who hears of the memory core's events, given by the composition root: each committed memory (steering,
    Meta-UTL), each search's result count (an empty one raises noradrenaline) and each search's results (ATC's
    predictions). Lists, so that a benchmark can wrap a listener in place to time it."""

    after_store: list[AfterStore] = field(default_factory=list)
    after_search: list[Callable[[int], None]] = field(default_factory=list)
    after_results: list[Callable[[str, Retrieval], None]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Incoming:
    """One memory on its way in: what the caller asked for, its content and rationale redacted."""

    new: NewMemory
    content: str
    rationale: str
    redactions: tuple[str, ...]

    @classmethod
    def of(cls, new: NewMemory) -> Incoming:
        content, found = redact(new.content)
        rationale, found_in_rationale = redact(new.rationale)
        return cls(new, content, rationale, tuple(found + found_in_rationale))


@dataclass(slots=True)
class Scored:
    """What scoring found for one memory before its commit."""

    utl: DeltaSc | None  # None when it is computed after the answer
    similar: list[tuple[str, float]]  # Semantic-edge candidates (id, E1 cosine)
    causal: list[CausalMatch]  # Causal-edge candidates
    purpose: tuple[str, np.ndarray, float] | None  # (star id, purpose vector, alignment), None without a star


@dataclass(frozen=True, slots=True)
class Committed:
    record: MemoryRecord
    fingerprint: Fingerprint
    utl: DeltaSc | None  # None: computed after the answer from `triples` and `importance`
    triples: Sequence[NewTriple] = ()


class StorePipeline:
    def __init__(self, handle: StoreHandle, perception: Perception, rules: AutoEdgeRules, flag_score: float,
                 teleology: PurposeSource | None, listeners: MemoryListeners) -> None:
        self.handle = handle
        self.perception = perception
        self.rules = rules
        self.flag_score = flag_score
        self.teleology = teleology
        self.listeners = listeners
        # committed memories whose UTL is still to be computed after their answer: each one's UTL leaves out
        # itself and those committed after it (a higher seq), so it is measured against the store before its commit
        self._unscored: set[int] = set()
        self._unscored_lock = threading.Lock()

    async def score(self, pipeline: FingerprintPipeline, batch: Sequence[Incoming],
                    fingerprints: Sequence[Fingerprint], triples: Sequence[list[NewTriple]],
                    links: Sequence[Sequence[str]], follow_session: bool = False,
                    with_utl: bool = True) -> list[Scored]:
        """Each memory's edge candidates, its E8 from the graph context they give, its UTL against the store as it
        is before the commit (the indexes catch up with the oplog on their own before each search) and its
        purpose; in a worker thread under the read limiter. Sets each fingerprint's E8 in place. With
        `follow_session` (store_memory's batch of one, whose session predecessor is in the store), a memory that
        opens with "So …" gets its session's previous memory as its cause (causal_links.LinkRule.continuation).
        Without `with_utl` (store_memory, whose answer does not show it) the UTL is left to after the answer."""
        store, indexes, rules = self.handle.store, self.handle.indexes, self.rules
        e5 = next(e for e in pipeline.embedders if isinstance(e, CausalEmbedder))
        teleology = self.teleology
        if teleology is not None:
            teleology.use_embedders(pipeline.embedders)

        def run() -> list[Scored]:
            history = self.handle.cognition.snapshot()["coherence_history"]
            out = []
            for item, fingerprint, found, linked in zip(batch, fingerprints, triples, links):
                similar = rules.similar(store, indexes, fingerprint)
                causal = rules.causal(store, indexes, item.content, fingerprint, e5)
                if follow_session:
                    matched = {m.other for m in causal}
                    causal += [m for m in rules.links.continuation(store, item.content, item.new.session,
                                                                   time.time()) if m.other not in matched]
                # E8 from every edge the memory is about to get, automatic ones included: what the E8 refresh
                # computes once the edges exist
                fingerprint[8] = mix(dense(fingerprint[1]), rules.graph_context(store, linked, similar, causal))
                # φ is the memory's own binding spread, wₑ = 0.5 + importance
                utl = self.handle.delta_sc.compute(store, indexes, pipeline.embedders, fingerprint,
                                                   coherence_history=history, triples=found,
                                                   importance=item.new.importance) if with_utl else None
                purpose = teleology.purpose_of(fingerprint) if teleology is not None else None
                out.append(Scored(utl, similar, causal, purpose))
            return out

        return await anyio.to_thread.run_sync(run, limiter=self.perception.reads)

    def extra(self, item: Incoming, scored: Scored, base: dict[str, Any] | None = None) -> dict[str, Any]:
        """What the record carries besides its fields: `base` (the importer's provenance), its purpose under the
        north star (the ego's recent purposes move with it) and the adversarial screen's flags: a suspicious
        memory is flagged, never dropped."""
        extra = dict(base or {})
        if self.teleology is not None:
            extra.update(self.teleology.extra_for(scored.purpose))
        flags = screen(item.content, self.flag_score)
        if flags:
            extra["adversarial"] = flags
        return extra

    async def after_commit(self, committed: Sequence[Committed], neighbours: Iterable[str], now: float,
                           embedders: Sequence[Any] = (), wait: bool = False) -> None:
        """Everything that follows a durable commit. The memories are acknowledged whatever happens here: a
        failure is logged, never the caller's error. The engine's record and the listeners run after the answer
        on the handle's worker (`embedders`: for a UTL left to then); `wait` waits for them (the importer: its
        next batch is scored against the coherence history this one leaves)."""
        handle = self.handle
        store = handle.store
        for c in committed:  # the flag is on the record (same transaction); the list is homeostatic_status's index
            flags = c.record.extra.get("adversarial")
            if not flags:
                continue
            try:
                await handle.writer.submit(add_to_quarantine, store, c.record.id, now,
                                           [f["kind"] for f in flags["findings"]])
            except Exception:
                _log.exception("quarantine list update failed; the record itself carries the flag", id=c.record.id)
        # their automatic edges changed their neighbourhoods and the neighbours': E8 follows in the background
        handle.refresh_e8([*(c.record.id for c in committed), *neighbours])
        unscored = [c.record.seq for c in committed if c.utl is None]
        with self._unscored_lock:
            self._unscored.update(unscored)
        await handle.after_answer.run(lambda: self._engine_hears(committed, embedders), "after store")
        if wait:
            await handle.after_answer.settled()
        await handle.save_engine_after_commit()

    def _engine_hears(self, committed: Sequence[Committed], embedders: Sequence[Any]) -> None:
        """The engine's record of each UTL and the after-store listeners (the handle's worker thread)."""
        # the store's size after the commit, from the sizes the UTLs were measured against: a UTL computed
        # before the commit saw the store without the batch
        before = max((c.utl.memory_count for c in committed if c.utl is not None), default=0)
        for c in committed:
            utl, count = (c.utl, before + len(committed)) if c.utl is not None else self._utl_after(c, embedders)
            self.handle.cognition.record(utl.delta_s, utl.delta_c, memory_count=count,
                                         learning_score=utl.learning_score,
                                         predicted_learning_score=utl.predicted_learning_score)
            for hook in self.listeners.after_store:
                try:
                    hook(c.record, c.fingerprint, utl)
                except Exception:  # the memory is committed: a listener's failure must not turn it into an error
                    _log.exception("after-store listener failed", id=c.record.id)

    def _utl_after(self, c: Committed, embedders: Sequence[Any]) -> tuple[DeltaSc, int]:
        """The UTL of a memory whose answer is given, against the store as it was before its commit (itself and
        what was committed after it left out), and the store's size just after its commit."""
        seq = c.record.seq
        with self._unscored_lock:
            later = frozenset(s for s in self._unscored if s >= seq)
        try:
            handle = self.handle
            history = handle.cognition.snapshot()["coherence_history"]
            utl = handle.delta_sc.compute(handle.store, handle.indexes, embedders, c.fingerprint,
                                          coherence_history=history, exclude=later, triples=c.triples,
                                          importance=c.record.importance)
            return utl, utl.memory_count - len(later) + 1
        finally:
            with self._unscored_lock:
                self._unscored.discard(seq)
