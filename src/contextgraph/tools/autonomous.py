"""Autonomous tools (docs/engine.md): the emergent north star, drift and its correction, pruning candidates,
consolidation and sub-goals, and their status. Everything that would change memories is a dry run unless
`execute: true`, bounded per call, and undoable (restore_from_hash for merges; revert_to for a star)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from contextgraph.constitution import constitution
from contextgraph.services.purpose.autonomous_status import autonomous_status
from contextgraph.tools.context import ToolContext
from contextgraph.tools.spec import Args, ToolSpec

_C = constitution()["autonomous"]["consolidation"]
Timeframe = Literal["1h", "24h", "7d", "30d"]


class BootstrapArgs(Args):
    confidence_threshold: float = Field(0.7, ge=0.0, le=1.0, description="Least stability of the dominant theme "
                                                                         "(0-1) for it to become the north star.")
    max_candidates: int = Field(10, ge=1, le=100, description="How many cluster counts k to evaluate (k = 2..1+n).")


async def auto_bootstrap_north_star(ctx: ToolContext, args: BootstrapArgs) -> dict[str, Any]:
    return await ctx.services.purpose.autonomous.bootstrap(args.confidence_threshold, args.max_candidates)


class DriftArgs(Args):
    timeframe: Timeframe = Field("24h", description="Window of recent memories to measure drift over.")
    include_history: bool = Field(False, description="Add the north star history.")


async def get_alignment_drift(ctx: ToolContext, args: DriftArgs) -> dict[str, Any]:
    return await ctx.services.purpose.autonomous.drift(args.timeframe, args.include_history)


class CorrectionArgs(Args):
    force: bool = Field(False, description="Correct low drift too.")
    target_alignment: float | None = Field(None, ge=0.0, le=1.0,
                                           description="Recent mean alignment to reach.")
    execute: bool = Field(False, description="Apply; false is a dry run.")
    timeframe: Timeframe = Field("24h", )
    revert_to: str | None = Field(None, min_length=1, max_length=64,
                                  description="Put this earlier star back.")


async def trigger_drift_correction(ctx: ToolContext, args: CorrectionArgs) -> dict[str, Any]:
    return await ctx.services.purpose.autonomous.correct(force=args.force, target_alignment=args.target_alignment,
                                                         execute=args.execute, timeframe=args.timeframe,
                                                         revert_to=args.revert_to)


class PruningArgs(Args):
    limit: int = Field(20, ge=1, le=1000, description="Most candidates to return.")
    min_staleness_days: int = Field(30, ge=0, le=36500, description="Age and idle days for a memory to be stale.")
    min_alignment: float = Field(0.4, ge=0.0, le=1.0, description="Memories less aligned than this are candidates.")


async def get_pruning_candidates(ctx: ToolContext, args: PruningArgs) -> dict[str, Any]:
    return await ctx.services.purpose.hygiene.pruning_candidates(args.limit, args.min_staleness_days,
                                                                 args.min_alignment)


class ConsolidationArgs(Args):
    max_memories: int = Field(int(_C["default_max_memories"]), ge=1, le=10000,
                              description="Newest memories examined.")
    strategy: Literal["similarity", "temporal", "semantic"] = Field(
        "similarity", description="E1 cosine; temporal: also close in time; semantic: mean of E1/E5/E7/E12.")
    min_similarity: float = Field(0.85, ge=0.5, le=1.0, )
    max_merges: int = Field(int(_C["max_merges_default"]), ge=1, le=int(_C["max_merges_max"]),
)
    execute: bool = Field(False, description="Merge; false is a dry run.")
    merge_strategy: Literal["keep_highest", "summarize", "concatenate"] = Field(
        "keep_highest")


async def trigger_consolidation(ctx: ToolContext, args: ConsolidationArgs) -> dict[str, Any]:
    return await ctx.services.purpose.hygiene.consolidate(
        max_memories=args.max_memories, strategy=args.strategy, min_similarity=args.min_similarity,
        max_merges=args.max_merges, execute=args.execute, merge_strategy=args.merge_strategy)


class SubGoalArgs(Args):
    min_confidence: float = Field(0.5, ge=0.0, le=1.0, description="Least confidence of a sub-goal (0-1).")
    max_goals: int = Field(5, ge=1, le=20, description="Most sub-goals to return.")
    parent_goal_id: str | None = Field(None, min_length=1, max_length=64,
                                       description="Discover within this goal (a sub-goal id); default: the store.")


async def discover_sub_goals(ctx: ToolContext, args: SubGoalArgs) -> dict[str, Any]:
    return await ctx.services.purpose.hygiene.sub_goals(args.min_confidence, args.max_goals, args.parent_goal_id)


class StatusArgs(Args):
    include_metrics: bool = Field(False, description="Add each service's last result.")
    include_history: bool = Field(False, description="Add recent autonomous operations.")
    history_count: int = Field(10, ge=1, le=100, description="How many operations (1-100).")


async def get_autonomous_status(ctx: ToolContext, args: StatusArgs) -> dict[str, Any]:
    return await autonomous_status(ctx.services.purpose.autonomous, args.include_metrics, args.include_history,
                                   args.history_count)


TOOLS = (
    ToolSpec(
        "auto_bootstrap_north_star",
        "autonomous",
        "Derive the north star from the stored memories: the dominant theme (k-means over E1) becomes the goal "
        "every memory's alignment is measured against, and retrieval stage 4 turns on. Refused below 20 memories.",
        BootstrapArgs,
        auto_bootstrap_north_star,
        keywords=("north", "star", "goal", "bootstrap", "purpose", "theme", "alignment"),
    ),
    ToolSpec(
        "get_alignment_drift",
        "autonomous",
        "How recent memories' alignment to the north star moves over time: mean per window, trend, severity, "
        "the memories that drive it, and a recommendation.",
        DriftArgs,
        get_alignment_drift,
        keywords=("drift", "alignment", "trend", "goal", "north", "star"),
    ),
    ToolSpec(
        "trigger_drift_correction",
        "autonomous",
        "Correct drift from the north star: reinforce it toward recent work or re-bootstrap it. Dry run unless "
        "execute=true; revert_to puts an earlier star back.",
        CorrectionArgs,
        trigger_drift_correction,
        keywords=("drift", "correction", "realign", "north", "star", "revert"),
    ),
    ToolSpec(
        "get_pruning_candidates",
        "autonomous",
        "List memories worth pruning (stale, low alignment, redundant, orphaned), each with its reasons and "
        "scores. Changes nothing.",
        PruningArgs,
        get_pruning_candidates,
        keywords=("prune", "stale", "orphan", "redundant", "cleanup", "hygiene"),
    ),
    ToolSpec(
        "trigger_consolidation",
        "autonomous",
        "Find near-duplicate memory pairs and merge them (dry run by default: lists the pairs; execute=true merges "
        "through merge_concepts, each undoable with restore_from_hash).",
        ConsolidationArgs,
        trigger_consolidation,
        keywords=("consolidate", "duplicate", "merge", "dedupe", "compact", "dream"),
    ),
    ToolSpec(
        "discover_sub_goals",
        "autonomous",
        "Discover the themes in the stored memories: clusters labelled by their most characteristic terms, each "
        "with its size, coherence and member ids.",
        SubGoalArgs,
        discover_sub_goals,
        keywords=("goals", "themes", "topics", "clusters", "discover", "subgoals"),
    ),
    ToolSpec(
        "get_autonomous_status",
        "autonomous",
        "Status of the autonomous services (north star, drift, correction, pruning, consolidation, sub-goals), "
        "overall health and recommended next actions.",
        StatusArgs,
        get_autonomous_status,
        keywords=("autonomous", "status", "health", "north", "star", "services"),
    ),
)
