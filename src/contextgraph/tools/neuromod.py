"""Neuromodulation tools (docs/engine.md#neuromodulators): read the four modulators, adjust the three that may be
adjusted. Thin handlers over services.neuromodulation."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from contextgraph.tools.context import ToolContext
from contextgraph.tools.spec import Args, ToolSpec


class StateArgs(Args):
    pass


async def get_neuromodulation_state(ctx: ToolContext, args: StateArgs) -> dict[str, Any]:
    await ctx.services.storage.ready()  # the saved levels are loaded with the store
    return ctx.services.neuromodulation.state()


class AdjustArgs(Args):
    modulator: Literal["dopamine", "serotonin", "noradrenaline", "acetylcholine"] = Field(
        description="Which modulator; acetylcholine is read-only (the engine sets it).")
    delta: float = Field(ge=-5.0, le=5.0, allow_inf_nan=False,
                         description="Amount to add (negative lowers); the result is clamped to the bounds.")


async def adjust_neuromodulator(ctx: ToolContext, args: AdjustArgs) -> dict[str, Any]:
    storage = await ctx.services.storage.ready()
    neuromodulation = ctx.services.neuromodulation
    change = neuromodulation.adjust(args.modulator, args.delta)
    await storage.save_engine()  # the new level survives a restart
    bounds = neuromodulation.bounds[args.modulator]
    return {**change, "bounds": {"min": bounds.min, "max": bounds.max, "baseline": bounds.baseline},
            "controls": bounds.parameter, "half_life_seconds": bounds.half_life,
            "note": "levels decay back to their baselines with their half-lives"}


TOOLS = (
    ToolSpec(
        "get_neuromodulation_state",
        "neuromod",
        "Get the four neuromodulators (dopamine: retrieval sharpness beta 1-5, and memories you used rank higher; "
        "serotonin: space weights 0-1; noradrenaline: attention temperature 0.5-2, raised by weak searches, "
        "explores the first hits' links; acetylcholine: UTL learning rate, read-only) with level, bounds, "
        "baseline, effect now, what they did to the last search, and recent changes.",
        StateArgs,
        get_neuromodulation_state,
        keywords=("neuromodulation", "dopamine", "serotonin", "noradrenaline", "acetylcholine", "modulator"),
    ),
    ToolSpec(
        "adjust_neuromodulator",
        "neuromod",
        "Adjust dopamine, serotonin or noradrenaline by delta (clamped to its bounds); acetylcholine is read-only. "
        "Returns old and new level and what was applied.",
        AdjustArgs,
        adjust_neuromodulator,
        keywords=("adjust", "dopamine", "serotonin", "noradrenaline", "modulator", "tune", "sharpness"),
    ),
)
