"""Discovery tools (docs/tools.md): find, describe, load, list active, and call any registered tool."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

from contextgraph.constitution import constitution
from contextgraph.errors import InvalidParams, ToolNotFound
from contextgraph.security.free_text import FREE_TEXT, IDENTIFIER
from contextgraph.tools.context import ToolContext
from contextgraph.tools.spec import Args, ToolSpec
from contextgraph.tools.validation import NOT_BLANK

_C = constitution()
_FIND_MAX = int(_C.get("discovery.find_max_limit"))
_QUERY = _C.get("validation.query")
if TYPE_CHECKING:  # values from the constitution (see core.Modality)
    Category = str
else:
    Category = Literal[tuple(_C["categories"])]
_NAME_MAX = int(_C.get("validation.tool_name.max_length"))
ToolName = Field(min_length=1, max_length=_NAME_MAX, description="A tool name or one of its aliases.")


def _entry(ctx: ToolContext, name: str) -> dict[str, Any]:
    registry = ctx.registry
    spec = registry.specs[name]
    return {
        "name": name,
        "category": spec.category,
        "description": spec.summary,
        "aliases": list(registry.aliases_of[name]),
        "active": name in registry.active,
    }


def _not_found(ctx: ToolContext, name: str) -> ToolNotFound:
    registry = ctx.registry
    return ToolNotFound(registry.unknown_tool_message(name), tool=name, suggestions=registry.suggestions(name))


# -- tool_find ---------------------------------------------------------------------------------------------------
class FindArgs(Args):
    query: Annotated[str, FREE_TEXT, NOT_BLANK] = Field(min_length=_QUERY["min_length"],
                                                        max_length=_QUERY["max_length"],
                                                        description="Keywords describing what you want to do, "
                                                                    "e.g. 'forget a memory'.")
    limit: int = Field(int(_C.get("discovery.find_default_limit")), ge=1, le=_FIND_MAX,
                       description="Most results to return.")
    category: Category | None = Field(None, description="Only tools of this category.")


async def tool_find(ctx: ToolContext, args: FindArgs) -> dict[str, Any]:
    registry = ctx.registry
    keys = None if args.category is None else [n for n, s in registry.specs.items() if s.category == args.category]
    hits = registry.index.search(args.query, args.limit, keys)
    results = [{**_entry(ctx, name), "score": round(score, 4)} for name, score in hits]
    payload: dict[str, Any] = {"query": args.query, "results": results, "count": len(results),
                               "total_tools": len(registry.specs)}
    if not results:
        payload["message"] = "No tool matches those words; try broader keywords, or tool_active to see what is loaded."
    return payload


# -- tool_describe -----------------------------------------------------------------------------------------------
class DescribeArgs(Args):
    name: Annotated[str, IDENTIFIER] = ToolName


async def tool_describe(ctx: ToolContext, args: DescribeArgs) -> dict[str, Any]:
    registry = ctx.registry
    canonical = registry.resolve(args.name)
    if canonical is None:
        raise _not_found(ctx, args.name)
    spec = registry.specs[canonical]
    payload = {
        **_entry(ctx, canonical),
        "description": registry.listed_description(spec),
        "input_schema": registry.input_schemas[canonical],
        "keywords": list(spec.keywords),
    }
    if spec.output_schema is not None:
        payload["output_schema"] = spec.output_schema
    if canonical != args.name:
        payload["resolved_from_alias"] = args.name
    return payload


# -- tool_load ---------------------------------------------------------------------------------------------------
class LoadArgs(Args):
    names: Annotated[list[Annotated[str, Field(max_length=_NAME_MAX)]], IDENTIFIER] = Field(
        min_length=1, max_length=100, description="Tool names (or aliases) to activate.")


async def tool_load(ctx: ToolContext, args: LoadArgs) -> dict[str, Any]:
    registry = ctx.registry
    resolved = {name: registry.resolve(name) for name in args.names}
    unknown = [name for name, canonical in resolved.items() if canonical is None]
    if unknown:  # all-or-nothing: nothing is activated when any name is unknown
        suggestions = {name: registry.suggestions(name) for name in unknown}
        raise ToolNotFound(
            f"Unknown tool(s): {', '.join(unknown)}. Nothing was loaded. Call tool_find to discover tool names.",
            unknown=unknown,
            suggestions=suggestions,
        )
    loaded = registry.activate(name for name in resolved.values() if name is not None)
    notified = await ctx.notify_tools_changed() if loaded else False
    return {
        "loaded": loaded,
        "already_active": [c for c in dict.fromkeys(resolved.values()) if c not in loaded],
        "active_count": len(registry.active),
        "notified": notified,
        "hint": "If your client does not refresh its tool list, run these tools through tool_call.",
    }


# -- tool_active -------------------------------------------------------------------------------------------------
class ActiveArgs(Args):
    pass


async def tool_active(ctx: ToolContext, args: ActiveArgs) -> dict[str, Any]:
    registry = ctx.registry
    tools = [{"name": s.name, "description": s.summary} for s in registry.listed()]
    payload: dict[str, Any] = {"tools": tools, "count": len(tools)}
    if not tools:
        payload["message"] = "No tools are active. Use tool_find to discover tools and tool_load to activate them."
    return payload


# -- tool_call ---------------------------------------------------------------------------------------------------
class CallArgs(Args):
    name: Annotated[str, IDENTIFIER] = ToolName
    arguments: dict[str, Any] = Field(default_factory=dict, description="The tool's arguments.")


async def tool_call(ctx: ToolContext, args: CallArgs) -> dict[str, Any]:
    if ctx.registry.resolve(args.name) == "tool_call":
        raise InvalidParams("tool_call cannot run tool_call; name the tool to run directly.", field="name")
    canonical, payload = await ctx.call(args.name, args.arguments)
    return {"tool": canonical, "result": payload}


TOOLS = (
    ToolSpec(
        "tool_find",
        "discovery",
        "Find tools by what you want to do. Ranks every registered tool by TF-IDF relevance of your keywords to "
        "its name, description, category and keywords, and marks which tools are active (listed) now.",
        FindArgs,
        tool_find,
        keywords=("search", "discover", "which tool", "help", "capabilities"),
    ),
    ToolSpec(
        "tool_describe",
        "discovery",
        "Describe one tool: its description, full input schema, category, keywords, aliases and whether it is "
        "active. Accepts an alias and says which tool it resolves to.",
        DescribeArgs,
        tool_describe,
        keywords=("schema", "parameters", "arguments", "help", "usage"),
    ),
    ToolSpec(
        "tool_load",
        "discovery",
        "Activate tools so they appear in tools/list (sends notifications/tools/list_changed). Idempotent; "
        "all-or-nothing when any name is unknown. Clients that ignore the notification can use tool_call.",
        LoadArgs,
        tool_load,
        keywords=("activate", "enable", "register", "load"),
    ),
    ToolSpec(
        "tool_active",
        "discovery",
        "List the active tools (the ones tools/list returns) with their descriptions and a count.",
        ActiveArgs,
        tool_active,
        keywords=("list", "loaded", "enabled", "available"),
    ),
    ToolSpec(
        "tool_call",
        "discovery",
        "Run any registered tool by name, loaded or not, through the same validation, errors and pulse as a "
        "direct call. Use it for tools your client has not listed.",
        CallArgs,
        tool_call,
        keywords=("invoke", "run", "execute", "proxy"),
    ),
)
