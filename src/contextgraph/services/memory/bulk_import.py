"""Bulk import and export of memories: the use-case behind `contextgraph import FILE.jsonl` and
`contextgraph export`. Lines arrive validated (shell.bulk holds them to store_memory's argument model); here a
batch of them goes through store_memory's own pipeline (services.memory.store_pipeline), batched, with three
differences that are the point:

    one pipeline call   the whole batch goes through the pipeline at once (`embed_with_triples`), not one text
                        per call: the backbone runs it as few forwards as its length buckets allow (one padded
                        forward for texts of 11-256 tokens cost 3x the texts one by one), and every embedder
                        works on the batch as a whole
    one transaction     the batch commits in one `graph_write`: every memory with all 13 spaces, its edges, its
                        E11 triples and its "created" lineage, or nothing of the batch (ARCH-01); durable when
                        `import_batch` returns
    one process         no protocol, dispatcher or pulse per memory

What each memory gets, as store_memory gives it: PII redaction of content and rationale (the kinds found kept on
the record), the full UTL against the store (ΔS/ΔC per space, L and L̂, folded into the engine's state), the
Semantic edges to its E1 nearest above `graph.semantic_edge_min_cosine`, Causal edges from E5's cause/effect
halves and from explicit links (services.memory.causal_links; a line opening with "So …" continues the line
before it), a Temporal edge from the previous memory of its session, its E11 triples, its purpose vector once a
north star exists, E8 from the graph context of its edges, the adversarial screen's flag (and the quarantine
list), the E8 refresh of its neighbourhood and the after-store listeners (MemoryListeners.after_store). No
`link_to` (a line has none), so no Relational edges. The differences a batch makes, said precisely:

  * UTL: a memory's ΔS/ΔC is measured against the store as it was before its batch (the batch's other memories
    are not yet its neighbours), and the engine's coherence history is the one before the batch. With
    `--batch-size 1` every memory sees all earlier ones, as with store_memory one by one.
  * Auto edges see the batch's earlier memories as well as the store: Semantic edges to the best
    `semantic_edge_k` of both; Causal edges test every earlier memory of the batch (store_memory tests the few
    E1/E5 nearest), under the same similarity and margin thresholds.
  * Session: every memory of a file goes into one session, `import-<first 16 hex of the file's SHA-256>`, in
    line order, so the Temporal edges chain the file's memories.
  * Timestamps: `created_at` (unix seconds) when the line gives one, also as the time the temporal spaces
    embed; the import time otherwise.

Restartable: each record carries `extra.import = {file, line}` (the file's SHA-256 and its 1-based line). A
batch commits whole or not at all, so the newest memory of the file's session names the last line committed;
an import of the same file resumes after it (`resume_line`). The session's newest memory is found by walking
the store from its newest memory backwards: immediate when the import was the last writer, a scan of the
store when the file was never imported.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import anyio
import numpy as np

from contextgraph.embedders.e05_causal import CausalEmbedder, causal_spans
from contextgraph.embedders.pipeline import Draft
from contextgraph.fingerprint import Fingerprint
from contextgraph.log import get_logger
from contextgraph.services.memory.auto_edges import AutoEdgeRules
from contextgraph.services.memory.causal_links import CausalMatch, continuation_cue
from contextgraph.services.memory.memory import MemoryService
from contextgraph.services.memory.memory_payloads import NewMemory
from contextgraph.services.memory.store_pipeline import Committed, Incoming
from contextgraph.storage.base import GraphTxn, MemoryRecord
from contextgraph.storage.codec import encode_fingerprint

_log = get_logger("import")
EXPORT_FIELDS = ("content", "rationale", "tags", "importance", "modality", "created_at")


@dataclass(frozen=True, slots=True)
class ImportLine:
    """One validated line: what store_memory would be given, plus its place in the file."""

    line: int  # 1-based
    memory: NewMemory  # content and rationale as written (redacted here); tags already redacted
    created_at: float | None = None


@dataclass
class BatchResult:
    stored: list[MemoryRecord] = field(default_factory=list)
    edges: int = 0
    embed_ms: float = 0.0
    score_ms: float = 0.0
    commit_ms: float = 0.0


def import_session(file_hash: str) -> str:
    return f"import-{file_hash[:16]}"


class BatchEmbedder(Protocol):
    """What fingerprints a batch: the data directory's own pipeline, or a PipelinePool of worker processes."""

    def embed_with_triples(self, items: Sequence[Draft]) -> tuple[list[Fingerprint], list[list[Any]]]: ...


class BulkImporter:
    """Imports the lines of one file (identified by its SHA-256) into the store of `memory`'s data directory.
    `embedder` fingerprints the batches (default: the server's own pipeline, in this process)."""

    def __init__(self, memory: MemoryService, file_hash: str, source: str,
                 embedder: BatchEmbedder | None = None) -> None:
        self.memory = memory
        self.embedder = embedder
        self.file_hash = file_hash
        self.source = source
        self.session = import_session(file_hash)
        self._previous: MemoryRecord | None = None  # the session's newest memory: the next Temporal edge's source
        self._resumed = False

    async def resume_line(self) -> int:
        """The last line of this file already committed (0 when none): an import resumes after it."""
        handle = await self.memory.handle.ready()
        session = self.session

        def newest() -> MemoryRecord | None:
            found = handle.store.graph_read(lambda g: g.recent(1, None, session))
            return found[0] if found else None

        self._previous = await anyio.to_thread.run_sync(newest)
        self._resumed = True
        if self._previous is None:
            return 0
        return int((self._previous.extra.get("import") or {}).get("line", 0))

    async def import_batch(self, lines: Sequence[ImportLine]) -> BatchResult:
        """Store `lines` as memories in one forward pass and one transaction; durable when this returns. The
        store pipeline of store_memory, batched: the batch's earlier memories are edge candidates too, and the
        file's memories chain by Temporal edges in line order."""
        result = BatchResult()
        if not lines:
            return result
        if not self._resumed:
            await self.resume_line()
        handle = await self.memory.handle.ready()
        pipeline = await self.memory.perception.pipeline()
        store_pipeline, rules = self.memory.store_pipeline, self.memory.edge_rules
        e5 = next(e for e in pipeline.embedders if isinstance(e, CausalEmbedder))
        now = time.time()
        batch = [Incoming.of(line.memory) for line in lines]
        first_position = 0 if self._previous is None else self._previous.session_position + 1
        global_position = handle.store.last_seq() + 1
        drafts = [Draft(text=item.content, modality=item.new.modality,
                        timestamp=now if line.created_at is None else line.created_at,
                        session_position=first_position + i, global_position=global_position + i)
                  for i, (line, item) in enumerate(zip(lines, batch))]

        def embed() -> tuple[list[Fingerprint], list[list[Any]]]:
            started = time.perf_counter()
            embedded = (self.embedder or pipeline).embed_with_triples(drafts)
            result.embed_ms = (time.perf_counter() - started) * 1e3
            return embedded

        # the batch's forward holds the forward limiter; its scoring only reads, beside other calls' forwards
        fingerprints, triples = await anyio.to_thread.run_sync(embed, limiter=self.memory.perception.cpu)
        started = time.perf_counter()
        scored = await store_pipeline.score(pipeline, batch, fingerprints, triples, [()] * len(batch))
        result.score_ms = (time.perf_counter() - started) * 1e3
        ids = [uuid.uuid4().hex for _ in lines]
        similar = _with_batch_neighbours([s.similar for s in scored], ids, fingerprints, rules.semantic_min,
                                         rules.semantic_k)
        causal = _with_batch_causes([s.causal for s in scored], ids, [item.content for item in batch],
                                    fingerprints, e5, rules,
                                    None if self._previous is None else self._previous.id)
        records, blobs, edge_lists = [], [], []
        previous_id = None if self._previous is None else self._previous.id
        for i, (line, item) in enumerate(zip(lines, batch)):
            edges, temporal = rules.edges(ids[i], [], similar[i], causal[i], now)
            if previous_id is not None:
                edges.append(temporal(previous_id, ids[i]))
            previous_id = ids[i]
            records.append(MemoryRecord(
                id=ids[i], content=item.content, rationale=item.rationale, modality=item.new.modality,
                session=self.session, created_at=now if line.created_at is None else line.created_at,
                updated_at=now, importance=item.new.importance, tags=item.new.tags, redactions=item.redactions,
                session_position=first_position + i,
                extra=store_pipeline.extra(item, scored[i], {"import": {"file": self.file_hash, "line": line.line}}),
            ))
            blobs.append(encode_fingerprint(fingerprints[i]))  # outside the transaction: keep the lock short
            edge_lists.append(edges)
        source = self.source

        def commit(g: GraphTxn) -> list[MemoryRecord]:
            stored = []
            for record, blob, edges, found_triples, line in zip(records, blobs, edge_lists, triples, lines):
                kept = g.restore_memory(record, blob)  # a fresh seq and an oplog "put", as store.put makes
                for edge in edges:
                    if g.exists(edge.other(record.id)):
                        g.put_edge(edge)
                g.append_lineage(record.id, {"event": "created", "at": now, "seq": kept.seq,
                                             "imported_from": source, "line": line.line})
                if found_triples:
                    g.put_triples(record.id, found_triples)
                stored.append(kept)
            return stored

        started = time.perf_counter()
        store, indexes = handle.store, handle.indexes
        result.stored = await handle.writer.submit(lambda: store.graph_write(commit))
        # the batch into every index in one catch-up (the oplog path), before the next batch searches them
        await anyio.to_thread.run_sync(lambda: indexes.catch_up(store))
        result.commit_ms = (time.perf_counter() - started) * 1e3
        self._previous = result.stored[-1]
        result.edges = sum(len(edges) for edges in edge_lists)
        await store_pipeline.after_commit(
            [Committed(r, fp, s.utl) for r, fp, s in zip(result.stored, fingerprints, scored)],
            (e.other(r.id) for r, edges in zip(result.stored, edge_lists) for e in edges), now, wait=True)
        _log.info("memories imported", count=len(result.stored), source=source,
                  lines=f"{lines[0].line}-{lines[-1].line}")
        return result


def _with_batch_neighbours(similar: list[list[tuple[str, float]]], ids: Sequence[str],
                           fingerprints: Sequence[Fingerprint], minimum: float,
                           k: int) -> list[list[tuple[str, float]]]:
    """Each memory's Semantic-edge candidates from the store, joined with the batch's earlier memories (E1
    cosine ≥ `minimum`), the best `k` kept: what store_memory one by one would have found in the index."""
    e1 = np.stack([np.asarray(fp[1], dtype=np.float32) for fp in fingerprints])
    norms = np.linalg.norm(e1, axis=1)
    cosines = (e1 @ e1.T) / np.maximum(np.outer(norms, norms), 1e-12)
    out = []
    for i, found in enumerate(similar):
        earlier = [(ids[j], float(cosines[i, j])) for j in range(i) if cosines[i, j] >= minimum]
        out.append(sorted(found + earlier, key=lambda pair: -pair[1])[:k])
    return out


def _with_batch_causes(causal: list[list[CausalMatch]], ids: Sequence[str], contents: Sequence[str],
                       fingerprints: Sequence[Fingerprint], e5: CausalEmbedder, rules: AutoEdgeRules,
                       previous: str | None) -> list[list[CausalMatch]]:
    """Each memory's Causal matches from the store, plus those with the batch's earlier memories, by the rules
    of AutoEdgeRules.causal: both memories with cue spans, cause·effect ≥ causal_edge_min_cosine with a margin
    over the reverse direction ≥ causal_edge_min_margin; or an earlier cue-less memory that its cue clause names
    (causal_links, the best per side of the store's and the batch's). A line that opens with "So …" continues
    the line before it (`previous`, the file's session's newest memory, for the batch's first)."""
    spans = [causal_spans(content) for content in contents]
    halves = [e5.halves(np.asarray(fp[5])) for fp in fingerprints]
    cued = [bool(s.cues) and not np.allclose(*h) for s, h in zip(spans, halves)]
    out = []
    for i, found in enumerate(causal):
        extra: list[CausalMatch] = []
        if cued[i]:
            (cause, effect), cued_before = halves[i], [j for j in range(i) if cued[j]]
            for j in cued_before:
                into, out_of = float(cause @ halves[j][1]), float(effect @ halves[j][0])
                match = (CausalMatch("in", ids[j], into, into - out_of) if into >= out_of
                         else CausalMatch("out", ids[j], out_of, out_of - into))
                if match.similarity >= rules.causal_min and match.margin >= rules.causal_min_margin:
                    extra.append(match)
            uncued = [(ids[j], halves[j][0]) for j in range(i) if not cued[j]]
            found = _best_clause_per_side(found, rules.links.clause_matches(spans[i], cause, effect, uncued))
        before = ids[i - 1] if i else previous
        cue = continuation_cue(contents[i])
        if cue is not None and before is not None and all(m.other != before for m in found + extra):
            weight = rules.links.continuation_weight
            extra.append(CausalMatch("in", before, weight, weight, cue))
        out.append(found + extra)
    return out


def _best_clause_per_side(found: list[CausalMatch], batch: list[CausalMatch]) -> list[CausalMatch]:
    """`found` with the batch's clause matches, one per side (the stronger): a clause names one memory."""
    kept = list(found)
    for m in batch:
        rival = next((k for k, f in enumerate(kept) if f.cue and f.direction == m.direction), None)
        if rival is None:
            kept.append(m)
        elif m.similarity > kept[rival].similarity:
            kept[rival] = m
    return kept


def export_lines(records: Iterator[MemoryRecord]) -> Iterator[dict[str, Any]]:
    """The import format of each record: content, rationale, tags, importance, modality, created_at (unix
    seconds, exact), in the store's order. What import reads back into a fresh data directory."""
    for record in records:
        yield {"content": record.content, "rationale": record.rationale, "tags": list(record.tags),
               "importance": record.importance, "modality": record.modality, "created_at": record.created_at}


def valid_created_at(value: Any, now: float) -> float:
    """Unix seconds from a number or an ISO 8601 string (a time without an offset is UTC), within what the
    temporal spaces embed (from year 1) and not in the future (a day of clock skew allowed); ValueError saying
    what is wrong otherwise."""
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(f"created_at {value!r} is not an ISO 8601 time (e.g. 2026-11-26T09:30:00Z) nor unix "
                             "seconds") from None
        value = (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"created_at must be unix seconds (a finite number) or an ISO 8601 time, got {value!r}")
    if not -62_135_596_800 <= value <= now + 86_400:
        raise ValueError(f"created_at must lie between year 1 and now, got {value!r}")
    return float(value)
