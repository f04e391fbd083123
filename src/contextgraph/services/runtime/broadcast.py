"""trigger_workspace_broadcast's use-case: a stored memory's r_m against the current context (its agreement with
the context in each space, against the store's distribution of that space, as search results bind), then its
broadcast into the global workspace."""

from __future__ import annotations

from typing import Any

import anyio
import numpy as np

from contextgraph.errors import NodeNotFound
from contextgraph.fingerprint import SPACES
from contextgraph.gwt.binding import binding, context_agreements
from contextgraph.retrieval.similarity import context_similarities
from contextgraph.services.engine.workspace import WorkspaceService
from contextgraph.services.runtime.perception import Perception
from contextgraph.services.runtime.store_handle import StoreHandle


async def broadcast_memory(storage: StoreHandle, perception: Perception, workspace: WorkspaceService,
                           memory_id: str, importance: float, alignment: float, force: bool) -> dict[str, Any]:
    """trigger_workspace_broadcast: r_m of a stored memory against the current context — its similarity to the
    context in each space as a percentile of the context's similarities to a sample of the store
    (gwt.binding.context_agreements), the measure the last operation's candidates bound with — then the
    broadcast. No context yet: no r_m (the workspace decides what that means)."""
    record = await storage.live_record(memory_id)
    context, reference = workspace.context
    r, psi = None, 0.0
    agreements: list[float] = []
    if context is not None and reference:
        embedders = {e.space: e for e in (await perception.pipeline()).embedders}

        def measure() -> list[float]:
            (fp,) = storage.store.fingerprints([record.seq])
            if fp is None:
                raise NodeNotFound(f"Memory {memory_id} was deleted while it was being measured.",
                                   node_id=memory_id)
            sims = context_similarities(embedders, context, [fp])
            return context_agreements(sims, [reference.get(s.id, np.zeros(0)) for s in SPACES])[0].tolist()

        agreements = await anyio.to_thread.run_sync(measure)
        r, psi = binding(np.asarray(agreements))
    result = workspace.broadcast(memory_id, r, importance, alignment, force, psi)
    result["agreements"] = {f"E{s.id}": round(a, 6) for s, a in zip(SPACES, agreements)}
    return result
