"""ATC and Meta-UTL attached to the engine (called once by the composition root): the engine reads its
thresholds and λ from them, and the operations that observe outcomes feed them.

Reads: θ_kur is the workspace's entry threshold (its exit threshold keeps the constitution's gap below it),
`johari` the ΔS/ΔC computer's and the pulse's Johari boundary, the learned λ the computer's lifecycle λ (every L
and L̂ is scored with it), θ_dup get_memetic_status's duplicate threshold (passed by its callers).
Outcomes: a search offers each result (its north-star alignment, else its E1 similarity, against θ_opt/θ_acc/
θ_warn) and each workspace candidate (its r_m, against θ_kur) as predictions; a tool call that names a memory
uses it (forget_concept refutes it); merges confirm or refute θ_dup (services.curation). Every stored memory's
L and L̂ feed Meta-UTL.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator
from typing import Any

from contextgraph.constitution import Constitution
from contextgraph.services.engine.atc import ThresholdService, domain_of
from contextgraph.services.engine.delta_sc import DeltaScComputer
from contextgraph.services.engine.meta_learning import MetaLearningService
from contextgraph.services.engine.workspace import WorkspaceService
from contextgraph.services.runtime.store_handle import StoreHandle

RELEVANCE = ("theta_opt", "theta_acc", "theta_warn")
_MEMORY_ID = re.compile(r"^[0-9a-f]{32}$")
# tools whose naming a memory says it was not worth keeping (the outcome is 0, not 1)
REFUTING_TOOLS = frozenset({"forget_concept"})
# tools that name memories without using them (undo, reading the calibration itself)
IGNORED_TOOLS = frozenset({"restore_from_hash", "search_tombstones"})


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

    async def listener(record: Any, fingerprint: Any, utl: Any) -> None:
        parts = None if utl.parts is None or utl.predicted_parts is None else (utl.parts, utl.predicted_parts)
        meta.observe(storage.cognition.memory_count, float(utl.learning_score),
                     float(utl.predicted_learning_score), float(utl.lifecycle.lambda_s), parts)

    return listener


def on_results(thresholds: ThresholdService, workspace: WorkspaceService) -> Callable[[str, Any], None]:
    """MemoryService's results listener: a search's results and workspace candidates become predictions."""

    def listener(query: str, retrieval: Any) -> None:
        digest = hashlib.blake2b(query.encode(), digest_size=8).hexdigest()
        domains = {f.record.id: domain_of(f.record) for f in retrieval.found}
        relevance = [(f.record.id, domains[f.record.id], f.alignment if f.alignment is not None else f.similarity)
                     for f in retrieval.found]
        for name in RELEVANCE:
            thresholds.offer(name, relevance, digest)
        candidates = [(c["memory_id"], domains.get(c["memory_id"], "General"), float(c["r"]))
                      for c in workspace.status()["candidates"] if c["memory_id"] in domains]
        thresholds.offer("theta_kur", candidates, digest)

    return listener


def on_tool_call(thresholds: ThresholdService) -> Callable[[str, dict[str, Any]], None]:
    """Dispatcher listener: a successful tool call that names memories uses them (or, forgetting them, refutes)."""

    def listener(tool: str, arguments: dict[str, Any]) -> None:
        if tool in IGNORED_TOOLS or tool.startswith(("get_threshold", "get_calibration", "trigger_recal")):
            return
        ids = list(dict.fromkeys(_memory_ids(arguments)))
        if ids:
            thresholds.used(ids, f"{tool} named it", 0.0 if tool in REFUTING_TOOLS else 1.0)

    return listener


def _memory_ids(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        if _MEMORY_ID.match(value):
            yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _memory_ids(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _memory_ids(v)
