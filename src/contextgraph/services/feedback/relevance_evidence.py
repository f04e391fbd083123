"""Which tool calls judge a search result's relevance, and how (docs/engine.md#adaptive-thresholds): ATC's
outcomes are relevance evidence, not usage. Pure: a call's canonical name and validated arguments in, the
judgements it makes out; the dispatcher's listener (services.feedback.calibration_wiring) hands them to ATC.

    positive (1)    hydrate_citation's tag, a [node_…] tag cited in stored content, store_memory/inject_context's
                    link_to, boost_importance up, annotate_node (its related memories too) unless it annotates a
                    low confidence, merge_concepts' sources (merged into the new memory), update_synergy_matrix's
                    result judged relevant
    negative (0)    update_synergy_matrix's result judged not_relevant, forget_concept as incorrect (or semantic
                    cancer), boost_importance down, annotate_node with a confidence below one half
    in between      update_synergy_matrix's partially_relevant (0.5) or its relevance_score

Every other call that names a memory (its neighbourhood opened, its lineage read, a broadcast, a forget as
obsolete or duplicate) looks at it without saying whether it answered the search: no judgement. Neither is
finding it again in a later search, nor leaving it unused (services.outcomes).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

# update_synergy_matrix's feedback as a relevance outcome (its relevance_score overrides it)
FEEDBACK = {"relevant": 1.0, "partially_relevant": 0.5, "not_relevant": 0.0}
# forget_concept's reasons that say the memory was wrong, not merely old or a copy of another
REFUTING_REASONS = frozenset({"incorrect", "semantic_cancer"})
LOW_CONFIDENCE = 0.5  # annotate_node's confidence below this judges the memory unreliable
_CITATION = re.compile(r"\[node_([0-9a-f]{6,32})\]")


@dataclass(frozen=True, slots=True)
class Judgement:
    memory: str  # a memory id, or an id prefix when `prefix` (a citation tag names one)
    outcome: float
    prefix: bool = False


def judgements(tool: str, arguments: dict[str, Any]) -> list[Judgement]:
    """What the successful call `tool(arguments)` says about the relevance of the memories it names."""
    judge = _JUDGES.get(tool)
    return list(judge(arguments)) if judge is not None else []


def _hydrate(a: dict[str, Any]) -> Iterator[Judgement]:
    match = _CITATION.fullmatch(str(a.get("citation_tag", "")).strip().lower())
    if match:
        yield Judgement(match.group(1), 1.0, prefix=True)


def _store(a: dict[str, Any]) -> Iterator[Judgement]:
    for memory_id in a.get("link_to") or ():
        yield Judgement(str(memory_id), 1.0)
    for prefix in dict.fromkeys(_CITATION.findall(str(a.get("content", "")).lower())):
        yield Judgement(prefix, 1.0, prefix=True)


def _boost(a: dict[str, Any]) -> Iterator[Judgement]:
    delta = float(a.get("delta") or 0.0)
    if delta:
        yield Judgement(str(a["node_id"]), 1.0 if delta > 0 else 0.0)


def _annotate(a: dict[str, Any]) -> Iterator[Judgement]:
    annotations = a.get("annotations") or {}
    confidence = annotations.get("confidence")
    yield Judgement(str(a["node_id"]), 0.0 if confidence is not None and confidence < LOW_CONFIDENCE else 1.0)
    for concept in annotations.get("related_concepts") or ():
        if re.fullmatch(r"[0-9a-f]{32}", str(concept)):
            yield Judgement(str(concept), 1.0)


def _merge(a: dict[str, Any]) -> Iterator[Judgement]:
    for memory_id in a.get("source_node_ids") or ():
        yield Judgement(str(memory_id), 1.0)


def _synergy(a: dict[str, Any]) -> Iterator[Judgement]:
    score = a.get("relevance_score")
    outcome = float(score) if score is not None else FEEDBACK.get(str(a.get("feedback")))
    if outcome is not None:
        yield Judgement(str(a["result_vector_id"]), outcome)


def _forget(a: dict[str, Any]) -> Iterator[Judgement]:
    if a.get("reason") in REFUTING_REASONS:
        yield Judgement(str(a["node_id"]), 0.0)


_JUDGES: dict[str, Callable[[dict[str, Any]], Iterator[Judgement]]] = {
    "hydrate_citation": _hydrate,
    "store_memory": _store,
    "inject_context": _store,
    "boost_importance": _boost,
    "annotate_node": _annotate,
    "merge_concepts": _merge,
    "update_synergy_matrix": _synergy,
    "forget_concept": _forget,
}
