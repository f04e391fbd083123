"""ATC and Meta-UTL attached to the engine (called once by the composition root): the engine reads its
thresholds and λ from them, and the operations that observe outcomes feed them.

Reads: θ_kur is the workspace's entry threshold (its exit threshold keeps the constitution's gap below it),
`johari` the ΔS/ΔC computer's and the pulse's Johari boundary, the learned λ the computer's lifecycle λ (every L
and L̂ is scored with it), θ_dup the near-duplicate threshold of get_memetic_status, critique_context and
reflect_on_memory (their tools pass it) and of pruning (CurationService.duplicate_threshold, set in app.py).
Outcomes: a search offers each result (its north-star alignment, else its E1 similarity, against θ_warn) as a
prediction, ranked; a tool call that judges a memory's relevance resolves it (services.feedback.
relevance_evidence says which calls and how); merges confirm or refute θ_dup (services.curation). Workspace
candidates are not offered against θ_kur: relevance barely depends on their r_m, so those outcomes could only
push θ_kur to a bound (docs/engine.md#adaptive-thresholds). Every stored memory's L and L̂ feed Meta-UTL.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from contextgraph.constitution import Constitution
from contextgraph.services.engine.atc import ThresholdService, domain_of
from contextgraph.services.engine.delta_sc import DeltaScComputer
from contextgraph.services.engine.meta_learning import MetaLearningService
from contextgraph.services.engine.workspace import WorkspaceService
from contextgraph.services.feedback.relevance_evidence import judgements
from contextgraph.services.runtime.store_handle import StoreHandle

RELEVANCE = ("theta_warn",)  # the thresholds a search result's relevance calibrates


def attach_calibration(c: Constitution, storage: StoreHandle, workspace: WorkspaceService,
                       thresholds: ThresholdService, meta: MetaLearningService) -> None:
    """ATC's thresholds and Meta-UTL's λ, persisted with the engine's state, and every reader subscribed to them:
    the workspace's entry threshold (θ_kur), the UTL's Johari boundary and λ policy, the pulse's quadrant."""
    storage.parts.update({thresholds.document: thresholds, meta.document: meta})
    w = c["gwt"]["workspace"]
    gap = float(w["enter_threshold"]) - float(w["exit_threshold"])

    def workspace_threshold(value: float) -> None:
        workspace.enter_threshold = value
        workspace.exit_threshold = value - gap

    def computer(delta_sc: DeltaScComputer) -> None:
        delta_sc.threshold = thresholds.value("johari")
        delta_sc.lambda_policy = meta.policy

    thresholds.subscribe("theta_kur", workspace_threshold)
    storage.configure_delta_sc(computer)
    thresholds.subscribe("johari", lambda value: setattr(storage.delta_sc, "threshold", value))
    thresholds.subscribe("johari", storage.cognition.set_johari_threshold)  # the pulse's quadrant too


def on_store(meta: MetaLearningService, storage: StoreHandle) -> Callable[..., Any]:
    """MemoryService.after_store listener: the stored memory's L and L̂, at the λ they were scored with."""

    def listener(record: Any, fingerprint: Any, utl: Any) -> None:
        parts = None if utl.parts is None or utl.predicted_parts is None else (utl.parts, utl.predicted_parts)
        meta.observe(storage.cognition.memory_count, float(utl.learning_score),
                     float(utl.predicted_learning_score), float(utl.lifecycle.lambda_s), parts)

    return listener


def on_results(thresholds: ThresholdService) -> Callable[[str, Any], None]:
    """MemoryService's results listener: a search's results, in its order, become predictions."""

    def listener(query: str, retrieval: Any) -> None:
        digest = hashlib.blake2b(query.encode(), digest_size=8).hexdigest()
        relevance = [(f.record.id, domain_of(f.record), f.alignment if f.alignment is not None else f.similarity)
                     for f in retrieval.found]
        for name in RELEVANCE:
            thresholds.offer(name, relevance, digest)

    return listener


def on_tool_call(thresholds: ThresholdService) -> Callable[[str, dict[str, Any]], None]:
    """Dispatcher listener: a successful tool call that judges memories (relevance_evidence) resolves their
    predictions; a cited id prefix counts when exactly one memory with open predictions has it."""

    def listener(tool: str, arguments: dict[str, Any]) -> None:
        for j in judgements(tool, arguments):
            ids = [j.memory] if not j.prefix else thresholds.outcomes.with_prefix(j.memory)
            if len(ids) == 1:
                thresholds.used(ids, f"{tool} judged it", j.outcome)

    return listener
