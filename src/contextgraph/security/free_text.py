"""Which tool arguments are free text, and their redaction in one place: right after validation, before any
handler sees them (the dispatcher calls `redact_arguments`), so nothing downstream — store, lineage, tombstone,
scratchpad, echo, log — can hold a secret a tool argument carried.

A field is free text when its type is `Annotated[<type>, FREE_TEXT]` (or REDACTED_ON_STORE, below): a string,
a list of strings, or None. Fields of a nested argument model (annotate_node's `annotations`) are visited
whether or not the nesting field is marked. Identifiers the store checks by pattern (memory ids, hashes,
times) are not free text. An identifier the client names freely (a session id: stored on every memory and
an index key) is marked IDENTIFIER: it loses every kind, emails and phones included, whatever the settings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from contextgraph.security.pii import redact, redact_identifier


@dataclass(frozen=True, slots=True)
class FreeText:
    """Marker for Annotated field types. `redacted_on_store`: the use-case redacts this field itself and keeps
    the kinds found on the stored memory (MemoryService._store_one: store_memory and inject_context content and
    rationale → MemoryRecord.redactions). The dispatcher leaves such a field to it: redacting it first would
    leave the service nothing to find, and the stored record would lose its kinds."""

    redacted_on_store: bool = False
    identifier: bool = False


FREE_TEXT = FreeText()
REDACTED_ON_STORE = FreeText(redacted_on_store=True)
IDENTIFIER = FreeText(identifier=True)


def marker(model: type[BaseModel], field: str) -> FreeText | None:
    """The field's FreeText marker, if it has one."""
    for item in model.model_fields[field].metadata:
        if isinstance(item, FreeText):
            return item
    return None


def free_text_fields(model: type[BaseModel], prefix: str = "") -> dict[str, FreeText]:
    """Every marked field of `model` and of the argument models nested in it, by dotted path."""
    found: dict[str, FreeText] = {}
    for name, info in model.model_fields.items():
        mark = marker(model, name)
        if mark is not None:
            found[prefix + name] = mark
        for nested in _nested_models(info.annotation):
            found.update(free_text_fields(nested, f"{prefix}{name}."))
    return found


def _nested_models(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in getattr(annotation, "__args__", ()) for m in _nested_models(arg)]


@dataclass(frozen=True, slots=True)
class Redaction:
    field: str  # dotted path, e.g. "annotations.notes"
    kind: str


def redact_arguments(args: BaseModel, prefix: str = "") -> tuple[BaseModel, list[Redaction]]:
    """`args` with every FREE_TEXT field redacted (a copy; argument models are frozen), and what was found,
    REDACTED_ON_STORE fields included. Not validated again: a placeholder may be a few characters longer than
    the secret it replaced."""
    found: list[Redaction] = []
    updates: dict[str, Any] = {}
    for name in type(args).model_fields:
        value = getattr(args, name)
        path = prefix + name
        if isinstance(value, BaseModel):
            new, nested = redact_arguments(value, path + ".")
            found += nested
        else:
            mark = marker(type(args), name)
            if mark is None:
                continue
            new = _redact_value(value, path, found, redact_identifier if mark.identifier else redact)
            if mark.redacted_on_store:
                new = value  # found, so the answer says where; replaced (and recorded) by the use-case
        if new is not value:
            updates[name] = new
    return (args.model_copy(update=updates) if updates else args), found


def _redact_value(value: Any, path: str, found: list[Redaction],
                  rules: Callable[[str], tuple[str, list[str]]]) -> Any:
    """A string, or a list / tuple of strings (or None), redacted; the same object when nothing changed."""
    if isinstance(value, str):
        text, kinds = rules(value)
        found += [Redaction(path, kind) for kind in kinds]
        return text if kinds else value
    if isinstance(value, list | tuple):
        items = [_redact_value(item, path, found, rules) for item in value]
        return type(value)(items) if any(a is not b for a, b in zip(items, value)) else value
    return value


def report_redactions(payload: dict[str, Any], redactions: list[Redaction]) -> dict[str, Any]:
    """The tool's answer with what the dispatcher redacted added: `redacted` (the kinds, merged with any the
    service reported itself, as store_memory does) and `redacted_fields` (where, so a caller knows which of its
    arguments was stored changed). Unchanged when nothing was redacted."""
    if not redactions:
        return payload
    out = dict(payload)
    out["redacted"] = sorted(set(out.get("redacted") or ()) | {r.kind for r in redactions})
    out["redacted_fields"] = sorted(set(out.get("redacted_fields") or ()) | {r.field for r in redactions})
    return out
