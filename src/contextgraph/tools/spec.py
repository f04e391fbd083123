"""ToolSpec: one row of the registry. A category module exports `TOOLS: tuple[ToolSpec, ...]`."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError


class Args(BaseModel):
    """Base of every tool's argument model: unknown arguments are refused by name, so a model that misspells
    one learns it at once instead of having it ignored; and every argument must have its JSON type
    (model_validate below), so "5" is refused where an integer is due instead of silently read as 5."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # Second spellings older clients use (docs/tools.md: topK/top_k, minSimilarity/min_similarity): alternate → field.
    # Both are accepted and both appear in the JSON Schema; giving both with different values is an error.
    spellings: ClassVar[dict[str, str]] = {}

    @classmethod
    def model_validate(cls, obj: Any, *, strict: bool | None = None, **kwargs: Any) -> Any:
        """Arguments arrive as JSON, and are held to JSON's types: "5" or true is not an integer, "yes" is not a
        boolean, 5 is a number (so valid for a float field), an array is valid for a tuple field, an ISO string
        for a datetime. That is pydantic's strict mode applied to JSON input (strict mode on Python objects
        would refuse lists for tuples and strings for datetimes), so a dict of arguments is validated as the
        JSON it came from. `strict=False` asks for the lax rules explicitly.

        (No `mode="before"` validators on argument models, hence the second spellings are resolved here: pydantic
        hands a before-validator's result to the field validators as Python objects, which would undo the JSON
        rules.)"""
        if strict is not None or not isinstance(obj, dict):
            return super().model_validate(obj, strict=strict, **kwargs)
        obj = cls._canonical_spellings(obj)
        try:
            raw = json.dumps(obj)
        except (TypeError, ValueError):  # holds Python objects (an in-process caller): strict Python rules
            return super().model_validate(obj, strict=True, **kwargs)
        json_kwargs = {k: v for k, v in kwargs.items() if k in ("extra", "context", "by_alias", "by_name")}
        return cls.model_validate_json(raw, strict=True, **json_kwargs)

    @classmethod
    def _canonical_spellings(cls, data: dict[str, Any]) -> dict[str, Any]:
        if not cls.spellings:
            return data
        data = dict(data)
        for alternate, field in cls.spellings.items():
            if alternate in data:
                value = data.pop(alternate)
                if field in data and data[field] != value:
                    duplicate = PydanticCustomError(
                        "duplicate_argument", "'{alternate}' and '{field}' are the same argument; give one of them",
                        {"alternate": alternate, "field": field})
                    raise ValidationError.from_exception_data(
                        cls.__name__, [InitErrorDetails(type=duplicate, loc=(alternate,), input=value)])
                data[field] = value
        return data

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        schema = compact_schema(super().model_json_schema(*args, **kwargs))
        properties = schema.get("properties", {})
        required = schema.get("required", [])
        for alternate, field in cls.spellings.items():
            if field in properties:
                properties[alternate] = {**properties[field], "description": f"Same as {field}."}
            if field in required:  # either spelling will do; the model still refuses a call with neither
                required.remove(field)  # (no anyOf of `required`s: host LLM APIs refuse top-level anyOf)
        if "required" in schema and not required:
            del schema["required"]
        return schema


def compact_schema(node: Any) -> Any:
    """What a model needs of a pydantic JSON Schema, at a fraction of its size (every tools/list goes into every
    host request): no generated `title`s (the property name says it), and an optional argument is
    its type with its default rather than `anyOf [type, null]` + `default: null` (leaving it out is how a model
    says "none"; an explicit null is still accepted)."""
    if isinstance(node, list):
        return [compact_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {k: compact_schema(v) for k, v in node.items() if k != "title" or not isinstance(v, str)}
    options = out.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options and "default" in out:
        (kept,) = [o for o in options if o != {"type": "null"}]
        if "$ref" not in kept:  # a $ref beside siblings is fine in 2020-12, but keep refs as pydantic made them
            del out["anyOf"]
            if out["default"] is None:
                del out["default"]
            out = {**kept, **out}
    return out


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
