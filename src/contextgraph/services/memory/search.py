"""The five-stage retrieval (docs/retrieval.md), over the store, the per-space indexes and the embedders' own measures.

    S1  sparse pre-filter: top hits of the E13 and E6 inverted indexes
    S2  dense ANN: top hits of the E1 HNSW index
    S3  Reciprocal Rank Fusion Σᵢ wᵢ/(k + rankᵢ) over the 13 spaces, for the union of S1 and S2, weighted per
        query (retrieval/query_kind.py: temporal spaces only for time queries, code vs prose, question vs keyword),
        without E1's duplicate votes (E8/E10 where they rank like E1, docs/retrieval.md), plus score-level fusion of the
        normalised E6 BM25 and E1 cosine (retrieval/fusion.py); then the learned head re-scorer re-orders the fused
        best 30 (retrieval/head_rescorer.py, `head_rescorer`)
    S4  purpose: once a north star exists (auto_bootstrap_north_star), a bounded re-rank toward the store goal the
        query belongs to, nothing dropped; `stage4="filter"` drops the candidates aligned below the threshold
        instead, and a query can opt out (services/memory/stage4.py). Without a star nothing is computed and the
        ranking is exactly S3 → S5
    S5  E12 MaxSim rerank of the fused head

E6 and E13 are BM25-scored by their indexes (docs/decisions.md#d21) with the settings' k1/b. Every number here is a
`retrieval:` setting of constitution.yaml, chosen by benchmarks/bench_retrieval_corpora.py on tune halves.

Every stage is timed, and each candidate's rank in every space is kept for diagnostics
(`include_breakdown`, later `debug_compare_retrieval`). Runs in a worker thread: no await inside.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from contextgraph.fingerprint import MODALITIES, SPACES, Fingerprint, Sparse
from contextgraph.gwt.binding import context_agreements
from contextgraph.retrieval.fusion import fuse, ranks, rerank
from contextgraph.retrieval.head_rescorer import DENSE, MODALITY_SPACE, rescore_head
from contextgraph.retrieval.modulation import NEUTRAL, Modulation, reweight, sharpen, spread, widened
from contextgraph.retrieval.query_kind import classify, query_weights
from contextgraph.retrieval.similarity import context_similarities
from contextgraph.services.memory.graph_spread import head_links, linked
from contextgraph.services.memory.purpose_port import StarAlignment
from contextgraph.services.memory.search_modulation import explored_note, favour
from contextgraph.services.memory.stage4 import MODES as STAGE4_MODES
from contextgraph.services.memory.stage4 import describe, star_alignments
from contextgraph.services.memory.stage4 import idle as stage4_idle
from contextgraph.services.memory.stage4 import plan as stage4_plan
from contextgraph.services.memory.stale_spaces import while_stale
from contextgraph.storage.base import MemoryRecord
from contextgraph.storage.fingerprint_columns import FingerprintColumns

SEMANTIC, SPARSE, HDC, LATE, SPLADE = 1, 6, 9, 12, 13
ALL_SPACES = tuple(space.id for space in SPACES)


@dataclass(frozen=True, slots=True)
class RetrievalSettings:
    rrf_k: float
    sparse_candidates: int
    dense_candidates: int
    rerank_head: int
    rerank_weight: float
    space_weights: Mapping[int, float]
    sparse_max_df: float = 1.0
    bm25: Mapping[int, Mapping[str, float]] = field(default_factory=dict)  # space → {k1, b} (E6, E13)
    score_weights: Mapping[int, float] = field(default_factory=dict)  # space → weight of its min-max score in S3
    query_kinds: Mapping[str, Mapping[int, float]] = field(default_factory=dict)  # kind → space → multiplier
    temporal_only_when_asked: bool = False
    stage4_mode: str = "rerank"  # what stage4=true means: "rerank" (bounded, nothing dropped) or "filter"
    stage4_bound: float = 0.1  # the re-rank's largest change of a fused score, ±β (teleology.goals)
    head_rescorer: bool = False  # stage 3's learned re-scorer of the fused head (retrieval/head_rescorer.py)
    # space → the fusion's weights while that space is re-embedded ({"space_weights": ..., "score_weights": ...})
    while_stale: Mapping[int, Mapping[str, Mapping[int, float]]] = field(default_factory=dict)

    @classmethod
    def from_constitution(cls, c: Any) -> RetrievalSettings:
        r = c["retrieval"]

        def by_space(m: Any) -> dict[int, float]:
            return {int(k): float(v) for k, v in (m or {}).items()}

        return cls(
            rrf_k=float(r["rrf_k"]),
            sparse_candidates=int(r["sparse_candidates"]),
            dense_candidates=int(r["dense_candidates"]),
            rerank_head=int(r["rerank_head"]),
            rerank_weight=float(r["rerank_weight"]),
            space_weights=by_space(r["space_weights"]),
            sparse_max_df=float(r["sparse_max_df"]),
            bm25={int(k): {"k1": float(v["k1"]), "b": float(v["b"])} for k, v in (r.get("bm25") or {}).items()},
            score_weights=by_space(r.get("score_weights")),
            query_kinds={str(k): by_space(v) for k, v in (r.get("query_kinds") or {}).items()},
            temporal_only_when_asked=bool(r.get("temporal_only_when_asked", False)),
            stage4_mode=_stage4_mode(str(r.get("stage4_mode", "rerank"))),
            stage4_bound=float(r.get("stage4_bound", 0.1)),
            head_rescorer=bool(r.get("head_rescorer", False)),
            while_stale={int(sp): {part: by_space(w) for part, w in profile.items()}
                         for sp, profile in (r.get("while_stale") or {}).items()},
        )

    def weights_for(self, query_text: str | None) -> dict[int, float]:
        """The space weights for one query (its kind's multipliers; temporal spaces only when it asks about time).
        No text (a caller with only the fingerprint, e.g. inject_context's related memories): a topical query of
        no particular kind."""
        return query_weights(dict(self.space_weights), classify(query_text),
                             {k: dict(v) for k, v in self.query_kinds.items()}, self.temporal_only_when_asked)


@dataclass
class Found:
    record: MemoryRecord
    score: float  # the final fused score
    similarity: float  # E1 cosine to the query: the number minSimilarity filters on
    space_ranks: dict[int, int] = field(default_factory=dict)
    # per-space agreement with the query in [0, 1] (E1..E13): what the workspace binds on (gwt.binding)
    agreements: tuple[float, ...] = ()
    # per-space similarity to the query in [0, 1] (E1..E13, E12 as E1: context_similarities), what the agreements
    # rank against the reference sample; the search's pulse reuses them (operation_pulse)
    similarities: np.ndarray | None = field(default=None, repr=False)
    alignment: float | None = None  # to the north star (None: no star, or stage 4 turned off)
    # its fingerprint as stage 3 read it (views into the candidates' columns: treat as values)
    fingerprint: Fingerprint = field(default_factory=dict, repr=False)


@dataclass
class Retrieval:
    found: list[Found]
    candidates: int
    stages_ms: dict[str, float]
    stage4: dict[str, Any]  # {active, threshold, dropped, dropped_ids} or {active: false, reason}
    # per space, the query's similarities to a sample of stored memories: what a memory's agreement with the
    # query (binding) is measured against, here and by trigger_workspace_broadcast later
    reference: dict[int, np.ndarray] = field(default_factory=dict)
    # the RRF weights and k this query was fused with (after the query kind and the neuromodulators)
    weights: dict[int, float] = field(default_factory=dict)
    rrf_k: float = 0.0
    # one line per neuromodulator that changed this answer (its set or its order), empty when none did
    modulation_notes: list[str] = field(default_factory=list)


class Retriever:
    """Stateless over its collaborators: `indexes` (per-space search), `store` (records and fingerprints) and
    the embedders (each space's similarity). `modulation`: what the neuromodulators do to this retrieval
    (retrieval.modulation; neutral unless the caller sets it)."""

    modulation: Modulation = NEUTRAL
    # spaces being re-embedded across the store (services.runtime.space_refresh): their stored vectors and the
    # query's may come from different models, so they do not vote until the rewrite is done
    stale_spaces: frozenset[int] = frozenset()

    def __init__(self, store: Any, indexes: Any, embedders: Sequence[Any], settings: RetrievalSettings,
                 reference: Sequence[Fingerprint] | FingerprintColumns = (),
                 purpose: StarAlignment | None = None) -> None:
        """`reference`: a uniform sample of stored fingerprints (services.delta_sc: the store model's), what
        the found memories' agreement with the query is normalised against (docs/engine.md#binding)."""
        self.store = store
        self.indexes = indexes
        self.embedders = {e.space: e for e in embedders}
        self.settings = settings
        self.reference = reference if isinstance(reference, FingerprintColumns) else tuple(reference)
        self.purpose = purpose  # the north star's StarView (services.purpose.teleology), or None: stage 4 inactive

    def run(
        self,
        query: Fingerprint,
        top_k: int,
        *,
        min_similarity: float = 0.0,
        modality: str | None = None,
        exclude: frozenset[int] = frozenset(),
        causal_direction: str = "both",
        query_text: str | None = None,
        stage4: bool | str = True,
    ) -> Retrieval:
        s = self.settings
        timings: dict[str, float] = {}
        lap = _stage_timer(timings)

        # S1 + S2: candidate generation (noradrenaline's temperature widens or narrows the pools).
        mod = self.modulation
        candidates: dict[int, None] = {}
        firsts: list[int] = []  # each index's first hits: what noradrenaline explores the graph from
        for space in (SPLADE, SPARSE):
            hits = self.indexes.search(space, query[space], widened(s.sparse_candidates, mod.temperature),
                                       s.sparse_max_df, **s.bm25.get(space, {}))
            candidates.update(dict.fromkeys(seq for seq, _ in hits))
            firsts.extend(seq for seq, _ in hits[:mod.explore_head])
        lap("s1_sparse_prefilter")
        hits = self.indexes.search(SEMANTIC, query[SEMANTIC], widened(s.dense_candidates, mod.temperature))
        candidates.update(dict.fromkeys(seq for seq, _ in hits))
        firsts.extend(seq for seq, _ in hits[:mod.explore_head])
        if mod.spread > 0:  # aroused: what the first hits link to joins the candidates, however it is worded
            for links in linked(self.store, list(dict.fromkeys(firsts))).values():
                candidates.update(dict.fromkeys(seq for seq, _ in links))
        lap("s2_dense_ann")
        seqs = [seq for seq in candidates if seq not in exclude]
        if not seqs:
            return Retrieval([], 0, timings, stage4_idle(self.purpose, self._mode(stage4)))
        read_started = time.perf_counter()
        # one column per space, gathered from the stored blobs (not a decoded fingerprint per candidate)
        columns = self.store.fingerprint_columns(seqs, ALL_SPACES)
        read_ms = (time.perf_counter() - read_started) * 1000  # S3's first part: reading the candidates
        return self._rank(query, columns, top_k, min_similarity=min_similarity, modality=modality,
                          causal_direction=causal_direction, timings=timings, read_ms=read_ms, query_text=query_text,
                          stage4=stage4)

    def rank(
        self,
        query: Fingerprint,
        seqs: list[int],
        fingerprints: list[Fingerprint | None],
        top_k: int,
        *,
        min_similarity: float = 0.0,
        modality: str | None = None,
        causal_direction: str = "both",
        timings: dict[str, float] | None = None,
        read_ms: float = 0.0,
        query_text: str | None = None,
        stage4: bool | str = True,
    ) -> Retrieval:
        """Stages 3-5 over candidates already chosen and read (None: deleted since): the whole pipeline after
        candidate generation. inject_context calls it directly with the neighbourhood its UTL computation has
        already gathered from every space's index, so it neither searches nor reads them twice."""
        columns = FingerprintColumns.from_fingerprints(seqs, fingerprints, ALL_SPACES)
        return self._rank(query, columns, top_k, min_similarity=min_similarity, modality=modality,
                          causal_direction=causal_direction, timings=timings, read_ms=read_ms, query_text=query_text,
                          stage4=stage4)

    def _rank(
        self,
        query: Fingerprint,
        columns: FingerprintColumns,
        top_k: int,
        *,
        min_similarity: float,
        modality: str | None,
        causal_direction: str,
        timings: dict[str, float] | None,
        read_ms: float,
        query_text: str | None,
        stage4: bool | str,
    ) -> Retrieval:
        s = self.settings
        timings = {} if timings is None else timings
        lap = _stage_timer(timings)

        # S3: every space scores every candidate in its own measure; RRF over the ranks.
        if modality is not None:
            records = self.store.get_by_seq(columns.seqs)
            columns = columns.take([row for row, record in enumerate(records)
                                    if record is not None and record.modality == modality])
        seqs = columns.seqs
        docs = columns.rows()
        if not seqs:
            return Retrieval([], 0, timings, stage4_idle(self.purpose, self._mode(stage4)))
        scores = self.space_scores(query, columns, causal_direction)
        # serotonin: the space weights; noradrenaline: k and the graph exploration; dopamine: the scores and the
        # answer's order (all the identity at the baselines)
        mod = self.modulation
        s = while_stale(s, self.stale_spaces)
        weights = reweight(s.weights_for(query_text), mod.weight_exponent)
        score_weights = s.score_weights
        rrf_k = s.rrf_k * mod.temperature
        space_ranks = {space: ranks(values) for space, values in scores.items()}
        fused = fuse(scores, weights, rrf_k, score_weights, space_ranks)
        if s.head_rescorer:
            terms, idf = self._query_terms(query[SPARSE])
            fused = rescore_head(fused, scores, terms, idf, columns[SPARSE],
                                 {sp: columns[sp] for sp in DENSE}, columns[MODALITY_SPACE], MODALITIES)
        unexplored = fused
        if mod.spread > 0:  # noradrenaline: the best hits' graph neighbours get a share of their scores
            fused = spread(fused, head_links(self.store, fused, seqs, mod.explore_head), mod.spread)
        lap("s3_rrf_fusion")
        timings["s3_rrf_fusion"] = round(timings["s3_rrf_fusion"] + read_ms, 3)
        # S4: purpose. By default a bounded re-rank toward the query's goal; "filter": the candidates below the
        # threshold sort last and are never chosen (which ranks the kept ones exactly as filtering them out before
        # S5 would)
        stage = stage4_plan(self.purpose, self._mode(stage4), self.embedders, query, seqs, docs, columns[SEMANTIC],
                            s.stage4_bound)
        lap("s4_purpose")

        # S5: MaxSim rerank of the fused head.
        head = max(widened(s.rerank_head, mod.temperature), top_k)
        chosen, final_by_index = self._select(stage.adjusted(fused), scores, head, min_similarity, top_k,
                                              mod.score_exponent)
        lap("s5_maxsim_rerank")
        report = stage.report or {}
        if stage.changes_scores:  # what the answer would have been without stage 4, for its one-line note
            plain, _ = self._select(fused, scores, head, min_similarity, top_k, mod.score_exponent)
            dropped = None if stage.keep is None else np.flatnonzero(~stage.keep)
            report = describe(stage, plain, chosen, dropped, self._ids_of(seqs), fused)
        notes: list[str] = []
        if fused is not unexplored:
            plain, _ = self._select(stage.adjusted(unexplored), scores, head, min_similarity, top_k,
                                    mod.score_exponent)
            notes += explored_note(mod, plain, chosen)
        found: list[Found] = []
        records = self.store.get_by_seq([seqs[i] for i in chosen])
        if mod.boosts:  # dopamine: what the agent just used ranks higher within this answer, none left out
            chosen, records, final_by_index, note = favour(mod, chosen, records, final_by_index)
            notes += note
        alignments = star_alignments(stage, self.purpose, self.embedders, seqs, docs, chosen, records)
        references = context_similarities(self.embedders, query, self.reference)  # [R, 13]
        similarities = context_similarities(self.embedders, query, columns.take(chosen))  # [chosen, 13]
        agreements = context_agreements(similarities, list(references.T))
        for row, (i, record) in enumerate(zip(chosen, records)):
            if record is None:
                continue
            found.append(Found(
                record=record,
                score=round(float(final_by_index[i]), 6),
                similarity=round(float(scores[SEMANTIC][i]), 6),
                space_ranks={space: int(r[i]) for space, r in space_ranks.items()},
                agreements=tuple(agreements[row].tolist()),
                similarities=similarities[row],
                alignment=None if alignments is None else round(float(alignments[i]), 6),
                fingerprint=docs[i],
            ))
        lap("fetch_records")
        return Retrieval(found, len(seqs), timings, report,
                         {space.id: references[:, column] for column, space in enumerate(SPACES)}, weights, rrf_k,
                         notes)

    def _select(self, fused: np.ndarray, scores: dict[int, np.ndarray], head: int, min_similarity: float,
                top_k: int, score_exponent: float) -> tuple[list[int], dict[int, float]]:
        """Stage 5 over fused scores: the top_k candidates after the MaxSim rerank of the head (a candidate at
        -inf, left out by stage 4's filter, is never chosen), and every head candidate's final score."""
        reranked, final = rerank(fused, scores[LATE], head, self.settings.rerank_weight)
        final = sharpen(final, score_exponent)  # dopamine: monotone, so the order stays
        chosen = [i for i in reranked.tolist()
                  if scores[SEMANTIC][i] >= min_similarity and np.isfinite(fused[i])][:top_k]
        return chosen, dict(zip(reranked.tolist(), final.tolist()))

    def _query_terms(self, vector: Any) -> tuple[np.ndarray, np.ndarray]:
        """The query's E6 terms and each one's idf in the store (E6's index statistics, either backend)."""
        if not isinstance(vector, Sparse) or not len(vector):
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        terms = np.asarray(vector.indices, dtype=np.int64)
        return terms, self.indexes.sparse_idf(SPARSE, terms)

    def _mode(self, stage4: bool | str) -> str | None:
        """stage4 as asked: true the configured mode (rerank unless the constitution says otherwise), false off
        (None), or a mode by name."""
        if isinstance(stage4, str):
            return stage4
        return self.settings.stage4_mode if stage4 else None

    def _ids_of(self, seqs: list[int]) -> Callable[[list[int]], list[str]]:
        def ids(rows: list[int]) -> list[str]:
            return [r.id for r in self.store.get_by_seq([seqs[i] for i in rows]) if r is not None]
        return ids

    def space_scores(self, query: Fingerprint, docs: Sequence[Fingerprint] | FingerprintColumns,
                     causal_direction: str) -> dict[int, np.ndarray]:
        """Every space's similarity of each doc to the query ({space: float array [len(docs)]}), each space
        scored on its whole column at once."""
        if not isinstance(docs, FingerprintColumns):
            docs = FingerprintColumns.from_fingerprints(range(len(docs)), docs, ALL_SPACES)
        scores: dict[int, np.ndarray] = {}
        for space in SPACES:
            embedder = self.embedders[space.id]
            column = docs[space.id]
            if space.kind == "sparse":
                # BM25: term frequencies from the embedder, df and avgdl from the space's index
                scores[space.id] = self.indexes.score_sparse(space.id, query[space.id], column,
                                                             **self.settings.bm25.get(space.id, {}))
            elif space.id == 5:
                scores[space.id] = embedder.similarity(query[space.id], column, direction=causal_direction)
            else:
                scores[space.id] = np.asarray(embedder.similarity(query[space.id], column), dtype=np.float64)
        return scores


def _stage4_mode(mode: str) -> str:
    if mode not in STAGE4_MODES:
        raise ValueError(f"retrieval.stage4_mode must be one of {STAGE4_MODES}, not {mode!r}")
    return mode


def _stage_timer(timings: dict[str, float]) -> Callable[[str], None]:
    """lap(stage) records the milliseconds since the previous lap (or the timer's creation) under `stage`."""
    clock = time.perf_counter()

    def lap(stage: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        timings[stage] = round((now - clock) * 1000, 3)
        clock = now

    return lap
