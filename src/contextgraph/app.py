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
from contextgraph.services.cognition import CognitiveState
from contextgraph.services.container import Services
from contextgraph.services.curation import CurationService
from contextgraph.services.graph import GraphService
from contextgraph.services.history import EngineHistory
from contextgraph.services.memory import MemoryService
from contextgraph.services.perception import Perception
from contextgraph.services.scratchpad import ScratchpadLimits, Scratchpads
from contextgraph.services.store_handle import StoreHandle
from contextgraph.services.workspace import WorkspaceService
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
        memory=MemoryService(storage, perception, c),
        curation=CurationService(storage, perception, c, clock),
        graph=GraphService(storage, c, clock),
        history=history,
    )


def build_app(settings: Settings, *, registry: Registry | None = None, configure_logging: bool = True) -> App:
    c = constitution()
    threadpool_limits(limits=int(c.get("server.blas_threads")), user_api="blas")  # for the whole process
    ring = log.LogRing(int(c.get("logging.ring_buffer_size")))
    if configure_logging:
        log.configure(settings.log_level, ring)
    registry = registry or build_registry(c, settings.profile)
    return App(build_services(settings, c, ring, frozenset(registry.specs)), registry)
