"""ToolSpec: one row of the registry. A category module exports `TOOLS: tuple[ToolSpec, ...]`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from contextgraph.tools.context import ToolContext


class Args(BaseModel):
    """Base of every tool's argument model: unknown arguments are refused by name, so a model that misspells
    one learns it at once instead of having it ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)


Handler = Callable[["ToolContext", Any], Awaitable[dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    category: str
    description: str
    args: type[Args]
    handler: Handler
    keywords: tuple[str, ...] = ()
    output_schema: dict[str, Any] | None = None

    @property
    def summary(self) -> str:
        """The description's first sentence, for one-line listings."""
        first = self.description.strip().split("\n", 1)[0]
        return first.split(". ", 1)[0].rstrip(".") + "."
