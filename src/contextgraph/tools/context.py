"""ToolContext: what a handler may touch: the services, the tool registry (for the discovery tools), the caller's
session, a way to run another tool through the dispatcher (tool_call), and the hooks the protocol layer provides
(tool-list notifications, progress)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from contextgraph.services.container import Services
from contextgraph.tools.registry import Registry


class ProgressReporter(Protocol):
    def __call__(self, progress: float, total: float | None = None,
                 message: str | None = None) -> Awaitable[None]: ...


# Runs a tool through every check of the dispatcher: (name, arguments, context) → (canonical name, payload).
RunTool = Callable[[Any, Any, "ToolContext"], Awaitable[tuple[str, dict[str, Any]]]]


async def no_notification() -> bool:
    return False


async def no_progress(progress: float, total: float | None = None, message: str | None = None) -> None:
    return None


@dataclass(frozen=True, slots=True)
class ToolContext:
    services: Services
    registry: Registry
    run_tool: RunTool
    session: str = "local"
    # Sends notifications/tools/list_changed in whichever protocol era the caller speaks; False when the
    # caller has no channel for it (the in-process CLI).
    notify_tools_changed: Callable[[], Awaitable[bool]] = field(default=no_notification)
    # Sends an MCP progress notification for the call being served (progress, total, message); a no-op when
    # the client sent no progressToken or has no channel for it.
    report_progress: ProgressReporter = field(default=no_progress)
    # False for a viewer that is not the agent (the dashboard): what it opens or searches is no evidence of what the
    # agent found relevant, so the dispatcher's argument observers (ATC's outcomes, dopamine's uses) do not hear it
    agent: bool = True

    async def call(self, name: str, arguments: Any) -> tuple[str, dict[str, Any]]:
        """Run another tool through the dispatcher's checks (D11's tool_call); returns (canonical, payload)."""
        return await self.run_tool(name, arguments, self)
