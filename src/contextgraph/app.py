"""Composition root: builds the services once and hands them down. Nothing here imports mcp, so the CLI's
in-process paths and the tests can build an App without paying for the SDK."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from contextgraph import log
from contextgraph.clock import Clock
from contextgraph.config import Settings
from contextgraph.constitution import Constitution, constitution
from contextgraph.services.cognition import CognitiveState
from contextgraph.services.curation import CurationService
from contextgraph.services.graph import GraphService
from contextgraph.services.memory import MemoryService
from contextgraph.services.scratchpad import ScratchpadLimits, Scratchpads
from contextgraph.services.workspace import WorkspaceService
from contextgraph.tools.dispatch import Dispatcher
from contextgraph.tools.registry import Registry, build_registry


@dataclass
class App:
    settings: Settings
    constitution: Constitution
    log_ring: log.LogRing
    cognition: CognitiveState
    workspace: WorkspaceService
    scratchpads: Scratchpads
    registry: Registry
    memory: MemoryService
    dispatcher: Dispatcher = field(init=False)
    started_at: float = field(default_factory=time.time)
    clock: Clock = field(default_factory=Clock)  # recovery windows read this; tests move it
    curation: CurationService = field(init=False)
    graph: GraphService = field(init=False)

    def __post_init__(self) -> None:
        self.dispatcher = Dispatcher(self)
        self.curation = CurationService(self.memory, self.constitution, self.clock)
        self.graph = GraphService(self.memory, self.constitution, self.clock)


def build_app(settings: Settings, *, registry: Registry | None = None, configure_logging: bool = True) -> App:
    c = constitution()
    ring = log.LogRing(int(c.get("logging.ring_buffer_size")))
    if configure_logging:
        log.configure(settings.log_level, ring)
    cognition = CognitiveState(c)
    workspace = WorkspaceService(c, cognition)
    return App(
        settings=settings,
        constitution=c,
        log_ring=ring,
        cognition=cognition,
        workspace=workspace,
        scratchpads=Scratchpads(ScratchpadLimits.from_constitution(c)),
        registry=registry or build_registry(c, settings.profile),
        memory=MemoryService(settings, c, cognition, workspace),  # opens the store and loads the model lazily
    )
