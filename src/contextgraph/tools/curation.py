"""Curation tools (docs/tools.md#curation): merge, annotate, forget, boost, restore. Thin handlers: one CurationService
call each. Every change is undoable for 30 days where the design says so, and appends to the node's lineage."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from contextgraph.constitution import constitution
from contextgraph.security.free_text import FREE_TEXT
from contextgraph.tools.context import ToolContext
from contextgraph.tools.spec import Args, ToolSpec
from contextgraph.tools.validation import MAX_CONCEPTS, MAX_TAGS, NOT_BLANK, Concept, MemoryId, Tag

_V = constitution()["validation"]
Rationale = Field(min_length=_V["rationale"]["min_length"], max_length=_V["rationale"]["max_length"],
                  description="Why (10-1000 characters); kept in the node's lineage.")
Domain = Literal["Code", "Medical", "Legal", "Creative", "Research", "General"]


class MergeArgs(Args):
    source_node_ids: list[MemoryId] = Field(min_length=2, max_length=32, description="Ids of the memories to merge.")
    target_name: Annotated[str, FREE_TEXT, NOT_BLANK] = Field(min_length=1, max_length=256,
                                                   description="Name for the merged node.")
    merge_strategy: Literal["summarize", "keep_highest", "concatenate"] = Field(
        "summarize", description="summarize: their distinct sentences; keep_highest: the most important one's "
                                 "content; concatenate: all joined.")
    rationale: Annotated[str, FREE_TEXT] = Rationale
    force_merge: bool = Field(False, description="Link dissimilar nodes with Relational edges instead of failing.")


async def merge_concepts(ctx: ToolContext, args: MergeArgs) -> dict[str, Any]:
    return await ctx.services.curation.merge(args.source_node_ids, target_name=args.target_name,
                                        strategy=args.merge_strategy, rationale=args.rationale,
                                        force=args.force_merge)


class Annotations(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    tags: Annotated[list[Tag] | None, FREE_TEXT] = Field(None, max_length=MAX_TAGS, description="Labels to add.")
    domain: Domain | None = Field(None, description="The knowledge domain.")
    confidence: float | None = Field(None, ge=0.0, le=1.0, description="How sure the content is, 0-1.")
    notes: Annotated[str | None, FREE_TEXT] = Field(None, max_length=2000, description="Free-text notes.")
    related_concepts: Annotated[list[Concept] | None, FREE_TEXT] = Field(
        None, max_length=MAX_CONCEPTS, description="Related concepts; a memory id here also gets a Relational edge.")


class AnnotateArgs(Args):
    node_id: MemoryId
    annotations: Annotations = Field(description="Metadata to attach; embeddings are not touched.")


async def annotate_node(ctx: ToolContext, args: AnnotateArgs) -> dict[str, Any]:
    return await ctx.services.curation.annotate(args.node_id, args.annotations.model_dump(exclude_none=True))


class ForgetArgs(Args):
    node_id: MemoryId
    soft_delete: bool = Field(True, description="Soft delete keeps a tombstone for 30-day recovery; false deletes "
                                                "permanently and needs reason=user_requested.")
    reason: Literal["obsolete", "duplicate", "incorrect", "user_requested", "semantic_cancer"] = Field(
        description="Why the memory goes.")
    rationale: Annotated[str, FREE_TEXT] = Rationale


async def forget_concept(ctx: ToolContext, args: ForgetArgs) -> dict[str, Any]:
    return await ctx.services.curation.forget(args.node_id, reason=args.reason, soft=args.soft_delete,
                                         rationale=args.rationale)


class BoostArgs(Args):
    node_id: MemoryId
    delta: float = Field(ge=_V["boost_delta"]["min"], le=_V["boost_delta"]["max"],
                         description="Importance change in [-0.5, 0.5]; the result is clamped to [0, 1].")
    rationale: Annotated[str, FREE_TEXT] = Rationale


async def boost_importance(ctx: ToolContext, args: BoostArgs) -> dict[str, Any]:
    return await ctx.services.curation.boost(args.node_id, args.delta, args.rationale)


class RestoreArgs(Args):
    reversal_hash: str = Field(min_length=1, max_length=128,
                               description="The reversal_hash a forget_concept or merge_concepts returned.")


async def restore_from_hash(ctx: ToolContext, args: RestoreArgs) -> dict[str, Any]:
    return await ctx.services.curation.restore(args.reversal_hash)


TOOLS = (
    ToolSpec(
        "merge_concepts",
        "curation",
        "Merge near-duplicate memories into one node that inherits their edges; the returned reversal_hash undoes "
        "it for 30 days. Dissimilar nodes (E1 cosine < 0.7) are refused unless force_merge, which links them.",
        MergeArgs,
        merge_concepts,
        keywords=("merge", "dedupe", "duplicate", "combine", "consolidate", "curate"),
    ),
    ToolSpec(
        "annotate_node",
        "curation",
        "Attach metadata to a memory: tags, domain, confidence, notes and related concepts. Embeddings are not "
        "changed; the change is recorded in the node's lineage.",
        AnnotateArgs,
        annotate_node,
        keywords=("annotate", "tag", "label", "metadata", "note", "domain"),
    ),
    ToolSpec(
        "forget_concept",
        "curation",
        "Delete a memory. Soft delete (default) keeps a tombstone with its exact state and edges for 30 days and "
        "returns a reversal_hash for restore_from_hash; a permanent delete needs reason=user_requested.",
        ForgetArgs,
        forget_concept,
        keywords=("forget", "delete", "remove", "tombstone", "obsolete", "purge"),
    ),
    ToolSpec(
        "boost_importance",
        "curation",
        "Raise or lower a memory's importance by a delta in [-0.5, 0.5] (result clamped to [0, 1]). Refused with "
        "SEMANTIC_CANCER_DETECTED when it would make an isolated memory dominant.",
        BoostArgs,
        boost_importance,
        keywords=("importance", "boost", "priority", "weight", "promote", "demote"),
    ),
    ToolSpec(
        "restore_from_hash",
        "curation",
        "Undo a forget_concept or merge_concepts within 30 days: the memories come back exactly as they were "
        "(content, embeddings, edges) and are searchable again; a merged node is removed.",
        RestoreArgs,
        restore_from_hash,
        keywords=("restore", "undo", "undelete", "recover", "tombstone", "reversal"),
    ),
)
