"""Admin tools: temporary_scratchpad and reload_manifest (docs/decisions.md#d20; services.user_manifest)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from contextgraph.constitution import constitution
from contextgraph.errors import InvalidParams
from contextgraph.security.free_text import FREE_TEXT
from contextgraph.services.diagnostics.user_manifest import ManifestService
from contextgraph.tools.context import ToolContext
from contextgraph.tools.spec import Args, ToolSpec

_LIMITS = constitution()["scratchpad"]


class ScratchpadArgs(Args):
    action: Literal["write", "read", "clear"] = Field(description="write a key, read one key or all, clear one or all.")
    key: Annotated[str | None, FREE_TEXT] = Field(None, min_length=1, max_length=_LIMITS["max_key_chars"],
                                                  description="The note's key; required for write.")
    value: Annotated[str | None, FREE_TEXT] = Field(None, max_length=_LIMITS["max_value_chars"],
                                                    description="The note's text; required for write.")


async def temporary_scratchpad(ctx: ToolContext, args: ScratchpadArgs) -> dict[str, Any]:
    pads = ctx.services.scratchpads
    if args.action == "write":
        if args.key is None or args.value is None:
            missing = "key" if args.key is None else "value"
            raise InvalidParams(f"temporary_scratchpad write needs both key and value; '{missing}' is missing.",
                                field=missing)
        size = pads.write(ctx.session, args.key, args.value)
        return {"action": "write", "key": args.key, **size, "persisted": False}
    if args.value is not None:
        raise InvalidParams(f"'value' is only used with action 'write', not '{args.action}'.", field="value")
    if args.action == "read":
        entries = pads.read(ctx.session, args.key)
        return {"action": "read", "entries": entries, "count": len(entries)}
    return {"action": "clear", "removed": pads.clear(ctx.session, args.key)}


class ReloadManifestArgs(Args):
    path: str | None = Field(None, min_length=1, max_length=4096,
                             description="The manifest file; default manifest.md in the data directory "
                                         "(~/.context-graph/manifest.md).")


async def reload_manifest(ctx: ToolContext, args: ReloadManifestArgs) -> dict[str, Any]:
    s = ctx.services
    return await ManifestService(s.storage, s.memory, s.constitution).reload(args.path)


TOOLS = (
    ToolSpec(
        "temporary_scratchpad",
        "admin",
        "Working notes for this session only: write a key, read one key or all, clear one or all. Never "
        "persisted and never added to the graph; bounded in size.",
        ScratchpadArgs,
        temporary_scratchpad,
        keywords=("notes", "scratch", "temporary", "working memory", "session"),
    ),
    ToolSpec(
        "reload_manifest",
        "admin",
        "Re-read the user manifest (standing instructions, domains, preferences) and the runtime settings after an "
        "edit. Validated first: a bad file is refused naming its line and nothing changes; reports what changed.",
        ReloadManifestArgs,
        reload_manifest,
        keywords=("manifest", "reload", "settings", "configuration", "preferences", "instructions"),
    ),
)
