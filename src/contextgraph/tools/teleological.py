"""Teleological tools (docs/engine.md): purpose vectors against the emergent north star, profiles, the synergy
matrix and fusion. Thin handlers over services.teleology_profiles / teleology_search."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from contextgraph.constitution import constitution
from contextgraph.security.free_text import FREE_TEXT
from contextgraph.tools.context import ToolContext
from contextgraph.tools.spec import Args, ToolSpec
from contextgraph.tools.validation import NOT_BLANK, MemoryId

_V = constitution()["validation"]
Group = Literal["factual", "temporal", "causal", "relational", "qualitative", "implementation"]
Weight = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
Weights13 = Annotated[list[Weight], Field(min_length=13, max_length=13)]
ProfileId = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")]


class SearchTeleologicalArgs(Args):
    query_content: Annotated[str | None, FREE_TEXT, NOT_BLANK] = Field(
        None, min_length=1, max_length=_V["query"]["max_length"], description="Text to search with.")
    query_vector_id: MemoryId | None = Field(None, description="Or a stored memory's id.")
    strategy: Literal["cosine", "euclidean", "synergy_weighted", "group_hierarchical", "cross_correlation_dominant",
                      "tucker_compressed", "adaptive"] = Field("adaptive")
    scope: Literal["full", "purpose_vector_only", "cross_correlations_only", "group_alignments_only"] = Field(
        "full")
    specific_groups: list[Group] | None = Field(None, max_length=6, description="Only these groups' spaces.")
    specific_embedder: int | None = Field(None, ge=0, le=12, description="One space only (0 = E1).")
    weight_purpose: float = Field(0.4, ge=0.0, le=1.0)
    weight_correlations: float = Field(0.35, ge=0.0, le=1.0)
    weight_groups: float = Field(0.15, ge=0.0, le=1.0)
    min_similarity: float = Field(0.3, ge=0.0, le=1.0)
    max_results: int = Field(20, ge=1, le=1000)
    include_breakdown: bool = Field(True, description="Each component's similarity per result.")


async def search_teleological(ctx: ToolContext, args: SearchTeleologicalArgs) -> dict[str, Any]:
    return await ctx.services.purpose.search.search(
        query_content=args.query_content, query_vector_id=args.query_vector_id, strategy=args.strategy,
        scope=args.scope,
        specific_groups=None if args.specific_groups is None else [str(g) for g in args.specific_groups],
        specific_embedder=args.specific_embedder,
        weights={"purpose": args.weight_purpose, "correlations": args.weight_correlations,
                 "groups": args.weight_groups},
        min_similarity=args.min_similarity, max_results=args.max_results, include_breakdown=args.include_breakdown)


class ComputeVectorArgs(Args):
    content: Annotated[str, FREE_TEXT, NOT_BLANK] = Field(min_length=_V["content"]["min_length"],
                                                          max_length=_V["content"]["max_length"],
                                                          description="Text (embedded, not stored).")
    profile_id: ProfileId | None = Field(None, description="Profile weighting the alignment.")
    compute_tucker: bool = Field(False, description="Add a HOSVD of its neighbourhood.")
    tucker_ranks: Annotated[list[Annotated[int, Field(ge=1, le=128)]], Field(min_length=3, max_length=3)] = Field(
        [4, 4, 16], description="[memories, spaces, features].")
    include_per_embedder: bool = Field(False, description="Raw per-space vectors (large).")


async def compute_teleological_vector(ctx: ToolContext, args: ComputeVectorArgs) -> dict[str, Any]:
    return await ctx.services.purpose.search.compute(args.content, args.profile_id, args.compute_tucker,
                                                     args.tucker_ranks, args.include_per_embedder)


class FuseArgs(Args):
    memory_id: MemoryId = Field(description="The memory whose embeddings to fuse.")
    fusion_method: Literal["linear", "attention", "gated", "hierarchical"] = Field(
        "hierarchical", description="attention/gated weigh by alignment to the north star.")
    profile_id: ProfileId | None = Field(None, description="Profile to fuse by.")
    custom_weights: Weights13 | None = Field(None, description="E1..E13 weights.")
    apply_synergy: bool = Field(True, description="Reweight by the synergy matrix.")
    store_result: bool = Field(True, description="Keep the vector.")


async def fuse_embeddings(ctx: ToolContext, args: FuseArgs) -> dict[str, Any]:
    return await ctx.services.purpose.profiles.fuse(args.memory_id, args.fusion_method, args.profile_id,
                                                    args.custom_weights, args.apply_synergy, args.store_result)


class SynergyArgs(Args):
    query_vector_id: MemoryId = Field(description="Query memory id.")
    result_vector_id: MemoryId = Field(description="Result memory id.")
    feedback: Literal["relevant", "not_relevant", "partially_relevant"] = Field()
    relevance_score: float | None = Field(None, ge=0.0, le=1.0, description="Overrides feedback.")
    learning_rate: float = Field(0.01, ge=0.001, le=0.5, )
    update_scope: Literal["all_pairs", "high_synergy_only", "contributing_pairs"] = Field(
        "contributing_pairs")


async def update_synergy_matrix(ctx: ToolContext, args: SynergyArgs) -> dict[str, Any]:
    return await ctx.services.purpose.profiles.update_synergy(args.query_vector_id, args.result_vector_id,
                                                              args.feedback, args.relevance_score,
                                                              args.learning_rate, args.update_scope)


class GroupPriorities(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    factual: Weight | None = None
    temporal: Weight | None = None
    causal: Weight | None = None
    relational: Weight | None = None
    qualitative: Weight | None = None
    implementation: Weight | None = None


class ProfileArgs(Args):
    action: Literal["create", "read", "update", "delete", "list"]
    profile_id: ProfileId | None = Field(None, description="Needed for read/update/delete.")
    name: Annotated[str | None, FREE_TEXT, NOT_BLANK] = Field(None, min_length=1, max_length=128)
    task_type: Literal["code_implementation", "research", "creative", "analysis", "debugging", "documentation",
                       "custom"] | None = Field(None, description="Preset weights.")
    embedder_weights: Weights13 | None = Field(None, description="E1..E13 weights.")
    group_priorities: GroupPriorities | None = None
    fusion_strategy: Literal["linear", "attention", "gated", "hierarchical"] | None = Field(
        None)


async def manage_teleological_profile(ctx: ToolContext, args: ProfileArgs) -> dict[str, Any]:
    fields = args.model_dump(exclude={"action", "profile_id"}, exclude_none=True)
    return await ctx.services.purpose.profiles.manage(args.action, args.profile_id, fields)


TOOLS = (
    ToolSpec(
        "search_teleological",
        "teleological",
        "Search memories by purpose: purpose vectors (alignment to the north star per space), their 78 "
        "cross-correlations and 6 group alignments. Needs a north star.",
        SearchTeleologicalArgs,
        search_teleological,
        keywords=("purpose", "teleological", "search", "alignment", "north", "star", "correlation"),
    ),
    ToolSpec(
        "compute_teleological_vector",
        "teleological",
        "Compute a text's teleological vector without storing it: purpose vector (13), cross-correlations (78), "
        "group alignments (6), optionally a Tucker/HOSVD of its neighbourhood.",
        ComputeVectorArgs,
        compute_teleological_vector,
        keywords=("purpose", "vector", "teleological", "tucker", "alignment", "compute"),
    ),
    ToolSpec(
        "fuse_embeddings",
        "teleological",
        "Fuse a memory's 13 embeddings into one vector by a profile's weights (linear, hierarchical, attention or "
        "gated), optionally reweighted by the learned synergy matrix.",
        FuseArgs,
        fuse_embeddings,
        keywords=("fuse", "fusion", "embedding", "profile", "synergy", "weights"),
    ),
    ToolSpec(
        "update_synergy_matrix",
        "teleological",
        "Teach the 13x13 synergy matrix from retrieval feedback: how relevant results are when pairs of spaces "
        "agree. Fusion and synergy_weighted search read it.",
        SynergyArgs,
        update_synergy_matrix,
        keywords=("synergy", "feedback", "relevance", "learn", "matrix"),
    ),
    ToolSpec(
        "manage_teleological_profile",
        "teleological",
        "Create, read, update, delete or list teleological profiles: named per-space weights, group priorities "
        "and a default fusion method.",
        ProfileArgs,
        manage_teleological_profile,
        keywords=("profile", "weights", "teleological", "crud", "task"),
    ),
)
