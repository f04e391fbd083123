"""UTL tool (docs/utl.md): compute_delta_sc, alias gwt/compute_delta_sc. The use case is services.vertex_update."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, model_validator

from contextgraph.constitution import constitution
from contextgraph.security.free_text import FREE_TEXT
from contextgraph.services.feedback import vertex_update
from contextgraph.tools.context import ToolContext
from contextgraph.tools.spec import Args, ToolSpec
from contextgraph.tools.validation import NOT_BLANK, MemoryId

_V = constitution()["validation"]
FINGERPRINT = ("Object with all 13 spaces E1..E13: dense = numbers, sparse = {indices, values}, binary = bytes, "
               "multivector = vectors; dimensions per get_graph_manifest.")
CONTENT_BOUNDS = {"min_length": _V["content"]["min_length"], "max_length": _V["content"]["max_length"]}


class DeltaScArgs(Args):
    vertex_id: MemoryId = Field(description="Id of the stored memory being updated.")
    new_fingerprint: dict[str, Any] | None = Field(None, description="The new version's fingerprint. "
                                                   + FINGERPRINT)
    new_content: Annotated[str | None, FREE_TEXT, NOT_BLANK] = Field(
        None, **CONTENT_BOUNDS, description="The new text (instead of new_fingerprint).")
    old_fingerprint: dict[str, Any] | None = Field(None, description="The old version's fingerprint; defaults "
                                                   "to the stored one. Same shape as new_fingerprint.")
    old_content: Annotated[str | None, FREE_TEXT, NOT_BLANK] = Field(
        None, **CONTENT_BOUNDS, description="The old text (instead of old_fingerprint).")
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
        "Measure an update to a stored memory without applying it: entropy (Delta-S) and coherence (Delta-C) per "
        "embedding space and aggregated, with the Johari quadrant. Give the new version as new_content or "
        "new_fingerprint. Read-only.",
        DeltaScArgs,
        compute_delta_sc,
        keywords=("delta", "entropy", "coherence", "surprise", "utl", "update", "johari"),
    ),
)
