"""trigger_workspace_broadcast's use-case: a stored memory's r_m against the current context (its standing in each
space among the last operation's candidates), then its broadcast into the global workspace."""

from __future__ import annotations

from typing import Any

import anyio
import numpy as np

from contextgraph.errors import NodeNotFound
from contextgraph.fingerprint import SPACES
from contextgraph.gwt.binding import binding, rank_agreement
from contextgraph.services.memory import MemoryService
from contextgraph.services.workspace import WorkspaceService


async def broadcast_memory(memory: MemoryService, workspace: WorkspaceService, memory_id: str, importance: float,
                           alignment: float, force: bool) -> dict[str, Any]:
    """trigger_workspace_broadcast: r_m of a stored memory against the current context — its standing in each
    space among the last operation's candidates (gwt.binding.rank_agreement) — then the broadcast."""
    storage = await memory.handle.ready()
    record = storage.live_record(memory_id)
    store = storage.store
    context, reference = workspace.context
    r, psi = None, 0.0
    agreements: list[float] = []
    if context is not None and reference:
        await memory.perception.pipeline()

        def measure() -> list[float]:
            (fp,) = store.fingerprints([record.seq])
            if fp is None:
                raise NodeNotFound(f"Memory {memory_id} was deleted while it was being measured.",
                                   node_id=memory_id)
            scores = memory.space_scores(context, [fp])
            return [rank_agreement(scores[s.id][0], reference[s.id]) for s in SPACES]

        agreements = await anyio.to_thread.run_sync(measure)
        r, psi = binding(np.asarray(agreements))
    result = workspace.broadcast(memory_id, r, importance, alignment, force, psi)
    result["agreements"] = {f"E{s.id}": round(a, 6) for s, a in zip(SPACES, agreements)}
    return result
