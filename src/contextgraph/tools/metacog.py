"""Meta-cognitive tools that need only the process: the agent's mental model and the log ring buffer.
(The memory-dependent ones — reflect_on_memory, critique_context, … — arrive with their issues.)"""

from __future__ import annotations

from importlib import resources
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from contextgraph.constitution import constitution
from contextgraph.tools.context import ToolContext
from contextgraph.tools.spec import Args, ToolSpec

_C = constitution()
if TYPE_CHECKING:  # values from the constitution
    Component = str
else:
    Component = Literal[("all", *_C.get("logging.components"))]


def system_instructions() -> str:
    return resources.files("contextgraph").joinpath("instructions.md").read_text(encoding="utf-8")


class InstructionsArgs(Args):
    pass


async def get_system_instructions(ctx: ToolContext, args: InstructionsArgs) -> dict[str, Any]:
    text = system_instructions()
    return {"instructions": text, "words": len(text.split()), "keep_in_context": True}


class LogsArgs(Args):
    level: Literal["error", "warn", "info", "debug"] = Field("info", description="Lowest level to return.")
    limit: int = Field(int(_C.get("logging.get_logs_default_limit")), ge=1,
                       le=int(_C.get("logging.get_logs_max_limit")), description="Most entries to return (the newest).")
    component: Component = Field("all", description="Only entries from this component.")


async def get_system_logs(ctx: ToolContext, args: LogsArgs) -> dict[str, Any]:
    ring = ctx.services.log_ring
    entries = ring.query(args.level, args.limit, args.component)
    return {
        "entries": entries,
        "count": len(entries),
        "buffered": len(ring),
        "filters": {"level": args.level, "limit": args.limit, "component": args.component},
    }


TOOLS = (
    ToolSpec(
        "get_system_instructions",
        "metacog",
        "Get the mental model of this memory server (~300 tokens): what a memory is, how to search and curate, "
        "and how to act on the cognitive pulse. Keep it in your context.",
        InstructionsArgs,
        get_system_instructions,
        keywords=("instructions", "guide", "how to use", "mental model", "onboarding"),
    ),
    ToolSpec(
        "get_system_logs",
        "metacog",
        "Get recent server log entries, newest last, filtered by level and component; for debugging questions "
        "like \"why don't you remember X?\" or an internal error's id.",
        LogsArgs,
        get_system_logs,
        keywords=("logs", "debug", "errors", "diagnose", "trace"),
    ),
)
