"""Argument validation shared by every tool: the field types that carry a rule of their own (memory ids in
either UUID spelling, text that must not be blank), and turning a pydantic ValidationError into an
InvalidParams error a model can act on: the field, what was wrong, and the allowed values or bounds from the
tool's JSON Schema. (Strict JSON typing of every argument lives in spec.Args.)"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import AfterValidator, Field, ValidationError, WithJsonSchema
from pydantic_core import PydanticCustomError

from contextgraph.constitution import constitution
from contextgraph.errors import InvalidParams
from contextgraph.security.pii import shown_identifier

_V = constitution()["validation"]

# Memories are keyed by 32 lowercase hex characters (uuid4().hex); clients copy ids back in either UUID
# spelling, so every memory-id argument accepts both and hands the handler the stored form.
UUID_PATTERN = r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$"


def canonical_memory_id(value: str) -> str:
    return value.replace("-", "").lower()


# Validated against the full pattern; listed without it (90 characters in every id field of every tools/list,
# a budget test holds them to it): a wrong id is refused with a message that says what an id looks like.
MemoryId = Annotated[str, Field(min_length=32, max_length=36, pattern=UUID_PATTERN),
                     AfterValidator(canonical_memory_id),
                     WithJsonSchema({"type": "string", "minLength": 32, "maxLength": 36,
                                     "description": "Memory id: 32 hex characters (UUID hyphens allowed)."})]


# One label, one related concept: the list's own bound (how many) is on the field that holds them.
Tag = Annotated[str, Field(max_length=_V["tags"]["max_length"])]
Concept = Annotated[str, Field(max_length=_V["related_concepts"]["max_length"])]
MAX_TAGS = int(_V["tags"]["max_items"])
MAX_CONCEPTS = int(_V["related_concepts"]["max_items"])
_NAME_MAX = int(_V["tool_name"]["max_length"])  # an unknown argument name is shown at most this long


def _not_blank(value: Any) -> Any:
    if isinstance(value, str) and value and not value.strip():
        raise PydanticCustomError("blank_text", "must contain some text, not only whitespace")
    return value


# Marker for Annotated text fields whose meaning is their words (content, queries, names): whitespace alone is
# refused, where min_length would count it. An empty string is left to min_length.
NOT_BLANK = AfterValidator(_not_blank)

# JSON Schema keyword → the name used in error.data (and in the message).
_BOUNDS = (("minimum", "min"), ("exclusiveMinimum", "min_exclusive"), ("maximum", "max"),
           ("exclusiveMaximum", "max_exclusive"), ("minLength", "min_length"), ("maxLength", "max_length"),
           ("minItems", "min_items"), ("maxItems", "max_items"))


def _resolved(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    prop = dict(node)
    # Optional fields are anyOf [X, null]; enums and nested models sit behind a $ref into $defs.
    for option in prop.pop("anyOf", []):
        if option.get("type") != "null":
            prop.update(option)
    ref = prop.pop("$ref", None)
    if ref:
        prop.update(schema.get("$defs", {}).get(ref.rsplit("/", 1)[-1], {}))
    return prop


def _property(schema: dict[str, Any], loc: tuple[Any, ...]) -> dict[str, Any]:
    """The schema of what `loc` points at: a field, an item of a list field (an index), a nested model's
    field; so a too-long tag reports the tag's bound, not the list's."""
    prop: dict[str, Any] = {}
    node = schema
    for part in loc:
        if isinstance(part, int):
            if "items" not in node:
                break
            prop = _resolved(schema, node["items"])
        else:
            if part not in node.get("properties", {}):
                break
            prop = _resolved(schema, node["properties"][part])
        node = prop
    return prop


def _constraints(prop: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    if "enum" in prop:
        found["allowed"] = prop["enum"]
    for key, name in _BOUNDS:
        if key in prop:
            found[name] = prop[key]
    return found


def _phrase(error: Mapping[str, Any], schema: dict[str, Any], allowed_fields: list[str]) -> str:
    loc = ".".join(str(p) for p in error["loc"])
    kind = error["type"]
    if kind == "extra_forbidden":
        return f"unknown argument '{loc}' (allowed arguments: {', '.join(allowed_fields) or 'none'})"
    if kind == "missing":
        return f"missing required argument '{loc}'"
    phrase = f"argument '{loc}': {error['msg']}" if loc else f"arguments: {error['msg']}"
    limits = _constraints(_property(schema, tuple(error["loc"])))
    if "allowed" in limits:
        phrase += " (allowed values: " + ", ".join(repr(v) for v in limits.pop("allowed")) + ")"
    if limits:
        phrase += " (" + ", ".join(f"{k} {v}" for k, v in limits.items()) + ")"
    return phrase


def _shown_loc(error: Any, known: set[str]) -> Any:
    """The error with an argument name the tool does not have redacted and cut short in its path: it is the
    client's text, and the message, the error data and the log all show it."""
    loc = tuple(p if not isinstance(p, str) or p in known else shown_identifier(p, _NAME_MAX) for p in error["loc"])
    return {**error, "loc": loc}


def _list_lengths(schema: dict[str, Any], arguments: Any) -> list[dict[str, Any]]:
    """Errors for list arguments with too few or too many items. Pydantic checks a list's length only once every
    item has validated, so `merge_concepts` with one malformed id was told about the id's 32 characters and not
    that it needs at least 2 ids: the rule on the list comes first, whatever its items are."""
    if not isinstance(arguments, Mapping):
        return []
    found: list[dict[str, Any]] = []
    for name, node in schema.get("properties", {}).items():
        value = arguments.get(name)
        prop = _resolved(schema, node)
        if not isinstance(value, list) or prop.get("type") != "array":
            continue
        low, high = prop.get("minItems"), prop.get("maxItems")
        if low is not None and len(value) < low:
            found.append({"loc": (name,), "type": "too_short",
                          "msg": f"List should have at least {low} item{'s' if low != 1 else ''}, not {len(value)}"})
        elif high is not None and len(value) > high:
            found.append({"loc": (name,), "type": "too_long",
                          "msg": f"List should have at most {high} item{'s' if high != 1 else ''}, not {len(value)}"})
    return found


def invalid_params(tool: str, exc: ValidationError, schema: dict[str, Any],
                   arguments: Mapping[str, Any] | None = None) -> InvalidParams:
    known = {name for node in (schema, *schema.get("$defs", {}).values()) for name in node.get("properties", {})}
    errors = [_shown_loc(e, known) for e in exc.errors(include_url=False, include_input=False, include_context=False)]
    lengths = [e for e in _list_lengths(schema, arguments)
               if not any(tuple(seen["loc"]) == e["loc"] and seen["type"] == e["type"] for seen in errors)]
    errors = [*lengths, *errors]
    allowed_fields = sorted(schema.get("properties", {}))
    first = errors[0]
    field = str(first["loc"][0]) if first["loc"] else None  # the argument to fix; errors[] hold the full path
    data: dict[str, Any] = {
        "field": field,
        **_constraints(_property(schema, tuple(first["loc"]))),
        "errors": [{"field": ".".join(str(p) for p in e["loc"]), "type": e["type"], "message": e["msg"]}
                   for e in errors],
    }
    if first["type"] == "extra_forbidden":
        data["allowed_arguments"] = allowed_fields
    message = f"Invalid arguments for {tool}: " + "; ".join(_phrase(e, schema, allowed_fields) for e in errors) + "."
    return InvalidParams(message, **data)
