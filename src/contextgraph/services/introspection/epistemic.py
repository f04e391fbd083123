"""epistemic_action: the question the agent should ask the user now.

Focal memories are the least coherent of the most recent ones: each one's E1 coherence
ΔC = 0.4·Connectivity + 0.4·ClusterFit + 0.2·Consistency against its own neighbourhood (as in services.delta_sc,
E1 only, so the window stays cheap). The question is about the least coherent one (naming the others as also
unclear) and asks about the aspect of the space with the highest entropy in the engine's running average (what
the recent operations understood least). With fewer than `min_memories` memories there is nothing to focus on
and the generic question about the user's domain and goals is returned.

expected_entropy_reduction is an estimate, and says so: one operation moves the entropy average by α (the
pulse's EWMA weight) toward its own ΔS, and an answer that integrates focal memories of mean coherence c̄ is
expected to remove the share (1 − c̄) of the current entropy: α · entropy · (1 − c̄).

Without `force` a question is generated only when it is called for: coherence below `low_coherence`, or the
pulse suggesting epistemic_action (Unknown quadrant, or the workspace empty for 5 s).
"""

from __future__ import annotations

from typing import Any

import anyio
import numpy as np

from contextgraph.constitution import Constitution
from contextgraph.embedders.pipeline import FingerprintPipeline
from contextgraph.fingerprint import SPACES
from contextgraph.retrieval.similarity import space_similarities
from contextgraph.services.engine.cognition import CognitiveState
from contextgraph.services.introspection.johari import ASPECT
from contextgraph.services.runtime.perception import Perception
from contextgraph.services.runtime.store_handle import StoreHandle
from contextgraph.storage.base import MemoryRecord
from contextgraph.utl import delta_c as dc

GENERIC_QUESTION = ("What domain are you working in, and what are you trying to achieve? A sentence or two about "
                    "the goal lets me connect what you store from here on.")
ASK = {  # about the one focal memory the question names
    1: "what does it mean for the task at hand",
    2: "is it still current",
    3: "when in the day or week does it apply",
    4: "what came before and after it",
    5: "what causes it, and what does it lead to",
    6: "what do its key terms refer to",
    7: "which code does it touch",
    8: "what else is it connected to",
    9: "is it something already stored, worded differently",
    10: "which source or modality does it come from",
    11: "which components, people or files are involved",
    12: "which of its details matter",
    13: "what do its key terms refer to",
}


def _preview(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


async def epistemic_action(storage: StoreHandle, perception: Perception, cognition: CognitiveState,
                           constitution: Constitution, force: bool) -> dict[str, Any]:
    e = constitution["epistemic"]
    low, min_memories = float(e["low_coherence"]), int(e["min_memories"])
    pulse = cognition.pulse()
    state = cognition.snapshot()
    entropy, coherence = state["entropy"], state["coherence"]
    alpha = float(constitution.get("pulse.ewma_alpha"))
    p = int(constitution.get("pulse.precision"))
    called_for = coherence < low or pulse["suggested_action"] == "epistemic_action"
    base = {"coherence_before": round(coherence, p), "entropy_before": round(entropy, p),
            "pulse_suggestion": pulse["suggested_action"], "forced": force}
    if not (force or called_for):
        return {"action_type": "none", **base, "question": None, "focal_nodes": [],
                "expected_entropy_reduction": 0.0, "suggested_follow_up": None,
                "reason": f"coherence {coherence:.3f} is not below {low} and the pulse suggests "
                          f"{pulse['suggested_action']}; pass force=true for a question anyway"}
    store = (await storage.ready()).store
    count = store.count()
    if count < min_memories:
        return {"action_type": "ask_user", **base, "question": GENERIC_QUESTION, "focal_nodes": [],
                "expected_entropy_reduction": round(alpha * entropy, p),
                "suggested_follow_up": "store the answer with inject_context: it becomes the first anchor",
                "reason": f"only {count} memories (fewer than {min_memories}): nothing to focus on yet"}
    pipeline = await perception.pipeline()
    focal = await anyio.to_thread.run_sync(
        lambda: _focal(storage, pipeline, constitution, state["coherence_history"]))
    per_space = state["delta_s"]
    target = int(np.argmax(per_space)) + 1  # the space the recent operations understood least
    quoted = [f"“{_preview(r.content)}”" for r, _ in focal]
    # one question about the least coherent memory: the others may be about anything, and asking how unrelated
    # memories relate to each other is not a question a user can answer
    question = f"How does {quoted[0]} fit with the rest of your work? In particular, {ASK[target]}?"
    if len(quoted) > 1:
        question += f" (Also unclear to me: {', '.join(quoted[1:])}.)"
    mean_c = float(np.mean([c for _, c in focal])) if focal else 0.0
    return {
        "action_type": "ask_user", **base, "question": question,
        "focal_nodes": [r.id for r, _ in focal],
        "focal_coherence": [round(c, p) for _, c in focal],
        "target_space": {"space": f"E{target}", "name": SPACES[target - 1].name, "aspect": ASPECT[target],
                         "delta_s": round(per_space[target - 1], p)},
        "expected_entropy_reduction": round(alpha * entropy * (1.0 - mean_c), p),
        "suggested_follow_up": "store the answer with inject_context, link_to the focal nodes",
        "method": f"focal nodes: the {len(focal)} least coherent (E1 ΔC) of the {int(e['focal_window'])} most "
                  "recent memories; aspect: the space with the highest running ΔS; expected reduction "
                  "α·entropy·(1 − mean focal coherence), an estimate",
    }


def _focal(storage: StoreHandle, pipeline: FingerprintPipeline, constitution: Constitution,
           history: list[float]) -> list[tuple[MemoryRecord, float]]:
    """(record, E1 coherence) of the least coherent recent memories, lowest first."""
    e = constitution["epistemic"]
    k = int(constitution["utl"]["knn_k"])
    threshold = float(constitution["memory"]["connectivity_threshold"])
    weights = constitution["utl"]["delta_c_weights"]
    store, indexes = storage.store, storage.indexes
    by_space = {emb.space: emb for emb in pipeline.embedders}
    consistency = dc.consistency(history)
    recent = store.graph_read(lambda g: g.recent(int(e["focal_window"]), None, None))
    scored = []
    own = store.fingerprints([r.seq for r in recent], spaces=[1])
    for record, fp in zip(recent, own):
        if fp is None:
            continue
        ranked = [seq for seq, _ in indexes.search(1, fp[1], 2 * k + 1) if seq != record.seq][: 2 * k]
        fps = [f for f in store.fingerprints(ranked, spaces=[1]) if f is not None]
        sims = space_similarities(by_space, SPACES[0], fp, fps[:k])
        ring = space_similarities(by_space, SPACES[0], fp, fps[k:])
        c = dc.delta_c(dc.connectivity(sims, threshold), dc.cluster_fit_from_distances(1 - sims, 1 - ring),
                       consistency, weights)
        scored.append((record, c))
    scored.sort(key=lambda rc: (rc[1], rc[0].id))
    return scored[: int(e["focal_nodes"])]
