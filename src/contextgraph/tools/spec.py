"""ToolSpec: one row of the registry. A category module exports `TOOLS: tuple[ToolSpec, ...]`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, model_validator


class Args(BaseModel):
    """Base of every tool's argument model: unknown arguments are refused by name, so a model that misspells
    one learns it at once instead of having it ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # Second spellings the seeds use (SPEC §5: topK/top_k, minSimilarity/min_similarity): alternate → field.
    # Both are accepted and both appear in the JSON Schema; giving both with different values is an error.
    spellings: ClassVar[dict[str, str]] = {}

    @model_validator(mode="before")
    @classmethod
    def _accept_second_spellings(cls, data: Any) -> Any:
        if not cls.spellings or not isinstance(data, dict):
            return data
        data = dict(data)
        for alternate, field in cls.spellings.items():
            if alternate in data:
                value = data.pop(alternate)
                if field in data and data[field] != value:
                    raise ValueError(f"'{alternate}' and '{field}' are the same argument; give one of them")
                data[field] = value
        return data

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        schema = super().model_json_schema(*args, **kwargs)
        properties = schema.get("properties", {})
        for alternate, field in cls.spellings.items():
            if field in properties:
                properties[alternate] = {**properties[field], "description": f"Same as {field}."}
        return schema


# (ToolContext, validated Args) → payload. Typed loosely here: the registry is data and must not import the
# context its handlers receive (that would close an import cycle); each handler is typed in its own module.
Handler = Callable[[Any, Any], Awaitable[dict[str, Any]]]


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
