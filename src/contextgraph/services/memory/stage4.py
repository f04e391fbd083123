"""Stage 4 of retrieval, purpose (docs/retrieval.md#stage-4-purpose): once a north star exists, re-rank the fused
candidates toward the goal the query belongs to, or, when asked (`stage4="filter"`), drop those aligned below
the threshold as before.

    rerank (default)  the query's goal is the store theme it aligns with best (teleology.goals); an off-goal query
                      is left alone. Each candidate's fused score is scaled by a factor in [1 − β, 1 + β] by its
                      alignment to that goal, pivoting on θ_warn. Nothing is removed.
    filter            the candidates whose alignment to the star (13 spaces) is below θ_warn sort last and are
                      never chosen: the earlier stage 4, kept for users who want a hard cut.
    off               stage4=false: the star changes nothing.

The answer's memories carry their alignment to the star (the workspace ranks by it): measured for every candidate
by the filter, which needs them all, and for the chosen few otherwise (`star_alignments`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from contextgraph.embedders.base import Embedder
from contextgraph.fingerprint import Fingerprint
from contextgraph.services.memory.purpose_port import StarAlignment
from contextgraph.storage.base import MemoryRecord
from contextgraph.teleology.goals import goal_alignments, query_goal, rerank_factors

SEMANTIC = 1
MODES = ("rerank", "filter")
STORED_DIGITS = 5  # a record's stored alignment (services.purpose.teleology.purpose_doc) has this many decimals
IDS_SHOWN = 20  # dropped_ids lists at most this many (the best-fused of the dropped; each is a record read)
INACTIVE = {"active": False,
            "reason": "no north star yet: auto_bootstrap_north_star derives one from the stored memories"}
OPTED_OUT = "turned off for this query (stage4=false)"


@dataclass
class Stage4:
    alignments: np.ndarray | None  # the filter's: every candidate's alignment to the star; None otherwise
    factors: np.ndarray | None = None  # rerank: each candidate's multiplier of its fused score
    keep: np.ndarray | None = None  # filter: which candidates may be chosen
    report: dict[str, Any] | None = None

    def adjusted(self, fused: np.ndarray) -> np.ndarray:
        if self.factors is not None:
            return fused * self.factors
        if self.keep is not None:
            return np.where(self.keep, fused, -np.inf)
        return fused

    @property
    def changes_scores(self) -> bool:
        return self.factors is not None or self.keep is not None


def idle(view: StarAlignment | None, mode: str | None) -> dict[str, Any]:
    """The report of a stage 4 that did not run over candidates (no star, opted out, or nothing to rank)."""
    if view is None:
        return dict(INACTIVE)
    if mode is None:
        return {"active": False, "reason": OPTED_OUT, "threshold": view.threshold}
    return {"active": True, "mode": mode, "star_id": view.id, "threshold": view.threshold}


def plan(view: StarAlignment | None, mode: str | None, embedders: dict[int, Embedder], query: Fingerprint,
         seqs: list[int], docs: Sequence[Fingerprint], e1: np.ndarray, bound: float) -> Stage4:
    """What stage 4 does to these candidates (`e1`: their E1 column [n, d])."""
    if view is None or mode is None:
        return Stage4(None, report=idle(view, mode))
    if mode == "filter":
        alignments = view.alignments_of_seqs(embedders, seqs, docs)
        return Stage4(alignments, keep=alignments >= view.threshold, report=idle(view, mode))
    return _rerank(view, query, e1, bound)


def star_alignments(stage: Stage4, view: StarAlignment | None, embedders: dict[int, Embedder], seqs: list[int],
                    docs: Sequence[Fingerprint], chosen: list[int],
                    records: Sequence[MemoryRecord | None]) -> dict[int, float] | None:
    """The chosen candidates' alignments to the star ({candidate index: alignment}), None without a star: the
    filter's, else the one stored with each record under this star (its purpose), else measured. Rounded to the
    stored precision, so that an answer reads the same whether the star's background recompute has reached a
    record yet or not."""
    if view is None:
        return None
    if stage.alignments is not None:
        return {i: round(float(stage.alignments[i]), STORED_DIGITS) for i in chosen}
    out: dict[int, float] = {}
    for i, record in zip(chosen, records):
        purpose = None if record is None else record.extra.get("purpose")
        if purpose and purpose.get("star") == view.id:
            out[i] = round(float(purpose["alignment"]), STORED_DIGITS)
    missing = [i for i in chosen if i not in out]
    if missing:
        measured = view.alignments_of_seqs(embedders, [seqs[i] for i in missing], [docs[i] for i in missing])
        out.update((i, round(float(a), STORED_DIGITS)) for i, a in zip(missing, measured.tolist()))
    return out


def _rerank(view: StarAlignment, query: Fingerprint, e1: np.ndarray, bound: float) -> Stage4:
    report = {**idle(view, "rerank"), "bound": bound}
    goals = view.goals
    if goals is None or not len(goals) or SEMANTIC not in query:
        return Stage4(None, report={**report, "goal": None, "reason": "no goals known: ranking unchanged"})
    centroids, references = goals.matrix()
    to_goals = goal_alignments(np.asarray(query[SEMANTIC]), centroids, references)[0]
    g = query_goal(to_goals, view.threshold)
    report["query_alignment"] = round(float(to_goals.max()), 4)
    if g is None:
        return Stage4(None, report={**report, "goal": None,
                                    "reason": "the query belongs to no goal: ranking unchanged"})
    goal = goals.goals[g]
    to_goal = goal_alignments(e1, centroids[g:g + 1], references[g:g + 1])[:, 0]
    return Stage4(None, factors=rerank_factors(to_goal, view.threshold, bound),
                  report={**report, "goal": {"id": goal.id, "label": goal.label}})


def describe(stage: Stage4, plain: list[int], chosen: list[int], dropped: np.ndarray | None,
             ids_of: Callable[[list[int]], list[str]], fused: np.ndarray) -> dict[str, Any]:
    """The report once the answer is chosen, with `note`, one line for the default answer, when stage 4 changed
    it: `plain` the answer without stage 4, `chosen` with it (candidate indices, best first)."""
    report = dict(stage.report or {})
    if stage.keep is not None and dropped is not None:
        shown = dropped[np.argsort(-fused[dropped], kind="stable")][:IDS_SHOWN]  # the best-fused first
        report.update(dropped=len(dropped), dropped_ids=ids_of(shown.tolist()) if len(shown) else [])
    if not stage.changes_scores:
        return report
    changed = sum(1 for a, b in zip(plain, chosen) if a != b) + abs(len(plain) - len(chosen))
    before = set(plain)
    entered = [c for c in chosen if c not in before]
    report.update(reordered=changed, entered=len(entered))
    if changed:
        report["note"] = _note(report, changed, len(entered), len(chosen))
    return report


def _note(report: dict[str, Any], changed: int, entered: int, shown: int) -> str:
    if report.get("mode") == "filter":
        return (f"Stage 4 filtered this answer: {report.get('dropped', 0)} candidates aligned below "
                f"{report['threshold']:.2f} with the north star were left out (stage4=\"rerank\" re-ranks instead, "
                "stage4=false searches everything).")
    goal = report.get("goal") or {}
    swapped = f", {entered} of them new to the list" if entered else ""
    return (f"Stage 4 re-ranked this answer toward the goal '{goal.get('label', '?')}': {changed} of {shown} "
            f"places changed{swapped} (stage4=false for the ranking without purpose).")
