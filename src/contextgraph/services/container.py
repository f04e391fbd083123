"""Services: everything a tool handler may use, built once by the composition root (app.py) and handed down.
One frozen bundle, so a handler's reach is visible in its type and nothing reaches up to the App."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from contextgraph.clock import Clock
from contextgraph.config import Settings
from contextgraph.constitution import Constitution
from contextgraph.log import LogRing
from contextgraph.services.dreams.dream import DreamService
from contextgraph.services.engine.activity import ActivityMonitor
from contextgraph.services.engine.atc import ThresholdService
from contextgraph.services.engine.cognition import CognitiveState
from contextgraph.services.engine.history import EngineHistory
from contextgraph.services.engine.meta_learning import MetaLearningService
from contextgraph.services.engine.neuromodulation import NeuromodulationService
from contextgraph.services.engine.workspace import WorkspaceService
from contextgraph.services.feedback.steering import SteeringService
from contextgraph.services.memory.curation import CurationService
from contextgraph.services.memory.graph import GraphService
from contextgraph.services.memory.memory import MemoryService
from contextgraph.services.memory.scratchpad import Scratchpads
from contextgraph.services.purpose.purpose import PurposeServices
from contextgraph.services.runtime.perception import Perception
from contextgraph.services.runtime.store_handle import StoreHandle


@dataclass(frozen=True, slots=True)
class Services:
    settings: Settings
    constitution: Constitution
    log_ring: LogRing
    clock: Clock  # recovery windows read this; tests move it
    cognition: CognitiveState
    workspace: WorkspaceService
    scratchpads: Scratchpads
    storage: StoreHandle  # the opened store, indexes, writer and engine state of the data directory
    perception: Perception  # the embedding pipeline, loaded in the background
    memory: MemoryService
    curation: CurationService
    graph: GraphService
    purpose: PurposeServices  # north star, purpose vectors, teleological and autonomous services
    history: EngineHistory  # the bounded engine history the dashboard draws (fed by the dispatcher)
    activity: ActivityMonitor  # calls in flight and memory-operation rate (the dispatcher reports each call)
    neuromodulation: NeuromodulationService  # level(name): dopamine, serotonin, noradrenaline, acetylcholine
    steering: SteeringService  # the reward of every store
    dream: DreamService  # background consolidation
    thresholds: ThresholdService  # ATC: every threshold the engine decides with, per domain, and its outcomes
    meta_learning: MetaLearningService  # Meta-UTL: the λ the engine learns from its prediction errors
    started_at: float = field(default_factory=time.time)

    def close(self) -> None:
        """Save what is cached and close the store (the memories themselves are durable already)."""
        self.dream.request_wake("server closing")  # its committed steps stay; the one in flight stops
        self.storage.close()
