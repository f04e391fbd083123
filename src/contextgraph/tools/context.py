"""ToolContext: what a handler may touch: the application's services, the caller's session, and the hooks the
protocol layer provides (tool-list notifications, the dispatcher for tool_call)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from contextgraph.app import App


async def _no_notification() -> bool:
    return False


async def _no_progress(progress: float, total: float | None = None, message: str | None = None) -> None:
    return None


@dataclass(frozen=True, slots=True)
class ToolContext:
    app: App
    session: str = "local"
    # Sends notifications/tools/list_changed in whichever protocol era the caller speaks; False when the
    # caller has no channel for it (the in-process CLI).
    notify_tools_changed: Callable[[], Awaitable[bool]] = field(default=_no_notification)
    # Sends an MCP progress notification for the call being served (progress, total, message); a no-op when
    # the client sent no progressToken or has no channel for it.
    report_progress: Callable[[float, float | None, str | None], Awaitable[None]] = field(default=_no_progress)

    async def call(self, name: str, arguments: Any) -> tuple[str, dict[str, Any]]:
        """Run another tool through the dispatcher's checks (D11's tool_call); returns (canonical, payload)."""
        return await self.app.dispatcher.run(name, arguments, self)
