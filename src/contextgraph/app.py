"""Composition root: builds the services, the tool registry and the dispatcher once and hands them down.
Nothing here imports mcp, so the CLI's in-process paths and the tests can build an App without paying for the
SDK. Only the entry points (cli, server, transports, shell) import this module; `contextgraph serve` over stdio
imports it after the handshake, through deferred_app.py."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial

from threadpoolctl import threadpool_limits

from contextgraph import log
from contextgraph.clock import Clock
from contextgraph.config import Settings
from contextgraph.constitution import Constitution, constitution
from contextgraph.services.container import Services
from contextgraph.services.dreams.dream import DOCUMENT as DREAM_DOCUMENT
from contextgraph.services.dreams.dream import DreamService
from contextgraph.services.engine.activity import ActivityMonitor
from contextgraph.services.engine.atc import ThresholdService
from contextgraph.services.engine.cognition import CognitiveState
from contextgraph.services.engine.history import EngineHistory
from contextgraph.services.engine.meta_learning import MetaLearningService
from contextgraph.services.engine.neuromodulation import DOCUMENT as NEUROMODULATION_DOCUMENT
from contextgraph.services.engine.neuromodulation import NeuromodulationService
from contextgraph.services.engine.workspace import WorkspaceService
from contextgraph.services.feedback.calibration_wiring import attach_calibration, on_results, on_store, on_tool_call
from contextgraph.services.feedback.neuromod_wiring import on_tool_call as dopamine_on_use
from contextgraph.services.feedback.steering import SteeringService
from contextgraph.services.memory.curation import CurationService
from contextgraph.services.memory.graph import GraphService
from contextgraph.services.memory.memory import MemoryService
from contextgraph.services.memory.scratchpad import ScratchpadLimits, Scratchpads
from contextgraph.services.memory.store_pipeline import MemoryListeners
from contextgraph.services.purpose.purpose import PurposeServices
from contextgraph.services.runtime.perception import Perception
from contextgraph.services.runtime.store_handle import StoreHandle
from contextgraph.tools.catalog import build_registry
from contextgraph.tools.context import ProgressReporter, ToolContext, no_notification, no_progress
from contextgraph.tools.dispatch import Dispatcher
from contextgraph.tools.registry import Registry


@dataclass
class App:
    services: Services
    registry: Registry
    dispatcher: Dispatcher = field(init=False)

    def __post_init__(self) -> None:
        self.dispatcher = Dispatcher(self.registry, self.services.constitution, self.services.cognition)
        self.dispatcher.observers.append(self.services.history.record_call)  # store/search rates, engine samples
        # a call that names a memory uses it: ATC's pending predictions resolve (services.calibration_wiring)
        self.dispatcher.argument_observers.append(on_tool_call(self.services.thresholds))
        # and what the agent used ranks higher in its next answers (dopamine, services.feedback.neuromod_wiring)
        self.dispatcher.argument_observers.append(dopamine_on_use(self.services.neuromodulation))

    @property
    def settings(self) -> Settings:
        return self.services.settings

    @property
    def constitution(self) -> Constitution:
        return self.services.constitution

    def tool_context(self, session: str = "local",
                     notify_tools_changed: Callable[[], Awaitable[bool]] = no_notification,
                     report_progress: ProgressReporter = no_progress) -> ToolContext:
        """What a handler of this App gets for one call from `session`."""
        return ToolContext(self.services, self.registry, self.dispatcher.run, session, notify_tools_changed,
                           report_progress)

    def close(self) -> None:
        self.services.close()


def build_services(settings: Settings, c: Constitution, ring: log.LogRing,
                   tools: frozenset[str] | None = None) -> Services:
    """`tools`: the registered tool names, the only ones the pulse may suggest (D16); None (services without a
    tool layer, as some tests build them) keeps the constitution's names."""
    cognition = CognitiveState(c, tools=tools)
    # neuromodulation, steering and dreams, wired to the events that move them (docs/engine.md)
    neuromodulation = NeuromodulationService(c)
    workspace = WorkspaceService(c, cognition, on_enter=neuromodulation.workspace_enter)
    clock = Clock()
    history = EngineHistory(c, cognition)
    storage = StoreHandle(settings, c, cognition, workspace, history)  # opens the store lazily
    perception = Perception(settings, c, storage)  # loads the model lazily, in the background
    activity = ActivityMonitor(c)
    cognition.request_listeners.append(neuromodulation.meta_low)
    steering = SteeringService(c, storage, neuromodulation)
    dream = DreamService(c, storage, workspace, cognition, activity, auto=bool(settings.auto_dream))
    # the cognitive state and the dream engine refer to each other: each is told of the other once both exist
    cognition.request_listeners.append(dream.on_request)
    cognition.attach_consolidation(dream)
    storage.parts.update({NEUROMODULATION_DOCUMENT: neuromodulation, DREAM_DOCUMENT: dream})
    # ATC and Meta-UTL: the engine reads its thresholds and λ from them; outcomes and predictions feed them
    thresholds = ThresholdService(c)
    meta_learning = MetaLearningService(c, alpha_source=lambda: neuromodulation.level("acetylcholine"))
    curation = CurationService(storage, perception, c, clock, observe_outcome=thresholds.observe,
                               duplicate_threshold=partial(thresholds.value, "theta_dup"))
    attach_calibration(c, storage, workspace, thresholds, meta_learning)
    # stage 4's alignment floor is ATC's θ_warn (prior 0.55 = retrieval.alignment_floor), learned from relevance
    purpose = PurposeServices.build(storage, cognition, perception, curation, c, clock,
                                    threshold_source=lambda: thresholds.value("theta_warn"))
    listeners = MemoryListeners(
        after_store=[steering.on_store, on_store(meta_learning, storage), purpose.goals.after_store],
        after_results=[on_results(thresholds),  # and what was retrieved together, for NREM
                       neuromodulation.after_search,  # a weak search arouses noradrenaline
                       lambda _query, found: dream.co_retrieval.record([f.record.id for f in found.found])],
    )
    memory = MemoryService(storage, perception, c, teleology=purpose.teleology,  # purpose vectors, stage 4
                           modulation=neuromodulation.modulation, listeners=listeners)
    return Services(
        settings=settings,
        constitution=c,
        log_ring=ring,
        clock=clock,
        cognition=cognition,
        workspace=workspace,
        scratchpads=Scratchpads(ScratchpadLimits.from_constitution(c)),
        storage=storage,
        perception=perception,
        memory=memory,
        curation=curation,
        graph=GraphService(storage, c, clock),
        purpose=purpose,
        history=history,
        activity=activity,
        neuromodulation=neuromodulation,
        steering=steering,
        dream=dream,
        thresholds=thresholds,
        meta_learning=meta_learning,
    )


def build_app(settings: Settings, *, registry: Registry | None = None, configure_logging: bool = True,
              ring: log.LogRing | None = None) -> App:
    """`ring`: the log ring logging was already configured with (deferred_app.py); else a new one, configured
    here unless `configure_logging` is False."""
    c = constitution()
    threadpool_limits(limits=int(c.get("server.blas_threads")), user_api="blas")  # for the whole process
    if ring is None:
        ring = log.LogRing(int(c.get("logging.ring_buffer_size")))
        if configure_logging:
            log.configure(settings.log_level, ring)
    registry = registry or build_registry(c, settings.profile)
    return App(build_services(settings, c, ring, frozenset(registry.specs)), registry)
