"""The cognitive engine's state in the store: one JSON document beside the memories (LMDB meta table).

Oscillator phases and coupling, the EWMAs of ΔS/ΔC, lifecycle counters, the meta-cognitive history, the ego's
trajectory (FIFO 1000) and the workspace's replay queue and events survive a restart. Two server processes on
one data directory each run their own engine; the last one to save wins (memories are never at stake here).
"""

from __future__ import annotations

from contextgraph.services.cognition import CognitiveState
from contextgraph.services.workspace import WorkspaceService
from contextgraph.storage.base import MemoryStore

DOCUMENT = "cognitive_engine"


def save(store: MemoryStore, cognition: CognitiveState, workspace: WorkspaceService) -> None:
    store.put_document(DOCUMENT, {"cognition": cognition.to_doc(), "workspace": workspace.to_doc()})


def load(store: MemoryStore, cognition: CognitiveState, workspace: WorkspaceService) -> bool:
    doc = store.get_document(DOCUMENT)
    if not doc:
        return False
    cognition.load_doc(doc.get("cognition", {}))
    workspace.load_doc(doc.get("workspace", {}))
    return True
