"""Causal tools (docs/engine.md#causal-inference): omni_infer and query_causal (its schema is
ours, in the same style). Thin handlers: one CausalInference call each."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from contextgraph.constitution import constitution
from contextgraph.security.free_text import FREE_TEXT
from contextgraph.services.introspection.causal_inference import CausalInference
from contextgraph.tools.context import ToolContext
from contextgraph.tools.spec import Args, ToolSpec
from contextgraph.tools.validation import NOT_BLANK, MemoryId

_V = constitution()["validation"]


def _inference(ctx: ToolContext) -> CausalInference:
    s = ctx.services
    return CausalInference(s.storage, s.perception, s.memory, s.constitution)


class OmniInferArgs(Args):
    source: MemoryId
    target: MemoryId | None = Field(None, description="Memory id; required for forward, backward and "
                                                      "bidirectional.")
    direction: Literal["forward", "backward", "bidirectional", "bridge", "abduction"] = Field(
        "forward", description="forward: source leads to target? backward: target causes source? bidirectional: "
                               "both; abduction: best explanations of source; bridge: its links into other topics.")


async def omni_infer(ctx: ToolContext, args: OmniInferArgs) -> dict[str, Any]:
    return await _inference(ctx).infer(args.source, args.target, args.direction)


class QueryCausalArgs(Args):
    query: Annotated[str, FREE_TEXT, NOT_BLANK] = Field(
        min_length=_V["query"]["min_length"], max_length=_V["query"]["max_length"],
        description="A 'why …?' or 'what happens if …?' question.")
    top_k: int = Field(5, ge=1, le=_V["top_k"]["max"], description="Most causes/effects to return.")
    spellings: ClassVar[dict[str, str]] = {"topK": "top_k"}


async def query_causal(ctx: ToolContext, args: QueryCausalArgs) -> dict[str, Any]:
    return await _inference(ctx).query(args.query, args.top_k)


TOOLS = (
    ToolSpec(
        "omni_infer",
        "causal",
        "Causal inference from a memory over Causal edges and E5 cause/effect similarity: forward, backward, "
        "bidirectional (need target), abduction (ranked explanations) or bridge (links into other topics). "
        "Returns found, path, confidence; cycles reported.",
        OmniInferArgs,
        omni_infer,
        keywords=("causal", "cause", "effect", "infer", "abduction", "explain", "why", "consequence", "bridge"),
    ),
    ToolSpec(
        "query_causal",
        "causal",
        "Answer a 'why …?' or 'what happens if …?' question from memory: anchors it by search, then follows causal "
        "chains backward (causes) or forward (effects), each answer with its path and confidence.",
        QueryCausalArgs,
        query_causal,
        keywords=("why", "cause", "effect", "what if", "consequence", "reason", "causal question"),
    ),
)
