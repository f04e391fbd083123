"""Diagnostic tools: homeostatic_status, check_adversarial,
test_recall_accuracy, debug_compare_retrieval. (search_tombstones, also diagnostic, lives in navigation.py.)
Thin handlers: one service call each."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from contextgraph.constitution import constitution
from contextgraph.security.free_text import FREE_TEXT
from contextgraph.services.diagnostics.homeostasis import Homeostasis
from contextgraph.services.diagnostics.retrieval_diagnostics import RetrievalDiagnostics
from contextgraph.services.memory.adversarial import AdversarialChecks
from contextgraph.tools.context import ToolContext
from contextgraph.tools.spec import Args, ToolSpec
from contextgraph.tools.validation import NOT_BLANK, MemoryId

_V = constitution()["validation"]
Check = Literal["embedding_outlier", "content_misalign", "prompt_injection", "circular_logic"]


def _retrieval(ctx: ToolContext) -> RetrievalDiagnostics:
    s = ctx.services
    return RetrievalDiagnostics(s.storage, s.perception, s.memory)


class HomeostaticArgs(Args):
    pass


async def homeostatic_status(ctx: ToolContext, args: HomeostaticArgs) -> dict[str, Any]:
    return await Homeostasis(ctx.services.storage, ctx.services.constitution).status()


class AdversarialArgs(Args):
    # free text like every content argument: secrets are redacted before the check (the patterns do not look
    # for them, and a checked text must not leave one in the log)
    content: Annotated[str, FREE_TEXT] = Field(min_length=_V["content"]["min_length"],
                                               max_length=_V["content"]["max_length"],
                                               description="The text to check (not stored).")
    checks: list[Check] = Field(["embedding_outlier", "prompt_injection"], min_length=1, max_length=4,
                                description="Which checks to run.")


async def check_adversarial(ctx: ToolContext, args: AdversarialArgs) -> dict[str, Any]:
    s = ctx.services
    # the north star comes from the teleology service the memory service was given (None until one is wired)
    checker = AdversarialChecks(s.storage, s.perception, s.constitution, getattr(s.memory, "teleology", None))
    return await checker.check(args.content, list(dict.fromkeys(args.checks)))


class RecallArgs(Args):
    query: Annotated[str, FREE_TEXT, NOT_BLANK] = Field(min_length=_V["query"]["min_length"],
                                                        max_length=_V["query"]["max_length"],
                                                        description="The query to test.")
    expected_node_ids: list[MemoryId] = Field(min_length=1, max_length=100,
                                              description="The memories a good answer contains.")
    top_k: int = Field(10, ge=_V["top_k"]["min"], le=_V["top_k"]["max"], description="How many results to score.")
    spellings: ClassVar[dict[str, str]] = {"topK": "top_k"}


async def test_recall_accuracy(ctx: ToolContext, args: RecallArgs) -> dict[str, Any]:
    return await _retrieval(ctx).recall_accuracy(args.query, list(dict.fromkeys(args.expected_node_ids)), args.top_k)


class CompareArgs(Args):
    query: Annotated[str, FREE_TEXT, NOT_BLANK] = Field(min_length=_V["query"]["min_length"],
                                                        max_length=_V["query"]["max_length"],
                                                        description="The query to compare.")
    spaces: list[Literal["E1", "E5", "E7", "E13"]] = Field(min_length=1, max_length=4,
                                                           description="Spaces to rank in alone, beside the pipeline.")
    top_k: int = Field(10, ge=_V["top_k"]["min"], le=_V["top_k"]["max"], description="Results per ranking.")
    spellings: ClassVar[dict[str, str]] = {"topK": "top_k"}


async def debug_compare_retrieval(ctx: ToolContext, args: CompareArgs) -> dict[str, Any]:
    return await _retrieval(ctx).compare(args.query, list(dict.fromkeys(args.spaces)), args.top_k)


TOOLS = (
    ToolSpec(
        "homeostatic_status",
        "diagnostic",
        "Health of the memory's balance: the importance distribution and the scaling that would recentre it, "
        "semantic-cancer detections (important but unlike its neighbours) and the quarantine list of flagged "
        "memories.",
        HomeostaticArgs,
        homeostatic_status,
        keywords=("homeostasis", "importance", "semantic cancer", "quarantine", "health", "balance"),
    ),
    ToolSpec(
        "check_adversarial",
        "diagnostic",
        "Check text for prompt injection (incl. hidden unicode tricks), embedding outliers (> 3 SD from the store), "
        "misalignment with the north star and causal cycles it would close; returns flagged and findings.",
        AdversarialArgs,
        check_adversarial,
        keywords=("adversarial", "injection", "jailbreak", "outlier", "security", "suspicious", "poison"),
    ),
    ToolSpec(
        "test_recall_accuracy",
        "diagnostic",
        "Score retrieval for a query against the memories it should find: precision, recall, F1, missing_expected "
        "and unexpected_results of the live pipeline and of each space alone.",
        RecallArgs,
        test_recall_accuracy,
        keywords=("recall", "precision", "f1", "accuracy", "evaluate", "retrieval quality", "test"),
    ),
    ToolSpec(
        "debug_compare_retrieval",
        "diagnostic",
        "A query's ranking in each named space (E1, E5, E7, E13) alone beside the full pipeline's, with per-stage "
        "timings, per-space ranks and how fusion moved each result.",
        CompareArgs,
        debug_compare_retrieval,
        keywords=("debug", "compare", "ranking", "spaces", "retrieval", "why not found", "stages"),
    ),
)
