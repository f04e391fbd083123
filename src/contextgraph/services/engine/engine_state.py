"""The cognitive engine's state in the store: one JSON document beside the memories (LMDB meta table).

Oscillator phases and coupling, the EWMAs of ΔS/ΔC, lifecycle counters, the meta-cognitive history, the ego's
trajectory (FIFO 1000) and the workspace's replay queue and events survive a restart. Two server processes on
one data directory each run their own engine; the last one to save wins (memories are never at stake here).

The engine's history (services.history: the bounded series the dashboard draws) is a document of its own, so
the engine document stays small and a store saved before the history existed loads unchanged.
"""

from __future__ import annotations

from contextgraph.services.engine.cognition import CognitiveState
from contextgraph.services.engine.history import DOCUMENT as HISTORY_DOCUMENT
from contextgraph.services.engine.history import EngineHistory
from contextgraph.services.engine.workspace import WorkspaceService
from contextgraph.storage.base import MemoryStore

DOCUMENT = "cognitive_engine"


def save(store: MemoryStore, cognition: CognitiveState, workspace: WorkspaceService,
         history: EngineHistory | None = None) -> None:
    store.put_document(DOCUMENT, {"cognition": cognition.to_doc(), "workspace": workspace.to_doc()})
    if history is not None and history.dirty:
        store.put_document(HISTORY_DOCUMENT, history.to_doc())


def load(store: MemoryStore, cognition: CognitiveState, workspace: WorkspaceService,
         history: EngineHistory | None = None) -> bool:
    if history is not None:
        saved = store.get_document(HISTORY_DOCUMENT)
        if saved:
            history.load_doc(saved)
    doc = store.get_document(DOCUMENT)
    if not doc:
        return False
    cognition.load_doc(doc.get("cognition", {}))
    workspace.load_doc(doc.get("workspace", {}))
    return True
