"""Steering tool (docs/engine.md#steering): the reward of the last stores and what would raise it. Thin handler
over services.steering."""

from __future__ import annotations

from typing import Any

from contextgraph.tools.context import ToolContext
from contextgraph.tools.spec import Args, ToolSpec


class FeedbackArgs(Args):
    pass


async def get_steering_feedback(ctx: ToolContext, args: FeedbackArgs) -> dict[str, Any]:
    return ctx.services.steering.feedback()


TOOLS = (
    ToolSpec(
        "get_steering_feedback",
        "steering",
        "Get the steering reward (-1 to 1) of the last stored memory with its Gardener (graph health), Curator "
        "(rationale, duplicates, priors) and Assessor (novelty/coherence for the lifecycle stage) components, "
        "recent rewards, and what would raise them.",
        FeedbackArgs,
        get_steering_feedback,
        keywords=("steering", "reward", "feedback", "gardener", "curator", "assessor", "quality"),
    ),
)
