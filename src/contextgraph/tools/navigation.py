"""Graph navigation and lookup tools. Thin handlers: one GraphService
call each. hydrate_citation and get_node_lineage belong to the metacog category and search_tombstones to
diagnostic (docs/tools.md#inventory); they live here because they read the same graph."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AwareDatetime, Field

from contextgraph.security.free_text import FREE_TEXT
from contextgraph.services.dreams.shortcuts import neighbourhood_paths
from contextgraph.storage.base import EDGE_TYPES
from contextgraph.tools.context import ToolContext
from contextgraph.tools.spec import Args, ToolSpec
from contextgraph.tools.validation import MemoryId

if TYPE_CHECKING:  # values from storage.base (see core.Modality)
    EdgeType = str
else:
    EdgeType = Literal[EDGE_TYPES]


def _ts(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


class NeighborhoodArgs(Args):
    node_id: MemoryId
    depth: int = Field(1, ge=1, le=3, description="Traversal depth (hops).")
    edge_types: list[EdgeType] | None = Field(None, max_length=len(EDGE_TYPES),
                                              description="Only edges of these types.")
    min_weight: float = Field(0.3, ge=0.0, le=1.0, description="Skip edges whose base weight is below this.")


async def get_neighborhood(ctx: ToolContext, args: NeighborhoodArgs) -> dict[str, Any]:
    out = await ctx.services.graph.neighborhood(args.node_id, args.depth, args.edge_types, args.min_weight)
    for path in neighbourhood_paths(out):  # traversals count towards amortized shortcuts (docs/engine.md)
        ctx.services.dream.record_traversal(path, "get_neighborhood")
    return out


class RecentArgs(Args):
    limit: int = Field(20, ge=1, le=100, description="Most memories to return.")
    since: AwareDatetime | None = Field(None, description="Only memories stored after this time (ISO 8601 with "
                                                          "a time zone).")
    session_only: bool = Field(False, description="Only memories of the caller's session.")


async def get_recent_context(ctx: ToolContext, args: RecentArgs) -> dict[str, Any]:
    return await ctx.services.graph.recent(args.limit, _ts(args.since), ctx.session if args.session_only else None)


class CausalPathArgs(Args):
    source_id: MemoryId
    target_id: MemoryId
    max_hops: int = Field(5, ge=1, le=10, description="Longest chain to consider.")
    direction: Literal["forward", "backward", "bidirectional"] = Field(
        "forward", description="forward follows cause → effect, backward effect → cause, bidirectional both.")


async def find_causal_path(ctx: ToolContext, args: CausalPathArgs) -> dict[str, Any]:
    out = await ctx.services.graph.causal_path(args.source_id, args.target_id, args.max_hops, args.direction)
    if out.get("found"):
        ctx.services.dream.record_traversal(list(out["path"]), "find_causal_path")
    return out


class EntailmentArgs(Args):
    node_id: MemoryId
    direction: Literal["ancestors", "descendants", "both"] = Field(
        "both", description="ancestors: cones containing the node; descendants: nodes inside its cone.")
    embedding_space: Literal["E1", "E5", "E7"] = Field("E1", description="Which space to query (typically E1 "
                                                                          "semantic).")
    max_results: int = Field(10, ge=1, le=50, description="Most ancestors and most descendants to return.")
    min_confidence: float = Field(0.0, ge=0.0, le=1.0, description="Skip memberships below this confidence "
                                                                   "(1 − angle / half-aperture).")


async def entailment_query(ctx: ToolContext, args: EntailmentArgs) -> dict[str, Any]:
    return await ctx.services.graph.entailment(args.node_id, args.direction, args.embedding_space, args.max_results,
                                          args.min_confidence)


class LineageArgs(Args):
    node_id: MemoryId


async def get_node_lineage(ctx: ToolContext, args: LineageArgs) -> dict[str, Any]:
    return await ctx.services.graph.lineage(args.node_id)


class HydrateArgs(Args):
    # The seed's pattern ^\[node_[a-f0-9]+\]$ is checked by the service, so a malformed tag is NODE_NOT_FOUND
    # (-32012, the error a missing node gets) rather than a schema error.
    citation_tag: str = Field(min_length=1, max_length=64, description="A citation tag like [node_3fa2b1] "
                                                                       "(a memory id or a unique prefix of it).")


async def hydrate_citation(ctx: ToolContext, args: HydrateArgs) -> dict[str, Any]:
    return await ctx.services.graph.hydrate(args.citation_tag)


class TombstoneArgs(Args):
    query: Annotated[str | None, FREE_TEXT] = Field(None, min_length=1, max_length=4096,
                                                    description="Words the deleted content should contain.")
    deleted_after: AwareDatetime | None = Field(None, description="Only nodes deleted after this time.")
    limit: int = Field(20, ge=1, le=100, description="Most tombstones to return.")


async def search_tombstones(ctx: ToolContext, args: TombstoneArgs) -> dict[str, Any]:
    return await ctx.services.graph.tombstones(args.query, _ts(args.deleted_after), args.limit)


TOOLS = (
    ToolSpec(
        "get_neighborhood",
        "navigation",
        "The memories connected to a node up to 3 hops away, each with the edge's type (Semantic, Temporal, "
        "Causal, Hierarchical, Relational), weight, effective weight, confidence and direction.",
        NeighborhoodArgs,
        get_neighborhood,
        keywords=("neighbors", "neighbours", "edges", "connected", "graph", "traverse"),
    ),
    ToolSpec(
        "get_recent_context",
        "navigation",
        "The most recently stored memories, newest first; optionally only since a time or only the caller's "
        "session.",
        RecentArgs,
        get_recent_context,
        keywords=("recent", "latest", "history", "session", "timeline"),
    ),
    ToolSpec(
        "find_causal_path",
        "navigation",
        "The shortest chain of Causal edges between two memories (forward, backward or both), hop by hop; reports "
        "cycle_detected with the walk up to the cycle, and an empty path when none exists.",
        CausalPathArgs,
        find_causal_path,
        keywords=("causal", "cause", "effect", "why", "chain", "path"),
    ),
    ToolSpec(
        "entailment_query",
        "navigation",
        "Hierarchy around a memory: its nearest memories mapped into a Poincaré ball (general ones near the "
        "origin); ancestors are those whose entailment cone contains it, descendants those inside its cone.",
        EntailmentArgs,
        entailment_query,
        keywords=("hierarchy", "ancestors", "descendants", "category", "hyperbolic", "entailment", "cone",
                  "parent", "child", "broader", "narrower"),
    ),
    ToolSpec(
        "hydrate_citation",
        "metacog",
        "Expand a citation tag like [node_3fa2b1] (a memory id or a unique prefix) to the memory's full content "
        "and metadata.",
        HydrateArgs,
        hydrate_citation,
        keywords=("citation", "cite", "expand", "hydrate", "reference", "source"),
    ),
    ToolSpec(
        "get_node_lineage",
        "metacog",
        "The history of a memory: creation, annotations, importance changes, merges, deletions and restores, "
        "oldest first.",
        LineageArgs,
        get_node_lineage,
        keywords=("lineage", "history", "provenance", "audit", "changes"),
    ),
    ToolSpec(
        "search_tombstones",
        "diagnostic",
        "Find soft-deleted memories still inside the 30-day recovery window, by words of their content or deletion "
        "time; each comes with the reversal_hash that restores it.",
        TombstoneArgs,
        search_tombstones,
        keywords=("tombstone", "deleted", "trash", "recover", "undo", "forgotten"),
    ),
)
