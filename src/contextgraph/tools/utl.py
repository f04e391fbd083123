"""UTL tool (seed 003): compute_delta_sc, alias gwt/compute_delta_sc. The use case is services.vertex_update."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, model_validator

from contextgraph.constitution import constitution
from contextgraph.security.free_text import FREE_TEXT
from contextgraph.services import vertex_update
from contextgraph.tools.context import ToolContext
from contextgraph.tools.spec import Args, ToolSpec
from contextgraph.tools.validation import NOT_BLANK, MemoryId

_V = constitution()["validation"]
FINGERPRINT = ("A teleological fingerprint: an object with all 13 spaces E1..E13 (ARCH-05). dense = list of "
               "numbers, sparse = {indices, values}, binary = list of bytes, multivector = list of vectors; "
               "dimensions as get_graph_manifest reports them.")
CONTENT_BOUNDS = {"min_length": _V["content"]["min_length"], "max_length": _V["content"]["max_length"]}


class DeltaScArgs(Args):
    vertex_id: MemoryId = Field(description="Id of the stored memory being updated: a UUID, with or "
                                                     "without hyphens (memory ids are 32 hex characters).")
    new_fingerprint: dict[str, Any] | None = Field(None, description="The updated vertex's fingerprint. "
                                                   + FINGERPRINT)
    new_content: Annotated[str | None, FREE_TEXT, NOT_BLANK] = Field(
        None, **CONTENT_BOUNDS, description="The updated text, embedded here (instead of new_fingerprint).")
    old_fingerprint: dict[str, Any] | None = Field(None, description="The version before the update; defaults "
                                                   "to the stored fingerprint. " + FINGERPRINT)
    old_content: Annotated[str | None, FREE_TEXT, NOT_BLANK] = Field(
        None, **CONTENT_BOUNDS, description="The text before the update, embedded here (instead of old_fingerprint).")
    include_diagnostics: bool = Field(False, description="Add per-space connectivity, ClusterFit, consistency, "
                                                         "neighbour counts, edge weights and timings.")

    @model_validator(mode="after")
    def _one_new_version(self) -> DeltaScArgs:
        if (self.new_fingerprint is None) == (self.new_content is None):
            raise ValueError("give exactly one of new_fingerprint or new_content")
        if self.old_fingerprint is not None and self.old_content is not None:
            raise ValueError("give at most one of old_fingerprint or old_content")
        return self


async def compute_delta_sc(ctx: ToolContext, args: DeltaScArgs) -> dict[str, Any]:
    s = ctx.services
    return await vertex_update.compute(
        s.storage, s.perception, s.cognition, s.constitution, args.vertex_id, new_fingerprint=args.new_fingerprint,
        new_content=args.new_content, old_fingerprint=args.old_fingerprint, old_content=args.old_content,
        diagnostics=args.include_diagnostics)


TOOLS = (
    ToolSpec(
        "compute_delta_sc",
        "utl",
        "Compute the entropy (Delta-S) and coherence (Delta-C) of an update to a stored memory: per embedding "
        "space, with the method used, the aggregates, the Johari quadrant, and the change from the old version. "
        "Give the new version as content or as a full 13-space fingerprint. Read-only.",
        DeltaScArgs,
        compute_delta_sc,
        keywords=("delta", "entropy", "coherence", "surprise", "utl", "update", "johari"),
    ),
)
