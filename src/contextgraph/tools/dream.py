"""Dream tools (docs/engine.md#dreams): start, watch and stop a consolidation cycle, and list the amortized
shortcuts. Thin handlers over services.dream; a dream runs in the background, so trigger_dream answers at once."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from contextgraph.tools.context import ToolContext
from contextgraph.tools.spec import Args, ToolSpec


class TriggerArgs(Args):
    phase: Literal["nrem", "rem", "full"] = Field("full", description="nrem: replay; rem: explore; full: both.")
    force: bool = Field(False, description="Dream even if activity is above 0.15.")


async def trigger_dream(ctx: ToolContext, args: TriggerArgs) -> dict[str, Any]:
    return await ctx.services.dream.trigger(args.phase, args.force)


class StatusArgs(Args):
    pass


async def get_dream_status(ctx: ToolContext, args: StatusArgs) -> dict[str, Any]:
    await ctx.services.storage.ready()  # the last reports are loaded with the store
    return ctx.services.dream.status()


class AbortArgs(Args):
    pass


async def abort_dream(ctx: ToolContext, args: AbortArgs) -> dict[str, Any]:
    return await ctx.services.dream.abort()


class ShortcutArgs(Args):
    min_confidence: float = Field(0.7, ge=0.0, le=1.0, allow_inf_nan=False,
                                  description="Skip shortcuts whose confidence is below this.")
    limit: int = Field(20, ge=1, le=100, description="Most shortcuts to return.")


async def get_amortized_shortcuts(ctx: ToolContext, args: ShortcutArgs) -> dict[str, Any]:
    await ctx.services.storage.ready()
    return await ctx.services.dream.shortcut_candidates(args.min_confidence, args.limit)


TOOLS = (
    ToolSpec(
        "trigger_dream",
        "dream",
        "Start a dream: NREM replays recent memories (Hebbian edge updates), REM links memories naming the same "
        "thing and blind spots. Runs in the background; any memory operation wakes it.",
        TriggerArgs,
        trigger_dream,
        keywords=("dream", "consolidate", "sleep", "replay", "nrem", "rem", "hebbian"),
    ),
    ToolSpec(
        "get_dream_status",
        "dream",
        "Get the dream cycle's state (Awake, NREM, REM, Waking), phase progress, activity level, time since the "
        "last dream and its report (edges strengthened, weakened and added). Reading it never wakes a dream.",
        StatusArgs,
        get_dream_status,
        keywords=("dream", "status", "progress", "sleep", "consolidation", "report"),
    ),
    ToolSpec(
        "abort_dream",
        "dream",
        "Stop the running dream now (within 100 ms): what it already committed stays. Returns the wake latency "
        "and the partial report.",
        AbortArgs,
        abort_dream,
        keywords=("dream", "abort", "wake", "stop", "cancel"),
    ),
    ToolSpec(
        "get_amortized_shortcuts",
        "dream",
        "List amortized shortcuts: graph paths of 3+ hops traversed 5+ times (by find_causal_path, "
        "get_neighborhood and dream walks), their direct-edge weight (product of the path's weights), confidence "
        "and whether a dream has added the edge.",
        ShortcutArgs,
        get_amortized_shortcuts,
        keywords=("shortcut", "amortized", "path", "traversal", "dream", "direct edge"),
    ),
)
