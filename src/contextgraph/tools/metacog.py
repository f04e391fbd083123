"""Meta-cognitive tools: the agent's mental model (with the user manifest's standing instructions), the log ring
buffer, and reflection over the memory (reflect_on_memory, generate_search_plan,
critique_context; services.reflection and services.critique). hydrate_citation and get_node_lineage, also
meta-cognitive, live in navigation.py."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

from contextgraph.constitution import constitution
from contextgraph.instructions import system_instructions
from contextgraph.security.free_text import FREE_TEXT
from contextgraph.services.diagnostics.user_manifest import DOC as MANIFEST_DOC
from contextgraph.services.introspection.critique import Critique
from contextgraph.services.introspection.reflection import Reflection
from contextgraph.tools.context import ToolContext
from contextgraph.tools.spec import Args, ToolSpec

_C = constitution()
if TYPE_CHECKING:  # values from the constitution
    Component = str
else:
    Component = Literal[("all", *_C.get("logging.components"))]


class InstructionsArgs(Args):
    pass


async def get_system_instructions(ctx: ToolContext, args: InstructionsArgs) -> dict[str, Any]:
    text = system_instructions()
    storage = await ctx.services.storage.ready()
    doc = storage.store.get_document(MANIFEST_DOC)  # the user manifest in force (reload_manifest, docs/tools.md)
    payload: dict[str, Any] = {"instructions": text, "words": len(text.split()), "keep_in_context": True}
    manifest = (doc or {}).get("manifest") or {}
    if any(manifest.get(k) for k in ("instructions", "domains", "preferences")):
        lines = ["", "## The user's manifest"] + [f"- {line}" for line in manifest.get("instructions") or []]
        if manifest.get("domains"):
            lines.append(f"- Domains: {', '.join(manifest['domains'])}")
        lines += [f"- Preference {k}: {v}" for k, v in (manifest.get("preferences") or {}).items()]
        payload["instructions"] = text.rstrip() + "\n" + "\n".join(lines) + "\n"
        payload["words"] = len(payload["instructions"].split())
        payload["manifest"] = {"path": doc.get("path") if doc else None, **manifest}
    return payload


class LogsArgs(Args):
    level: Literal["error", "warn", "info", "debug"] = Field("info", description="Lowest level to return.")
    limit: int = Field(int(_C.get("logging.get_logs_default_limit")), ge=1,
                       le=int(_C.get("logging.get_logs_max_limit")), description="Most entries to return (the newest).")
    component: Component = Field("all", description="Only entries from this component.")


async def get_system_logs(ctx: ToolContext, args: LogsArgs) -> dict[str, Any]:
    ring = ctx.services.log_ring
    entries = ring.query(args.level, args.limit, args.component)
    return {
        "entries": entries,
        "count": len(entries),
        "buffered": len(ring),
        "filters": {"level": args.level, "limit": args.limit, "component": args.component},
    }


_GOAL = Field(min_length=10, max_length=1000, description="What you are trying to achieve (10-1000 characters).")


class ReflectArgs(Args):
    goal: Annotated[str, FREE_TEXT] = _GOAL


async def reflect_on_memory(ctx: ToolContext, args: ReflectArgs) -> dict[str, Any]:
    s, registry = ctx.services, ctx.registry
    teleology = getattr(s.memory, "teleology", None)
    north_star = None
    if teleology is not None and hasattr(teleology, "star_view"):
        north_star = teleology.star_view() is not None
    return await Reflection(s.storage, s.perception, s.memory, s.cognition, s.constitution,
                            partial(s.thresholds.value, "theta_dup")).reflect(
        args.goal, set(registry.specs), registry.index.search(args.goal, 8),
        lambda name: registry.specs[name].summary, north_star)


class PlanArgs(Args):
    goal: Annotated[str, FREE_TEXT] = _GOAL
    focus_spaces: list[Literal["semantic", "causal", "code", "temporal", "entity"]] = Field(
        [], max_length=5, description="Preferred spaces; the plan aims its queries at these first.")


async def generate_search_plan(ctx: ToolContext, args: PlanArgs) -> dict[str, Any]:
    s = ctx.services
    return await Reflection(s.storage, s.perception, s.memory, s.cognition, s.constitution,
                            partial(s.thresholds.value, "theta_dup")).plan(
        args.goal, list(dict.fromkeys(args.focus_spaces)))


class CritiqueArgs(Args):
    context_window: int = Field(10, ge=1, le=50, description="How many of the most recent memories to critique.")
    check_types: list[Literal["conflicts", "duplicates", "outdated", "low_confidence"]] = Field(
        ["conflicts", "duplicates"], min_length=1, max_length=4, description="Which checks to run.")


async def critique_context(ctx: ToolContext, args: CritiqueArgs) -> dict[str, Any]:
    s = ctx.services  # θ_dup per domain from ATC, as get_memetic_status reads it
    return await Critique(s.storage, s.constitution, partial(s.thresholds.value, "theta_dup")).critique(
        args.context_window, list(dict.fromkeys(args.check_types)))


TOOLS = (
    ToolSpec(
        "get_system_instructions",
        "metacog",
        "Get the mental model of this memory server (~400 tokens): what a memory is, how to search and curate, "
        "and how to act on the cognitive pulse. Keep it in your context.",
        InstructionsArgs,
        get_system_instructions,
        keywords=("instructions", "guide", "how to use", "mental model", "onboarding"),
    ),
    ToolSpec(
        "get_system_logs",
        "metacog",
        "Get recent server log entries, newest last, filtered by level and component; for debugging questions "
        "like \"why don't you remember X?\" or an internal error's id.",
        LogsArgs,
        get_system_logs,
        keywords=("logs", "debug", "errors", "diagnose", "trace"),
    ),
    ToolSpec(
        "reflect_on_memory",
        "metacog",
        "An ordered tool sequence for a goal, each step with why: from the goal's words, the live state (pulse, "
        "store size, curation waiting, north star) and the tools' descriptions.",
        ReflectArgs,
        reflect_on_memory,
        keywords=("plan", "reflect", "which tool", "strategy", "next step", "how to", "workflow"),
    ),
    ToolSpec(
        "generate_search_plan",
        "metacog",
        "Three queries for a goal, each aimed at a different space (semantic, causal, code, temporal, entity), with "
        "the fusion weights search_graph would use and what each finds now.",
        PlanArgs,
        generate_search_plan,
        keywords=("search plan", "queries", "multi-space", "query rewrite", "strategy"),
    ),
    ToolSpec(
        "critique_context",
        "metacog",
        "Check the most recent memories for conflicts (opposite claims on one topic), duplicates, outdated ones "
        "and low confidence; each finding with the tool call that resolves it.",
        CritiqueArgs,
        critique_context,
        keywords=("critique", "conflict", "contradiction", "fact-check", "duplicates", "outdated", "review"),
    ),
)
