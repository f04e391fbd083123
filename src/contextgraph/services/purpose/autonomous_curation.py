"""Autonomous memory hygiene (docs/engine.md): pruning candidates, consolidation and sub-goals.

Nothing here changes a memory except `consolidate(execute=True)`, and that only through the curation service's
merge (one transaction per merge, a reversal hash each, lineage on every node): restore_from_hash undoes it.
Every call is bounded (memories scanned, merges per call)."""

from __future__ import annotations

import time
from typing import Any

import anyio
import numpy as np

from contextgraph.clock import Clock
from contextgraph.constitution import Constitution
from contextgraph.errors import ContextGraphError, InvalidParams, SubgoalDiscoveryError
from contextgraph.fingerprint import SPACE_BY_ID
from contextgraph.retrieval.similarity import space_similarities
from contextgraph.services.engine.atc import GENERAL, domain_of
from contextgraph.services.memory.curation import CurationService
from contextgraph.services.purpose.autonomous import AutonomousService
from contextgraph.services.purpose.autonomous_scan import (
    Corpus,
    goal_id,
    goals_of,
    label,
    preview,
    read_corpus,
    sub_goal_themes,
)
from contextgraph.services.purpose.teleology import StarView
from contextgraph.teleology.clustering import unit

SUBGOALS_DOCUMENT = "teleology/subgoals"


class AutonomousCuration:
    def __init__(self, autonomous: AutonomousService, curation: CurationService, constitution: Constitution,
                 clock: Clock) -> None:
        self.autonomous = autonomous
        self.teleology = autonomous.teleology
        self.storage = autonomous.storage
        self.curation = curation
        self.clock = clock
        self.settings = constitution["autonomous"]

    # -- pruning ---------------------------------------------------------------------------------------------
    async def pruning_candidates(self, limit: int, min_staleness_days: int, min_alignment: float) -> dict[str, Any]:
        await self.storage.ready()
        await self.autonomous._embedders()
        started = time.perf_counter()
        out = await anyio.to_thread.run_sync(lambda: self._prune(limit, min_staleness_days, min_alignment))
        out["elapsed_ms"] = round((time.perf_counter() - started) * 1000, 1)
        await self.autonomous.remember("pruning", {"candidates": out["count"], "scanned": out["scanned"]})
        return out

    def _prune(self, limit: int, min_staleness_days: int, min_alignment: float) -> dict[str, Any]:
        """Candidates for pruning: stale, redundant, or never used and unimportant. Low alignment to every goal
        and having no edges only add to a candidate's score: a memory is never proposed for being off-star or
        alone (a minor topic is not noise; docs/decisions.md#d26)."""
        store = self.storage.store
        corpus = read_corpus(store, int(self.settings["max_scan"]))
        view = self.teleology.star_view()
        aligned = self._on_purpose(corpus, view) if view is not None and len(corpus) else None
        degree = store.graph_read(lambda g: [len(g.edges(r.id)) for r in corpus.records])
        orphan_score = float(self.settings["pruning"]["orphan_score"])
        found: list[dict[str, Any]] = []
        for i, r in enumerate(corpus.records):
            primary = self._primary_reasons(corpus, i, min_staleness_days)
            if not primary:
                continue
            reasons = list(primary)
            if aligned is not None and aligned[i] < min_alignment:
                low = float((min_alignment - aligned[i]) / min_alignment)
                reasons.append({"reason": "low_alignment", "score": round(low, 4),
                                "alignment": round(float(aligned[i]), 4)})
            if degree[i] == 0:
                reasons.append({"reason": "orphan", "score": orphan_score, "edges": 0})
            score = 1.0 - float(np.prod([1.0 - x["score"] for x in reasons]))
            found.append({"id": r.id, "score": round(score, 4), "reasons": reasons,
                          "importance": r.importance, "preview": preview(r.content),
                          "suggested": _suggestion(reasons, r.id)})
        found.sort(key=lambda c: (-c["score"], c["id"]))
        return {"count": min(len(found), limit), "total_found": len(found), "scanned": len(corpus),
                "candidates": found[:limit], "north_star": None if view is None else view.id,
                "thresholds": {"min_staleness_days": min_staleness_days, "min_alignment": min_alignment,
                               "duplicate_similarity": self.curation.duplicate_threshold(GENERAL)},
                "method": "a candidate is stale (written and last used ≥ min_staleness_days ago), redundant (E1 "
                          "cosine to another memory ≥ the duplicate threshold; the less important of the pair) or "
                          "unused (never read since written ≥ unused_after_days ago, importance below "
                          "unimportant_below). low_alignment (alignment to the north star and to every goal "
                          "< min_alignment) and orphan (no edges) only add to a candidate's score, never make "
                          "one. score = 1 − Π(1 − reason score). Nothing is changed: forget_concept or "
                          "trigger_consolidation act on them."}

    def _on_purpose(self, corpus: Corpus, view: StarView) -> np.ndarray:
        """Each memory's best alignment: to the north star (13 spaces) or to any goal (E1), whichever is higher."""
        star = self.teleology.alignments_of(corpus.records, view)[1]
        if view.goals is None or not len(view.goals):
            return star
        return np.maximum(star, view.goals.alignments(corpus.vectors).max(axis=1))

    def _primary_reasons(self, corpus: Corpus, i: int, min_staleness_days: int) -> list[dict[str, Any]]:
        """What can make memory i a candidate on its own: stale, redundant, or unused and unimportant."""
        r, now, p = corpus.records[i], self.clock.now(), self.settings["pruning"]
        reasons: list[dict[str, Any]] = []
        stale_s = min_staleness_days * 86400.0
        age, idle = now - r.created_at, now - (r.last_accessed or r.created_at)
        if age >= stale_s and idle >= stale_s:
            reasons.append({"reason": "stale", "score": round(min(1.0, idle / (2 * stale_s)) if stale_s else 1.0, 4),
                            "age_days": round(age / 86400, 2), "idle_days": round(idle / 86400, 2),
                            "access_count": r.access_count})
        elif (r.access_count == 0 and r.importance < float(p["unimportant_below"])
              and age >= float(p["unused_after_days"]) * 86400.0):
            reasons.append({"reason": "unused", "score": round(1.0 - r.importance, 4),
                            "age_days": round(age / 86400, 2), "importance": r.importance})
        for seq, sim in self.storage.indexes.search(1, corpus.vectors[i], 3):
            j = corpus.row_of(seq)
            if j is None or j == i or sim < self.curation.duplicate_threshold(domain_of(r)):  # ATC's θ_dup
                continue
            other = corpus.records[j]
            keeper = max((r, other), key=lambda x: (x.importance, x.access_count, x.created_at))
            if keeper.id != r.id:  # the lesser of the pair is the candidate; its twin stays
                reasons.append({"reason": "redundant", "score": round(float(sim), 4), "duplicate_of": other.id,
                                "similarity": round(float(sim), 4)})
            break
        return reasons

    # -- consolidation ---------------------------------------------------------------------------------------
    async def consolidate(self, *, max_memories: int, strategy: str, min_similarity: float, max_merges: int,
                          execute: bool, merge_strategy: str) -> dict[str, Any]:
        await self.storage.ready()
        await self.autonomous._embedders()
        started = time.perf_counter()
        pairs, scanned = await anyio.to_thread.run_sync(lambda: self._pairs(max_memories, strategy, min_similarity))
        chosen: list[dict[str, Any]] = []
        used: set[str] = set()
        for p in pairs:  # greedy, best first: each memory in one merge per call
            if p["ids"][0] in used or p["ids"][1] in used:
                continue
            used.update(p["ids"])
            chosen.append(p)
            if len(chosen) == max_merges:
                break
        merges: list[dict[str, Any]] = []
        if execute:
            for p in chosen:
                rationale = (f"autonomous consolidation ({strategy}): similarity {p['similarity']:.3f} ≥ "
                             f"{min_similarity}")
                try:
                    result = await self.curation.merge(p["ids"], target_name=p["label"], strategy=merge_strategy,
                                                       rationale=rationale, force=False)
                except ContextGraphError as exc:  # one pair changed meanwhile: the others still merge
                    merges.append({"ids": p["ids"], "merged": False, "error": exc.message})
                    continue
                merges.append({"ids": p["ids"], "merged": True, "merged_id": result["merged_id"],
                               "reversal_hash": result["reversal_hash"]})
        elapsed = round((time.perf_counter() - started) * 1000, 1)
        await self.autonomous.remember("consolidation", {
            "pairs": len(chosen), "executed": execute, "merged": sum(1 for m in merges if m.get("merged"))})
        out: dict[str, Any] = {
            "dry_run": not execute, "strategy": strategy, "min_similarity": min_similarity, "scanned": scanned,
            "pairs_found": len(pairs), "pairs": chosen, "max_merges": max_merges, "elapsed_ms": elapsed,
            "method": _CONSOLIDATION_METHOD[strategy]}
        if execute:
            out["merges"] = merges
            out["undo"] = "restore_from_hash with a merge's reversal_hash puts its two memories back"
        else:
            out["hint"] = ("Dry run: nothing changed. Call again with execute=true to merge these pairs (each through "
                           "merge_concepts, undoable with restore_from_hash).")
        return out

    def _pairs(self, max_memories: int, strategy: str, min_similarity: float) -> tuple[list[dict[str, Any]], int]:
        store, indexes = self.storage.store, self.storage.indexes
        c = self.settings["consolidation"]
        corpus: Corpus = read_corpus(store, max_memories)
        by_seq = {r.seq: i for i, r in enumerate(corpus.records)}
        window = float(c["temporal_window_hours"]) * 3600.0
        # semantic: candidates by E1 a little below the bar, then judged on the mean over the semantic spaces
        floor = min_similarity - 0.1 if strategy == "semantic" else min_similarity
        raw: dict[tuple[int, int], float] = {}
        for i in range(len(corpus)):
            for seq, sim in indexes.search(1, corpus.vectors[i], int(c["neighbours"]) + 1):
                j = by_seq.get(seq)
                if j is None or j == i or sim < floor:
                    continue
                a, b = min(i, j), max(i, j)
                if strategy == "temporal" and abs(corpus.records[a].created_at - corpus.records[b].created_at) > window:
                    continue
                raw[(a, b)] = max(raw.get((a, b), 0.0), float(sim))
        if strategy == "semantic" and raw:
            raw = self._semantic(corpus, raw, [int(s) for s in c["semantic_spaces"]], min_similarity)
        pairs = []
        for (a, b), sim in sorted(raw.items(), key=lambda kv: (-kv[1], kv[0])):
            ra, rb = corpus.records[a], corpus.records[b]
            keep = max((ra, rb), key=lambda x: (x.importance, x.created_at))
            pairs.append({"ids": [ra.id, rb.id], "similarity": round(sim, 4), "keep": keep.id,
                          "label": preview(keep.content, 60), "previews": [preview(ra.content), preview(rb.content)]})
        return pairs, len(corpus)

    def _semantic(self, corpus: Corpus, raw: dict[tuple[int, int], float], spaces: list[int],
                  bar: float) -> dict[tuple[int, int], float]:
        by_space = self.teleology.use_embedders([])
        seqs = sorted({corpus.records[i].seq for pair in raw for i in pair})
        fps = dict(zip(seqs, self.storage.store.fingerprints(seqs)))
        out = {}
        for (a, b) in raw:
            fa, fb = fps.get(corpus.records[a].seq), fps.get(corpus.records[b].seq)
            if fa is None or fb is None:
                continue
            sims = [float(space_similarities(by_space, SPACE_BY_ID[s], fa, [fb])[0]) for s in spaces]
            score = float(np.mean(sims))
            if score >= bar:
                out[(a, b)] = score
        return out

    # -- sub-goals -------------------------------------------------------------------------------------------
    async def sub_goals(self, min_confidence: float, max_goals: int, parent_goal_id: str | None) -> dict[str, Any]:
        await self.storage.ready()
        started = time.perf_counter()
        out = await anyio.to_thread.run_sync(lambda: self._sub_goals(min_confidence, max_goals, parent_goal_id))
        out["elapsed_ms"] = round((time.perf_counter() - started) * 1000, 1)
        await self.autonomous.remember("subgoals", {"found": len(out["sub_goals"]), "k": out["k"]})
        return out

    def _sub_goals(self, min_confidence: float, max_goals: int, parent: str | None) -> dict[str, Any]:
        store = self.storage.store
        s = self.settings["subgoals"]
        corpus = read_corpus(store, int(self.settings["max_scan"]))
        star = (self.teleology.state().get("star") or {}).get("id")
        previous = store.get_document(SUBGOALS_DOCUMENT) or {"goals": []}
        if parent is not None and parent != star:
            goal = next((g for g in previous["goals"] if g["id"] == parent), None)
            if goal is None:
                allowed = ([star] if star else []) + [g["id"] for g in previous["goals"]]
                raise InvalidParams(f"parent_goal_id {parent!r} names no goal. Give the north star's id, a sub-goal "
                                    "id from the last discover_sub_goals, or leave it out for the whole store.",
                                    field="parent_goal_id", allowed=allowed)
            members = set(goal["member_ids"])
            keep = [i for i, r in enumerate(corpus.records) if r.id in members]
            corpus = Corpus([corpus.records[i] for i in keep], corpus.vectors[keep])
        minimum = int(s["min_memories"])
        if len(corpus) < minimum:
            raise SubgoalDiscoveryError(
                f"{len(corpus)} memories under this goal; sub-goals need at least {minimum} to cluster. Store more "
                "memories, or discover under a larger parent.", memories=len(corpus), min_memories=minimum)
        t = sub_goal_themes(corpus, self.settings)
        c = t.clustering
        goals = []
        for g in range(c.k):
            rows = np.flatnonzero(t.labels == g)
            if not len(rows):
                continue
            confidence = (1.0 + t.silhouette[g]) / 2.0
            ids = [corpus.records[i].id for i in rows]
            centre = int(rows[np.argmax(unit(corpus.vectors[rows]) @ c.centroids[g])])
            goals.append({
                "id": goal_id(ids),
                "label": label(t.terms[g]), "terms": t.terms[g], "size": len(rows),
                "coherence": t.coherence[g], "confidence": round(confidence, 4),
                "member_ids": ids,
                "exemplar": preview(corpus.records[centre].content),
            })
        goals.sort(key=lambda x: (-x["size"], x["id"]))
        kept = [x for x in goals if x["confidence"] >= min_confidence][:max_goals]
        self.storage.writer.submit_future(store.put_document, SUBGOALS_DOCUMENT, {
            "at": time.time(), "parent": parent or star, "goals": [{"id": x["id"], "member_ids": x["member_ids"]}
                                                                  for x in goals]}).result()
        if parent is None or parent == star:  # the whole store's themes: what stage 4 re-ranks by from now on
            self.teleology.set_goals(goals_of(corpus, t), "discover_sub_goals")
        return {"sub_goals": kept, "count": len(kept), "clusters": c.k, "k": c.k, "scanned": len(corpus),
                "parent_goal_id": parent or star, "silhouette": round(c.silhouette, 4),
                "unthemed_ids": [corpus.records[i].id for i in np.flatnonzero(t.labels < 0)],
                "below_confidence": [{"label": x["label"], "size": x["size"], "confidence": x["confidence"]}
                                     for x in goals if x["confidence"] < min_confidence],
                "method": "spherical k-means over E1, k by the cosine silhouette; label: the cluster's most "
                          "characteristic terms (class-based TF-IDF); coherence: mean E1 cosine of the members "
                          "to their centroid; confidence: (1 + the members' mean silhouette) / 2; unthemed: memories "
                          "far less close to their cluster's centroid than its median member (outlier_ratio)"}


def _suggestion(reasons: list[dict[str, Any]], memory_id: str) -> dict[str, Any]:
    kinds = {r["reason"] for r in reasons}
    if "redundant" in kinds:
        twin = next(r["duplicate_of"] for r in reasons if r["reason"] == "redundant")
        return {"tool": "trigger_consolidation", "or": {"tool": "merge_concepts", "source_node_ids": [memory_id, twin]}}
    return {"tool": "forget_concept", "arguments": {"node_id": memory_id,
                                                   "reason": "obsolete" if "stale" in kinds else "user_requested"}}


_CONSOLIDATION_METHOD = {
    "similarity": "pairs whose E1 cosine (nearest neighbours in the E1 index) ≥ min_similarity, best first, each "
                  "memory in at most one merge per call",
    "temporal": "as similarity, and written within temporal_window_hours of each other",
    "semantic": "pairs whose mean similarity over E1, E5, E7 and E12 ≥ min_similarity (candidates from E1 at "
                "min_similarity − 0.1)",
}
