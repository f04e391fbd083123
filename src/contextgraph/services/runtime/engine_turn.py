"""One engine state for every process on one store (docs/architecture.md#several-workers).

Each process runs its own engine in memory (phases, EWMAs, the workspace, neuromodulators, ATC, Meta-UTL, the
dream's counts) and saves it to the store at most once a second. Two processes saving in turn would each
overwrite the other with its own lineage: N diverging engines taking turns. So every save also writes a small
stamp (who saved, how many times), and before a periodic save a process compares the stored stamp with the
one it last wrote or read: when another process saved since, it adopts the stored state instead of writing its
own. The engine's state is then always one lineage; what a process had added since its last save is dropped
on such a conflict (at most the save interval of its work, as after a crash; memories are never at stake).
"""

from __future__ import annotations

import time
from typing import Any
from uuid import uuid4

from contextgraph.storage.base import MemoryStore

DOCUMENT = "engine_stamp"


class EngineTurn:
    def __init__(self) -> None:
        self._me = uuid4().hex
        self._saves = 0
        self.known: dict[str, Any] | None = None  # the stamp this process last wrote or adopted
        self.adopted = 0

    def loaded(self, store: MemoryStore) -> None:
        self.known = store.get_document(DOCUMENT)

    def others_saved(self, store: MemoryStore) -> dict[str, Any] | None:
        """The stored stamp when another process saved since this one last saved or adopted, else None."""
        stored = store.get_document(DOCUMENT)
        return stored if stored is not None and stored != self.known else None


    def stamp(self, store: MemoryStore) -> None:
        self._saves += 1
        stamp = {"by": self._me, "saves": self._saves, "at": time.time()}
        store.put_document(DOCUMENT, stamp)
        self.known = stamp
