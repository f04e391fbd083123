"""Composition root: builds the services, the tool registry and the dispatcher once and hands them down.
Nothing here imports mcp, so the CLI's in-process paths and the tests can build an App without paying for the
SDK. Only the entry points (cli, server, transports, shell) import this module."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from threadpoolctl import threadpool_limits

from contextgraph import log
from contextgraph.clock import Clock
from contextgraph.config import Settings
from contextgraph.constitution import Constitution, constitution
from contextgraph.services.container import Services
from contextgraph.services.dreams.dream import DOCUMENT as DREAM_DOCUMENT
from contextgraph.services.dreams.dream import DreamService
from contextgraph.services.engine.activity import ActivityMonitor
from contextgraph.services.engine.cognition import CognitiveState
from contextgraph.services.engine.history import EngineHistory
from contextgraph.services.engine.neuromodulation import DOCUMENT as NEUROMODULATION_DOCUMENT
from contextgraph.services.engine.neuromodulation import NeuromodulationService
from contextgraph.services.engine.workspace import WorkspaceService
from contextgraph.services.feedback.calibration_wiring import attach_calibration, on_results, on_store, on_tool_call
from contextgraph.services.feedback.steering import SteeringService
from contextgraph.services.memory.curation import CurationService
from contextgraph.services.memory.graph import GraphService
from contextgraph.services.memory.memory import MemoryService
from contextgraph.services.memory.scratchpad import ScratchpadLimits, Scratchpads
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
    workspace = WorkspaceService(c, cognition)
    clock = Clock()
    history = EngineHistory(c, cognition)
    storage = StoreHandle(settings, c, cognition, workspace, history)  # opens the store lazily
    perception = Perception(settings, c, storage)  # loads the model lazily, in the background
    memory = MemoryService(storage, perception, c)
    # neuromodulation, steering and dreams, wired to the events that move them (docs/engine.md)
    activity = ActivityMonitor(c)
    neuromodulation = NeuromodulationService(c)
    workspace.on_enter = neuromodulation.workspace_enter
    cognition.request_listeners.append(neuromodulation.meta_low)
    memory.modulation = neuromodulation.modulation
    memory.after_search.append(lambda found: None if found else neuromodulation.empty_search())
    steering = SteeringService(c, storage, neuromodulation)
    memory.after_store.append(steering.on_store)
    dream = DreamService(c, storage, workspace, cognition, activity, auto=bool(settings.auto_dream))
    cognition.request_listeners.append(dream.on_request)
    cognition.consolidation_phase = dream.phase_description
    storage.parts.update({NEUROMODULATION_DOCUMENT: neuromodulation, DREAM_DOCUMENT: dream})
    curation = CurationService(storage, perception, c, clock)
    # ATC and Meta-UTL: the engine reads its thresholds and λ from them; outcomes and predictions feed them
    calibration = attach_calibration(c, storage, workspace, curation,
                                     acetylcholine=lambda: neuromodulation.level("acetylcholine"))
    memory.after_store.append(on_store(calibration.meta_learning, storage))
    memory.after_results.append(on_results(calibration.thresholds, workspace))
    purpose = PurposeServices.build(storage, cognition, perception, curation, c, clock)
    memory.teleology = purpose.teleology  # purpose vectors on store, stage 4 on search
    # stage 4's alignment floor is ATC's θ_warn (prior 0.55 = retrieval.alignment_floor), learned from use
    purpose.teleology.threshold_source = lambda: calibration.thresholds.value("theta_warn")
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
        thresholds=calibration.thresholds,
        meta_learning=calibration.meta_learning,
    )


def build_app(settings: Settings, *, registry: Registry | None = None, configure_logging: bool = True) -> App:
    c = constitution()
    threadpool_limits(limits=int(c.get("server.blas_threads")), user_api="blas")  # for the whole process
    ring = log.LogRing(int(c.get("logging.ring_buffer_size")))
    if configure_logging:
        log.configure(settings.log_level, ring)
    registry = registry or build_registry(c, settings.profile)
    return App(build_services(settings, c, ring, frozenset(registry.specs)), registry)
